#!/usr/bin/env python3
"""Plots one scripts/gpu/torch_runs.sh work folder: per layout and collective, each run's median time per
call over size, and each run's time over NCCL's default (log scales; rank 0's CUDA-event times).

usage: plot_torch_runs.py WORK OUT.png
"""
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from torch_summary import RUNS, read_jsonl  # noqa: E402

COLLS = ["allreduce", "allgather", "reducescatter"]
COLOURS = dict(zip(RUNS, ["black", "tab:blue", "tab:orange", "tab:red", "tab:green"]))  # one per run, both rows


def main():
    if len(sys.argv) != 3 or not os.path.isdir(sys.argv[1]):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    work, out = sys.argv[1], sys.argv[2]
    layouts = sorted(int(d[1:]) for d in os.listdir(work) if re.fullmatch(r"n\d+", d))
    if not layouts:
        print(f"plot_torch_runs: no n<ranks> folder in {work}", file=sys.stderr)
        return 2
    fig, axes = plt.subplots(2 * len(layouts), len(COLLS), figsize=(5 * len(COLLS), 4.2 * len(layouts) * 2),
                             squeeze=False)
    for li, n in enumerate(layouts):
        medians = {}
        for run in RUNS:
            _, rows, _ = read_jsonl(os.path.join(work, f"n{n}", run, "rank0.jsonl"))
            medians[run] = {k: statistics.median(v) for k, v in rows.items() if v}
        for ci, coll in enumerate(COLLS):
            top, bottom = axes[2 * li][ci], axes[2 * li + 1][ci]
            for run in RUNS:
                points = sorted((b, t) for (c, b), t in medians[run].items() if c == coll)
                if not points:
                    continue
                top.plot([b for b, _ in points], [t for _, t in points], marker="o", ms=3, label=run, color=COLOURS[run])
                base = medians["default"]
                ratio = [(b, t / base[(coll, b)]) for b, t in points if base.get((coll, b))]
                if run != "default" and ratio:
                    bottom.plot([b for b, _ in ratio], [r for _, r in ratio], marker="o", ms=3, label=run, color=COLOURS[run])
            top.set(xscale="log", yscale="log", title=f"{coll}, {n} ranks", ylabel="µs per call (median)")
            bottom.set(xscale="log", yscale="log", xlabel="bytes", ylabel="time / NCCL's default")
            bottom.axhline(1.0, color="grey", lw=0.8)
            top.legend(fontsize=7)
            bottom.legend(fontsize=7)
    fig.suptitle("DynamICCL under PyTorch's NCCL on one GPU (scripts/gpu/torch_runs.sh)")
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(out, dpi=90)
    print(f"plot_torch_runs: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
