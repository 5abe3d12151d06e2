#!/usr/bin/env python3
"""The training-like job of scripts/gpu/torch_runs.sh --job: each run's whole job against the default run's.

usage: job_summary.py WORK   (the work folder: n<ranks>/<run>/rank0.jsonl and rank0.log)
Every figure is rank 0's and measured: the sum of its calls' CUDA-event times (what the job spent in
collectives, measuring included) and the job's wall time; per call of the mix, the median of the first
block of rounds (the job still testing) and of the last third of its rounds (what it settled on), each
over the default run's. The plugin's own closing lines (rank 0) say what it measured and decided.
"""
import json
import os
import statistics
import sys

KEEP = ("DynamICCL: online:", "DynamICCL: in-job verification:")


def read_run(folder):
    """Per (coll, bytes): times by round in order; the job's totals; the plugin's closing lines."""
    path = os.path.join(folder, "rank0.jsonl")
    if not os.path.exists(path):
        return None
    calls, job = {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if "times_us" in row:
                calls.setdefault((row["coll"], row["bytes"]), []).extend(row["times_us"])
            elif "job_wall_s" in row:
                job = row
    lines = []
    log = os.path.join(folder, "rank0.log")
    if os.path.exists(log):
        with open(log, encoding="utf-8", errors="replace") as f:
            lines = [l.split("NCCL INFO ", 1)[-1].strip() for l in f if any(k in l for k in KEEP)]
    return {"calls": calls, "job": job, "lines": lines}


def label(nbytes):
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return str(nbytes)


def summarize(work):
    out = ["# The training-like job: scripts/gpu/torch_runs.sh --job", "",
           "Measured: rank 0's CUDA-event time of every call, measuring included; ratios are a run's over the "
           "default run's (above 1: slower).", ""]
    for layout in sorted(d for d in os.listdir(work) if d.startswith("n") and d[1:].isdigit()):
        runs = {r: read_run(os.path.join(work, layout, r)) for r in sorted(os.listdir(os.path.join(work, layout)))}
        runs = {r: v for r, v in runs.items() if v and v["calls"]}
        base = runs.get("default")
        if not base:
            continue
        out += [f"## {layout[1:]} ranks", "",
                "| run | rounds | time in collectives (s) | over default | wall (s) | over default |",
                "|---|---:|---:|---:|---:|---:|"]
        base_total = sum(sum(t) for t in base["calls"].values()) / 1e6
        for run, v in runs.items():
            total = sum(sum(t) for t in v["calls"].values()) / 1e6
            wall = v["job"].get("job_wall_s", 0.0)
            base_wall = base["job"].get("job_wall_s", 0.0)
            out.append(f"| {run} | {v['job'].get('job_rounds', '?')} | {total:.2f} | {total / base_total:.3f} | "
                       f"{wall:.2f} | {wall / base_wall if base_wall else float('nan'):.3f} |")
        out += ["", "| call | default µs (median) | run | first 100 rounds / default | last third / default |",
                "|---|---:|---|---:|---:|"]
        for key, times in sorted(base["calls"].items()):
            med = statistics.median(times)
            for run, v in runs.items():
                if run == "default" or key not in v["calls"]:
                    continue
                t = v["calls"][key]
                first = statistics.median(t[:100]) / med
                last = statistics.median(t[len(t) * 2 // 3:]) / med
                out.append(f"| {key[0]} {label(key[1])} | {med:.1f} | {run} | {first:.2f} | {last:.2f} |")
        out.append("")
        for run, v in runs.items():
            for line in v["lines"]:
                out.append(f"- {run}: {line}")
        out.append("")
    return "\n".join(out)


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    print(summarize(sys.argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
