#!/usr/bin/env python3
"""The main job's figures in docs/DEMO.md come from the demo itself, so they cannot drift.

  demo_figures.py DYNAMICCL docs/DEMO.md          # runs `dynamiccl demo`, rewrites the block in the file
  demo_figures.py DYNAMICCL docs/DEMO.md --check  # exits 1 when a figure differs by more than a run's spread

The block sits between the lines `<!-- demo-figures:begin -->` and `<!-- demo-figures:end -->`.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

BEGIN, END = "<!-- demo-figures:begin -->", "<!-- demo-figures:end -->"


# Each figure with how far a run may move it: the leader's learner runs on its own thread, so the call
# at which a table lands, and with it a few exploring and measured calls, varies from run to run
# (two runs on one idle machine: 289 and 298 exploring calls; a loaded CI machine moves the shares most).
FIELDS = [  # name, format, tolerance (absolute, in the printed unit)
    ("ranks", "d", 0), ("keys", "d", 0), ("calls", "d", 0),
    ("vs_default", ".3f", 0.005), ("worst_vs_default", ".3f", 0.02),
    ("vs_best", ".3f", 0.005), ("worst_vs_best", ".3f", 0.03),
    ("within", "d", 2), ("keys2", "d", 0), ("established", "d", 2), ("keys3", "d", 0),
    ("explore_pct", ".2f", 0.05), ("measure_pct", ".3f", 0.05), ("profiled_pct", ".1f", 3.0),
    ("settled_pct", ".1f", 0.5), ("net", ".4f", 0.002),
    ("agree", "s", None), ("promoted", "d", 1), ("dropped", "d", 5), ("replayed", "d", 0), ("keys4", "d", 0),
    ("searching", "d", 0), ("keys5", "d", 0),
    ("profiled2_pct", ".1f", 0.5), ("net2", ".4f", 0.002), ("searching2", "d", 0),
]
TEMPLATE = (
    "The main job on the embedded data, written by `scripts/demo_figures.py` ({ranks} ranks, {keys} keys, "
    "{calls} calls per rank drawn from noise fitted to the real runs; judged on the measured medians; figures "
    "move a little from run to run, as the learner runs on its own thread): final epoch {vs_default}x NCCL's "
    "default in geomean (worst {worst_vs_default}x), {vs_best}x the measured best (worst {worst_vs_best}x), "
    "{within}/{keys2} keys within 1.01x of the best median and {established}/{keys3} of the best the runs "
    "establish; exploring calls {explore_pct}% of the replayed collective time, measuring {measure_pct}% (the "
    "leader profiled {profiled_pct}% of its calls, the last 10 epochs {settled_pct}%), the whole job net of "
    "both {net}x NCCL's default; every rank identical: {agree}; {promoted} candidate(s) promoted, {dropped} "
    "dropped; verified.json replayed alone runs the job's final configuration at {replayed}/{keys4} keys. "
    "Keys still searching at the job's end: {searching} of {keys5}. The next job on the same store "
    "(`dynamiccl demo` runs it as job 2): the leader profiled {profiled2_pct}% of its calls, net {net2}x NCCL's "
    "default, keys still searching at its end: {searching2}."
)


def figures(binary):
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run([binary, "demo", "--no-plots", "--out", out], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"dynamiccl demo failed ({run.returncode}):\n{run.stdout}{run.stderr}")
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
    t, job, ver, jobs = s["totals"], s["job"], s["verified"], s["jobs"]
    return {
        "searching": jobs[0]["keys_searching"], "keys5": jobs[0]["keys"],
        "profiled2_pct": 100 * jobs[1]["profiled_share"], "net2": jobs[1]["net_vs_default"],
        "searching2": jobs[1]["keys_searching"],
        "ranks": s["shape"]["nRanks"], "keys": t["keys"], "calls": job["calls_per_rank"],
        "vs_default": t["geomean_vs_default"], "worst_vs_default": t["worst_vs_default"],
        "vs_best": t["geomean_vs_best"], "worst_vs_best": t["worst_vs_best"],
        "within": t["within_1pct_of_best"], "keys2": t["keys"],
        "established": t["within_1pct_of_established_best"], "keys3": t["keys"],
        "explore_pct": 100 * job["explore_share"], "measure_pct": 100 * job["measure_share"],
        "profiled_pct": 100 * job["profiled_share"], "settled_pct": 100 * job["settled_profiled_share"],
        "net": t["net_vs_default"], "agree": "yes" if job["ranks_agree"] else "NO",
        "promoted": ver["promoted"], "dropped": ver["dropped"], "replayed": t["replay_agrees"], "keys4": t["keys"],
    }


def render(values):
    return TEMPLATE.format(**{name: format(values[name], fmt) for name, fmt, _ in FIELDS})


def parse(line):
    """The figures a line of the block states, or None when its words are not the template's."""
    pattern = re.escape(TEMPLATE)
    for name, fmt, _ in FIELDS:
        group = r"(?P<%s>yes|NO)" % name if fmt == "s" else r"(?P<%s>-?[0-9.]+)" % name
        pattern = pattern.replace(re.escape("{%s}" % name), group)
    m = re.fullmatch(pattern, line)
    if not m:
        return None
    return {name: (m[name] if fmt == "s" else float(m[name])) for name, fmt, _ in FIELDS}


def differences(stated, now):
    out = []
    for name, fmt, tol in FIELDS:
        a, b = stated[name], now[name]
        if (a != b) if tol is None else abs(float(a) - float(b)) > tol + 1e-9:
            out.append(f"{name}: stated {a}, demo now {format(b, fmt)} (allowed {tol})")
    return out


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--check"):
        sys.exit(__doc__)
    binary, doc, check = sys.argv[1], sys.argv[2], len(sys.argv) == 4
    with open(doc) as f:
        text = f.read().split("\n")
    try:
        a, b = text.index(BEGIN), text.index(END)
    except ValueError:
        sys.exit(f"{doc}: no {BEGIN} ... {END} block")
    now = figures(binary)
    if check:
        stated = parse("\n".join(text[a + 1 : b]))
        if stated is None:
            sys.exit(f"{doc}'s demo figures are not in the script's words; run scripts/demo_figures.py")
        diff = differences(stated, now)
        if diff:
            print(f"{doc}'s demo figures differ from what the demo prints now beyond a run's spread; "
                  "run scripts/demo_figures.py")
            print("\n".join(diff))
            sys.exit(1)
        return
    with open(doc, "w") as f:
        f.write("\n".join(text[: a + 1] + [render(now)] + text[b:]))


if __name__ == "__main__":
    main()
