#!/usr/bin/env python3
"""Tables from one scripts/gpu/torch_runs.sh work folder (n<ranks>/<run>/...), as markdown on stdout.

usage: torch_summary.py WORK                      (the tables)
       torch_summary.py --bands WORK [OTHER_WORK]  (ratios by size band; with OTHER_WORK the A/A spread)
Per layout and collective, one row per size: rank 0's median time per call under NCCL's default, each
other run as a ratio to it (>1: slower), what NCCL ran (its TUNING lines, rank 0), the profiler's
measured cost (forced_profiled against tuner_forced: same rules, same layout, profiling every call),
and what the profiler role received (rows per call, channels, GPU time against the CUDA-event time).
Times come from the client's CUDA events; nothing here assumes a GPU (tests feed it canned folders).
"""
import csv
import glob
import json
import os
import re
import statistics
import sys

from compare import human  # beside this file: sizes printed as run.sh's table prints them

RUNS = ["default", "tuner_empty", "tuner_forced", "forced_profiled", "readme"]
COLL_NAMES = {"AllReduce": "allreduce", "AllGather": "allgather", "ReduceScatter": "reducescatter"}
TUNING = re.compile(r"NCCL INFO (AllReduce|AllGather|ReduceScatter): (\d+) Bytes -> Algo (\w+) proto (\w+)"
                    r"(?: channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\})?")
PROFILER_LINE = re.compile(r"DynamICCL: profiler: .*")


