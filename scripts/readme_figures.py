#!/usr/bin/env python3
"""The README's figures of the main job come from the demo itself, so they cannot drift.

  readme_figures.py DYNAMICCL README.md          # runs `dynamiccl demo`, rewrites the block in README.md
  readme_figures.py DYNAMICCL README.md --check  # exits 1 when the block differs from what the demo prints

The block sits between the lines `<!-- demo-figures:begin -->` and `<!-- demo-figures:end -->`.
"""
import json
import os
import subprocess
import sys
import tempfile

BEGIN, END = "<!-- demo-figures:begin -->", "<!-- demo-figures:end -->"


def figures(binary):
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run([binary, "demo", "--no-plots", "--out", out], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"dynamiccl demo failed ({run.returncode}):\n{run.stdout}{run.stderr}")
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
    t, job, ver = s["totals"], s["job"], s["verified"]
    lines = [
        f"The main job on the embedded data, written by `scripts/readme_figures.py` ({s['shape']['nRanks']} ranks, "
        f"{t['keys']} keys, {job['calls_per_rank']} calls per rank drawn from noise fitted to the real runs; judged "
        f"on the measured medians): final epoch {t['geomean_vs_default']:.3f}x NCCL's default in geomean "
        f"(worst {t['worst_vs_default']:.3f}x), {t['geomean_vs_best']:.3f}x the measured best (worst "
        f"{t['worst_vs_best']:.3f}x), {t['within_1pct_of_best']}/{t['keys']} keys within 1.01x of the best median and "
        f"{t['within_1pct_of_established_best']}/{t['keys']} of the best the runs establish; "
        f"exploring calls {100 * job['explore_share']:.2f}% of the replayed collective time, measuring "
        f"{100 * job['measure_share']:.3f}% (the leader profiled {100 * job['profiled_share']:.1f}% of its calls, "
        f"the last 10 epochs {100 * job['settled_profiled_share']:.1f}%), the whole job net of both "
        f"{t['net_vs_default']:.4f}x NCCL's default; every rank identical: "
        f"{'yes' if job['ranks_agree'] else 'NO'}; {ver['promoted']} candidate(s) promoted, {ver['dropped']} dropped; "
        f"verified.json replayed alone runs the job's final configuration at {t['replay_agrees']}/{t['keys']} keys."
    ]
    return lines


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--check"):
        sys.exit(__doc__)
    binary, readme, check = sys.argv[1], sys.argv[2], len(sys.argv) == 4
    with open(readme) as f:
        text = f.read().split("\n")
    try:
        a, b = text.index(BEGIN), text.index(END)
    except ValueError:
        sys.exit(f"{readme}: no {BEGIN} ... {END} block")
    new = text[: a + 1] + figures(binary) + text[b:]
    if check:
        if new != text:
            print("README.md's demo figures differ from what the demo prints now; run scripts/readme_figures.py")
            print("\n".join(text[a + 1 : b]))
            print("---")
            print("\n".join(new[a + 1 : a + 1 + (len(new) - len(text) + b - a - 1)]))
            sys.exit(1)
        return
    with open(readme, "w") as f:
        f.write("\n".join(new))


if __name__ == "__main__":
    main()
