#!/usr/bin/env python3
"""The training-like job (torch_runs.sh --job) as a plot: each call's time over the rounds, per run.

usage: plot_job.py WORK OUT.png
One panel per layout and call of the mix; each run's rank-0 CUDA-event times as the median of every
block of rounds, over the default run's median for that call (above 1: slower). Reads what
job_summary.py reads.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job_summary import label, read_run  # noqa: E402

BLOCK = 100


def main():
    if len(sys.argv) != 3 or not os.path.isdir(sys.argv[1]):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    work, out = sys.argv[1], sys.argv[2]
    layouts = sorted(d for d in os.listdir(work) if d.startswith("n") and d[1:].isdigit())
    panels = []
    for layout in layouts:
        folder = os.path.join(work, layout)
        runs = {r: read_run(os.path.join(folder, r)) for r in sorted(os.listdir(folder))}
        runs = {r: v for r, v in runs.items() if v and v["calls"]}
        if "default" in runs:
            panels += [(layout, key, runs) for key in sorted(runs["default"]["calls"])]
    if not panels:
        print("plot_job: no default run with timed calls under " + work, file=sys.stderr)
        return 2
    cols = len({key for _, key, _ in panels})
    rows = len(layouts)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False, sharey=True)
    for ax in axes.flat:
        ax.set_visible(False)
    keys = sorted({key for _, key, _ in panels})
    for layout, key, runs in panels:
        ax = axes[layouts.index(layout)][keys.index(key)]
        ax.set_visible(True)
        base = statistics.median(runs["default"]["calls"][key])
        for run, v in runs.items():
            times = v["calls"].get(key, [])
            xs = list(range(0, len(times), BLOCK))
            ys = [statistics.median(times[x:x + BLOCK]) / base for x in xs]
            ax.plot(xs, ys, label=run, linewidth=1)
        ax.axhline(1.0, color="grey", linewidth=0.5)
        ax.set_title(f"{layout[1:]} ranks, {key[0]} {label(key[1])}", fontsize=8)
        ax.set_xlabel("round", fontsize=7)
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("time / default's median", fontsize=7)
    axes[0][0].legend(fontsize=6)
    fig.suptitle("Training-like job, rank 0, CUDA-event time per call (median of 100 rounds)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"plot_job: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
