#!/usr/bin/env python3
"""The module rules of the source tree, checked on every file (run by ctest as include_rules).

A module is a folder with one public header X/X.h (plugin/ and its role folders form one module,
the .so; abi/, NCCL's interface, is a leaf like any other; offline/X and lab/X are modules each).
Outside tests/, bench/, fuzz/ and lab/tests/:
  1. another module is included only through its X/X.h;
  2. dependencies point one way: nothing includes plugin, offline or lab from outside (the lab may
     include the product's offline modules: it judges them); the module graph has no cycle; on the
     decision side learned -> learner -> policy -> features, never upward;
  3. no file includes itself through a chain of other headers (no include cycle);
  4. the plugin's rooms (tuner/, profiler/, online/, inputs/) include the plugin's root headers (the
     contracts they share: the decision log, the observation, the online record and the online room's
     init and finalize calls, the coordination backend), plugin/settings and themselves (and other
     modules), never another room, but for one arrow: online/ keys its records by what inputs/ agreed.
     The root and settings include no room.
Usage: include_rules.py SOURCE_DIR. Prints each violation; exits 1 if there is any."""
import os
import re
import sys

EXEMPT = ("tests", "bench", "fuzz")
EXEMPT_DIRS = ("lab/tests",)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROOMS = ("tuner", "profiler", "online", "inputs")
ROOM_ARROWS = {("online", "inputs")}  # the epoch records are sealed under the key the input check agreed
# The decision side in layers, lowest first: a module includes only those below it (the rule table,
# the in-job learner over it, the learned network that proposes to the learner).
LAYERS = ("features", "policy", "learner", "learned")


def module(path):
    parts = path.split("/")
    if parts[0] in ("offline", "lab") and len(parts) > 2:
        return parts[0] + "/" + parts[1]
    return parts[0]


def room(path):
    """The plugin room of a path; "" for the plugin's root and settings; None outside plugin/."""
    parts = path.split("/")
    if parts[0] != "plugin":
        return None
    return parts[1] if len(parts) > 2 and parts[1] in ROOMS else ""


def room_error(f, inc):
    r, to = room(f), room(inc)
    if r is None or not to or to == r or (r, to) in ROOM_ARROWS:
        return None
    if not r:
        return f"{f}: includes {inc}; the plugin's root and settings include no room"
    return f"{f}: includes {inc}; the {r} room includes the plugin's root contracts, settings and itself, not {to}"


def umbrella(mod):
    return mod + "/" + mod.split("/")[-1] + ".h"


def sources(root):
    for top in sorted(os.listdir(root)):
        if top.startswith(".") or top.startswith("build") or top in EXEMPT:
            continue
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for d, dirs, files in os.walk(base):
            dirs[:] = [x for x in dirs if not x.startswith(".")
                       and os.path.relpath(os.path.join(d, x), root) not in EXEMPT_DIRS]
            for f in files:
                if f.endswith((".h", ".cpp")):
                    yield os.path.relpath(os.path.join(d, f), root)


def find_cycle(graph):
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def check(root):
    errors, files, mods = [], {}, {}
    for f in sources(root):
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            files[f] = [i for i in INCLUDE.findall(fh.read())]
    for f, incs in files.items():
        m = module(f)
        for inc in incs:
            if "/" not in inc:
                continue
            e = room_error(f, inc)
            if e:
                errors.append(e)
            n = module(inc)
            if n == m:
                continue
            mods.setdefault(m, set()).add(n)
            if inc != umbrella(n):
                errors.append(f"{f}: includes {inc}; outside {n} include only {umbrella(n)}")
            if m in LAYERS and n in LAYERS and LAYERS.index(n) > LAYERS.index(m):
                errors.append(f"{f}: includes {inc}; {m} sits below {n} ({' -> '.join(reversed(LAYERS))})")
            if n == "plugin" or (n.startswith("lab") and not m.startswith("lab")) or (
                    n.startswith("offline") and not m.startswith(("offline", "lab"))):
                errors.append(f"{f}: module {m} depends on {n} (nothing depends on plugin, offline or lab)")
    cycle = find_cycle(mods)
    if cycle:
        errors.append("module cycle: " + " -> ".join(cycle))
    graph = {f: {i for i in incs if i in files} for f, incs in files.items()}
    cycle = find_cycle(graph)
    if cycle:
        errors.append("include cycle: " + " -> ".join(cycle))
    return errors, len(files)


if __name__ == "__main__":
    errs, n = check(sys.argv[1] if len(sys.argv) > 1 else ".")
    for e in errs:
        print(e)
    print(f"include_rules: {n} files, {len(errs)} violations")
    sys.exit(1 if errs else 0)
