#!/usr/bin/env python3
"""Every link in the README and docs/ resolves: a Markdown link [text](path) to a file beside the page, and
a page named in the text as docs/NAME.md (from the tree's root). Web addresses and #anchors alone are not
checked.

  doc_links.py ROOT        # exits 1 and names each link that does not resolve
"""
import pathlib
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
NAMED = re.compile(r"(?<![\w/.])docs/[\w./-]+\.(?:md|json)")


def broken(root):
    pages = [root / "README.md"] + sorted((root / "docs").rglob("*.md"))
    out = []
    for page in pages:
        for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
            for target in LINK.findall(line):
                path = target.split("#", 1)[0]
                if not path or re.match(r"[a-z]+:", path):
                    continue
                if not (page.parent / path).exists():
                    out.append(f"{page.relative_to(root)}:{n}: link to {target}")
            for named in NAMED.findall(line):
                if not (root / named).exists():
                    out.append(f"{page.relative_to(root)}:{n}: names {named}")
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = broken(pathlib.Path(sys.argv[1]))
    if out:
        print("\n".join(out))
        sys.exit(1)


if __name__ == "__main__":
    main()
