#!/usr/bin/env python3
"""Plots for the offline tuner.

  plot_tune.py curves curves.csv tuning_curve.png   # bench_tune --curves: regret vs measurements spent
  plot_tune.py map dynamiccl-tune.json decision_map.png  # dynamiccl tune -o: chosen config per size
"""
import csv
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_sizes import size_text  # noqa: E402


def plot_curves(path, out):
    series = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            series.setdefault(row["method"], []).append((float(row["grid_fraction"]), float(row["geomean_regret"])))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for method, pts in sorted(series.items()):
        pts.sort()
        ax.plot([100 * x for x, _ in pts], [y for _, y in pts], marker=".", label=method)
    ax.axhline(1.02, color="grey", linestyle="--", linewidth=1, label="within 2% of grid best")
    ax.axvline(5, color="grey", linestyle=":", linewidth=1, label="5% of grid cost")
    ax.set_xscale("log")
    ax.set_xlabel("timed iterations spent (% of the exhaustive grid's cost)")
    ax.set_ylabel("incumbent time / grid best (geomean over keys)")
    ax.set_title("Tuning curve: best-so-far vs measurements spent")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def plot_map(path, out):
    with open(path) as f:
        report = json.load(f)
    keys = report["keys"]
    colls = sorted({k["collective"] for k in keys})
    labels = sorted({f'{k["chosen_algo"]}/{k["chosen_proto"]}' for k in keys})
    cmap = plt.get_cmap("tab10")
    color = {lab: cmap(i % 10) for i, lab in enumerate(labels)}
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.9 * len(colls)))
    for row, coll in enumerate(colls):
        for k in (k for k in keys if k["collective"] == coll):
            lab = f'{k["chosen_algo"]}/{k["chosen_proto"]}'
            gain = k["default_us"] / k["chosen_us"] - 1 if k["chosen_us"] > 0 else 0
            ax.barh(row, 1, left=k["bytes"].bit_length() - 1, color=color[lab], edgecolor="white")
            ax.text(k["bytes"].bit_length() - 0.5, row, f"{100 * gain:+.0f}%", ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(colls)), colls)
    ticks = sorted({k["bytes"].bit_length() - 1 for k in keys})
    ax.set_xticks([t + 0.5 for t in ticks][::2], [size_text(1 << t) for t in ticks][::2], fontsize=8)
    ax.set_xlabel("message size (chosen configuration; text: gain over NCCL's default)")
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=color[l]) for l in labels], labels=labels,
              loc="upper center", bbox_to_anchor=(0.5, -0.35 if len(colls) < 3 else -0.15), ncol=min(6, len(labels)), fontsize=8)
    ax.set_title(f'Decision map: {report.get("backend", "")} ({report.get("nRanks")} ranks)')
    fig.tight_layout()
    fig.savefig(out, dpi=120, bbox_inches="tight")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("curves", "map"):
        sys.exit(__doc__)
    (plot_curves if sys.argv[1] == "curves" else plot_map)(sys.argv[2], sys.argv[3])
    print("wrote", sys.argv[3])
