#!/usr/bin/env python3
"""Predicted vs measured time per dataset, one PNG per dataset (written by `dynamiccl-lab calibrate --plots DIR`).

Input: the CSV the command writes (dataset,group,collective,nranks,nnodes,bytes,config,forced,measured_us,predicted_us).
Each panel is one (group, collective, shape); dots are measurements, lines the simulator.
"""
import csv
import collections
import math
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(csv_path, out_dir):
    by_dataset = collections.defaultdict(lambda: collections.defaultdict(list))
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            key = (r["group"][:48], r["collective"], int(r["nranks"]), int(r["nnodes"]))
            by_dataset[r["dataset"]][key].append(r)
    for dataset, panels in by_dataset.items():
        keys = sorted(panels)[:16]  # at most 16 panels per figure keeps it readable
        cols = 4
        rows = math.ceil(len(keys) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
        for ax, key in zip(axes.flat, keys):
            series = collections.defaultdict(list)
            for r in panels[key]:
                series[r["config"] + (" forced" if r["forced"] == "1" else "")].append(
                    (int(r["bytes"]), float(r["measured_us"]), float(r["predicted_us"])))
            for i, (label, pts) in enumerate(sorted(series.items())):
                pts.sort()
                color = f"C{i % 10}"
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=8, color=color, label=label)
                ax.plot([p[0] for p in pts], [p[2] for p in pts], color=color, linewidth=1)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{key[1]} {key[2]}r/{key[3]}n\n{key[0]}", fontsize=7)
            ax.set_xlabel("bytes", fontsize=7)
            ax.set_ylabel("time (us)", fontsize=7)
            ax.tick_params(labelsize=6)
            ax.legend(fontsize=5)
        for ax in list(axes.flat)[len(keys):]:
            ax.axis("off")
        fig.suptitle(f"{dataset}: measured (dots) vs simulator (lines)")
        fig.tight_layout()
        path = os.path.join(out_dir, f"{dataset}.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        print(path)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_calibration.py predictions.csv out_dir")
    main(sys.argv[1], sys.argv[2])
