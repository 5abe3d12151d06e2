#!/usr/bin/env python3
"""Plots the learning curve CSV written by `dynamiccl train` (--curve) into a PNG."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: plot_learning_curve.py CURVE.csv OUT.png", file=sys.stderr)
        return 2
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    epochs = [int(r["epoch"]) for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, label in [("train_loss", "train"), ("validation_loss", "validation (held-out rows)"),
                       ("held_out_loss", "held-out machines")]:
        ax.plot(epochs, [float(r[key]) for r in rows], marker="o", label=label)
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel("weighted MSE of standardized log latency")
    ax.set_title("DynamICCL policy training")
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