def read_jsonl(path):
    header, rows, calls = None, {}, {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if "coll" in item:
                    rows[(item["coll"], item["bytes"])] = item["times_us"]
                    calls[(item["coll"], item["bytes"])] = len(item["times_us"]) + item.get("warmup", 0)
                elif header is None:
                    header = item
    except OSError:
        pass
    return header, rows, calls


def tuning_lines(log_path, world):
    """[(coll, total bytes, 'ALGO/PROTO', channels)] in the order NCCL printed them (rank 0)."""
    out = []
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = TUNING.search(line)
                if not m:
                    continue
                coll = COLL_NAMES[m.group(1)]
                nbytes = int(m.group(2)) * (world if coll != "allreduce" else 1)
                channels = int(m.group(6)) - int(m.group(5)) + 1 if m.group(5) else None
                out.append((coll, nbytes, f"{m.group(3).upper()}/{m.group(4).upper()}", channels))
    except OSError:
        pass
    return out


def picks(lines):
    """(coll, bytes) -> the configurations NCCL ran, most frequent first, with their share."""
    table = {}
    for coll, nbytes, cfg, _ in lines:
        table.setdefault((coll, nbytes), {}).setdefault(cfg, 0)
        table[(coll, nbytes)][cfg] += 1
    out = {}
    for key, counts in table.items():
        total = sum(counts.values())
        ranked = sorted(counts.items(), key=lambda kv: -kv[1])
        out[key] = ", ".join(cfg if c == total else f"{cfg} {c}/{total}" for cfg, c in ranked)
    return out


def observations(folder):
    """(coll, total bytes) -> rows of the observation CSVs of every rank: (rank, channels, gpu_us, timing)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "obs.rank*.csv"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            for row in csv.reader(f):
                if len(row) < 12:
                    continue
                try:
                    rank, coll, nbytes = int(row[1]), row[3].lower(), int(row[4])
                    channels, gpu_us, timing = int(row[7]), float(row[8]), row[10]
                except ValueError:
                    continue
                # The CSV's bytes are nccl-tests' size already (the total buffer), as the client's are.
                out.setdefault((coll, nbytes), []).append((rank, channels, gpu_us, timing))
    return out


def median(values):
    return statistics.median(values) if values else None


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def layout(work, n):
    base = os.path.join(work, f"n{n}")
    runs = {}
    for run in RUNS:
        header, rows, calls = read_jsonl(os.path.join(base, run, "rank0.jsonl"))
        runs[run] = {"header": header, "rows": rows, "calls": calls,
                     "tuning": picks(tuning_lines(os.path.join(base, run, "rank0.log"), n))}
    return runs


def status_lines(work):
    lines = []
    for path in sorted(glob.glob(os.path.join(work, "n*", "*", "status.txt"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines.append(f.read().strip())
    skipped = os.path.join(work, "skipped.txt")
    if os.path.exists(skipped):
        with open(skipped, encoding="utf-8") as f:
            lines += [line.strip() for line in f if line.strip()]
    return lines


def profiler_lines(work):
    out = []
    for path in sorted(glob.glob(os.path.join(work, "n*", "*", "rank*.log"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if "DynamICCL" in line and ("WARN" in line or PROFILER_LINE.search(line)):
                    rel = os.path.relpath(path, work)
                    out.append(f"{rel}: {line.strip()[-300:]}")
    return out


def summarize(work):
    layouts = sorted(int(d[1:]) for d in os.listdir(work) if re.fullmatch(r"n\d+", d))
    print("# DynamICCL with PyTorch on one GPU: scripts/gpu/torch_runs.sh\n")
    print("Every time is measured (CUDA events around real calls); a run with the profiler role on "
          "includes what its profiling cost.\n")
    mps = os.path.join(work, "mps.txt")
    if os.path.exists(mps):
        with open(mps, encoding="utf-8", errors="replace") as f:
            print(f"MPS: {f.read().strip()}\n")
    for n in layouts:
        runs = layout(work, n)
        header = next((r["header"] for r in runs.values() if r["header"]), None)
        if header:
            print(f"## {n} ranks: torch {header.get('torch')}, NCCL {header.get('nccl')}, {header.get('device')}\n")
        else:
            print(f"## {n} ranks: no run wrote results\n")
            continue
        default = runs["default"]["rows"]
        profiled = runs["forced_profiled"]["rows"]
        obs = observations(os.path.join(work, f"n{n}", "forced_profiled"))
        colls = sorted({c for r in runs.values() for c, _ in r["rows"]},
                       key=["allreduce", "allgather", "reducescatter"].index)
        for coll in colls:
            sizes = sorted({b for r in runs.values() for c, b in r["rows"] if c == coll})
            print(f"### {coll}, {n} ranks (median µs per call, rank 0; other runs as time / default)\n")
            print("| bytes | default µs | spread | NCCL ran (default) | tuner_empty | tuner_forced | ran (forced) "
                  "| profiled every call / forced | readme | obs rows per call | channels | GPU µs / event µs |")
            print("|---|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|")
            for size in sizes:
                key = (coll, size)
                med = {run: median(runs[run]["rows"].get(key, [])) for run in RUNS}
                d = default.get(key, [])
                spread = "-"
                if len(d) >= 4:
                    q = statistics.quantiles(d, n=4)
                    spread = f"{(q[2] - q[0]) / med['default'] * 100:.0f}%" if med["default"] else "-"
                rows = obs.get(key, [])
                calls = runs["forced_profiled"]["calls"].get(key, 0)
                per_call = f"{len(rows) / (calls * n):.2f}" if rows and calls else "-"
                channels = median([r[1] for r in rows])
                gpu = median([r[2] for r in rows if r[0] == 0 and r[3] == "gpu"])
                cost = "-"
                if med["forced_profiled"] and med["tuner_forced"]:
                    cost = f"{(med['forced_profiled'] / med['tuner_forced'] - 1) * 100:+.1f}%"
                print(f"| {human(size)} | {med['default']:.1f} | {spread} | {runs['default']['tuning'].get(key, '-')} "
                      f"| {ratio(med['tuner_empty'], med['default'])} | {ratio(med['tuner_forced'], med['default'])} "
                      f"| {runs['tuner_forced']['tuning'].get(key, '-')} | {cost} "
                      f"| {ratio(med['readme'], med['default'])} | {per_call} "
                      f"| {channels if channels is not None else '-'} "
                      f"| {ratio(gpu, med['forced_profiled'])} |" if med["default"] else
                      f"| {human(size)} | - | | | | | | | | | | |")
            print()
    print("## NCCL's TUNING lines at a few sizes (rank 0, first call of each)\n")
    for n in layouts:
        for run in ("default", "tuner_forced"):
            seen = set()
            for coll, nbytes, cfg, channels in tuning_lines(os.path.join(work, f"n{n}", run, "rank0.log"), n):
                if nbytes in (8, 1 << 20, 256 << 20) and (coll, nbytes) not in seen:
                    seen.add((coll, nbytes))
                    print(f"- n{n} {run}: {coll} {human(nbytes)} -> {cfg}, {channels or '?'} channels")
    print()
    print("## Launches\n")
    for line in status_lines(work):
        print(f"- {line}")
    lines = profiler_lines(work)
    if lines:
        print("\n## The plugin's warnings and profiler summaries\n")
        for line in lines[:60]:
            print(f"- `{line}`")


BANDS = (("up to 32K", 0, 32 << 10), ("128K-2M", 128 << 10, 2 << 20), ("8M and up", 8 << 20, 1 << 62))
# (label, work folder index, run, work folder index, run): the second over the first.
BAND_PAIRS = (("profiled every call / forced", 0, "tuner_forced", 0, "forced_profiled"),
              ("tuner_empty / default", 0, "default", 0, "tuner_empty"),
              ("readme / default", 0, "default", 0, "readme"),
              ("tuner_forced / default", 0, "default", 0, "tuner_forced"),
              ("A/A default, this run / the other", 1, "default", 0, "default"),
              ("A/A tuner_forced, this run / the other", 1, "tuner_forced", 0, "tuner_forced"))


def band_table(works):
    """Geometric mean of per-size median ratios by size band; against a second work folder, the same
    configuration in both (A/A): the spread any other ratio must clear."""
    def medians(work, n, run):
        _, rows, _ = read_jsonl(os.path.join(work, f"n{n}", run, "rank0.jsonl"))
        return {k: statistics.median(v) for k, v in rows.items() if v}
    layouts = sorted(int(d[1:]) for d in os.listdir(works[0]) if re.fullmatch(r"n\d+", d))
    for n in layouts:
        print(f"### {n} ranks, geometric mean of per-size ratios by size band (measured, CUDA events)\n")
        print("| comparison | " + " | ".join(b[0] for b in BANDS) + " |")
        print("|---|" + "---:|" * len(BANDS))
        for label, wa, ra, wb, rb in BAND_PAIRS:
            if max(wa, wb) >= len(works):
                continue
            a, b = medians(works[wa], n, ra), medians(works[wb], n, rb)
            cells = []
            for _, lo, hi in BANDS:
                r = [b[k] / a[k] for k in a if k in b and a[k] > 0 and b[k] > 0 and lo <= k[1] <= hi]
                cells.append(f"{(statistics.geometric_mean(r) - 1) * 100:+.1f}%" if r else "-")
            print(f"| {label} | " + " | ".join(cells) + " |")
        print()


def main():
    args = sys.argv[1:]
    bands = args[:1] == ["--bands"]
    works = args[1:] if bands else args
    if not works or len(works) > (2 if bands else 1) or not all(os.path.isdir(w) for w in works):
        print("usage: torch_summary.py WORK | --bands WORK [OTHER_WORK] (torch_runs.sh work folders)", file=sys.stderr)
        return 2
    if bands:
        band_table(works)
    else:
        summarize(works[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
