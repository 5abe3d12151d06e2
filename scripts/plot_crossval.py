#!/usr/bin/env python3
"""Plot of `dynamiccl-lab crossval`: chosen/default per size, one panel per judged shape, one series per mode.

  plot_crossval.py crossval.csv crossval.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(path, out):
    series = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            if row["judged"] != "1":
                continue
            key = (row["collective"], row["shape"])
            label = row["mode"] if row["mode"] != "leave-one-shape-out" else f"profile of {row['trained_on']}"
            series.setdefault(key, {}).setdefault(label, []).append(
                (int(row["bytes"]), float(row["chosen_vs_default"]), float(row["ratio_se"])))
    if not series:
        print("plot_crossval.py: no judged point in", path)
        return 1
    fig, axes = plt.subplots(len(series), 1, figsize=(8, 3.2 * len(series)), squeeze=False)
    for ax, (key, modes) in zip(axes[:, 0], sorted(series.items())):
        for label, pts in sorted(modes.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=label)
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="NCCL default")
        ax.set_xscale("log", base=2)
        ax.set_ylabel("chosen / default")
        ax.set_title(f"{key[0]} {key[1]}: below 1 is faster than NCCL's default")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[-1, 0].set_xlabel("bytes")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
