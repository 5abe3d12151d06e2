#!/usr/bin/env python3
"""Plots of `dynamiccl report` (run by it through Debian's python3 with matplotlib).

  plot_report.py OUT_DIR   # reads OUT_DIR/time_saved.csv, decision_map.csv and report_points.csv,
                           # writes OUT_DIR/time_saved.png and decision_map.png
Times are the store's measured calls: saved (measured calls x measured gain), exploring and measuring cost.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_demo import plot_decision_map  # noqa: E402
from plot_sizes import size_text  # noqa: E402


def plot_time_saved(path, out):
    """Per communicator and key: time saved, and what exploring and measuring cost (us, measured calls)."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return
    labels = [f"{r['communicator']} {r['collective']} {size_text(int(r['bytes']))}" for r in rows]
    saved = [float(r["saved_us"]) if r["saved_us"] else 0.0 for r in rows]
    cost = [-(float(r["explore_us"]) + float(r["measure_us"])) for r in rows]
    fig, ax = plt.subplots(figsize=(max(8, 0.35 * len(rows) + 3), 4.5))
    x = range(len(rows))
    ax.bar(x, saved, color="tab:green", label="saved (measured calls x measured gain)")
    ax.bar(x, cost, color="tab:red", label="exploring + measuring cost")
    ax.axhline(0, color="grey", linewidth=1)
    ax.set_yscale("symlog", linthresh=10)  # a saving of tens of us beside a search costing tens of ms
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=70, fontsize=7)
    ax.set_ylabel("collective time (us, measured calls; symlog)")
    ax.set_title("time saved per key (measured)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    out_dir = sys.argv[1]
    plot_time_saved(os.path.join(out_dir, "time_saved.csv"), os.path.join(out_dir, "time_saved.png"))
    with open(os.path.join(out_dir, "report_points.csv")) as f:
        points = [dict(r, bytes=int(r["bytes"])) for r in csv.DictReader(f)]
    plot_decision_map(os.path.join(out_dir, "decision_map.csv"), os.path.join(out_dir, "decision_map.png"), points,
                      "measured")


if __name__ == "__main__":
    main()
