#!/usr/bin/env python3
"""Plots of `dynamiccl demo` (run by it through Debian's python3 with matplotlib).

  plot_demo.py OUT_DIR   # reads OUT_DIR/replay_points.csv, decision_map.csv and summary.json,
                         # writes OUT_DIR/busbw.png, vs_nccl.png and decision_map.png
Every title says whether its times are measured or simulated (summary.json's "mode").
"""
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_sizes import size_text  # noqa: E402


def size_axes(ax, title, ylabel):
    """A per-collective panel over message size: log2 size axis, title, labels, grid, legend."""
    ax.set_xscale("log", base=2)
    ax.set_title(title)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def read_points(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            r["bytes"] = int(r["bytes"])
            rows.append(r)
    return rows


def source_of(out_dir):
    """"measured" or "simulated", from the demo's summary.json."""
    try:
        with open(os.path.join(out_dir, "summary.json")) as f:
            return "measured" if json.load(f).get("mode") == "measured" else "simulated"
    except (OSError, ValueError):
        return "simulated"


def plot_vs_nccl(rows, out, source):
    """Per key, each profile's time over NCCL default's (below 1: faster), on a log-size axis."""
    colls = list(dict.fromkeys(r["collective"] for r in rows))
    profiles = [p for p in dict.fromkeys(r["profile"] for r in rows) if p != "NCCL default"]
    fig, axes = plt.subplots(1, len(colls), figsize=(5.2 * len(colls), 4.2), squeeze=False)
    for ax, coll in zip(axes[0], colls):
        for prof in profiles:
            pts = sorted((r["bytes"], float(r["chosen_us"]) / float(r["default_us"])) for r in rows
                         if r["collective"] == coll and r["profile"] == prof and float(r["default_us"]) > 0)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=4, label=prof)
        best = sorted({r["bytes"]: float(r["best_us"]) / float(r["default_us"]) for r in rows
                       if r["collective"] == coll and float(r["default_us"]) > 0}.items())
        ax.plot([b for b, _ in best], [v for _, v in best], color="black", linestyle="--", linewidth=1,
                label="best configuration")
        ax.axhline(1.0, color="grey", linewidth=1)
        size_axes(ax, f"{coll}: time / NCCL default ({source})", "time ratio (below 1: faster than NCCL)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def plot_busbw(rows, out, source="simulated"):
    """Bus bandwidth vs size per collective: NCCL default, each profile, and the best configuration."""
    colls = list(dict.fromkeys(r["collective"] for r in rows))
    profiles = list(dict.fromkeys(r["profile"] for r in rows))
    fig, axes = plt.subplots(1, len(colls), figsize=(5.2 * len(colls), 4.2), squeeze=False)
    styles = {"NCCL default": ("tab:grey", "o"), "tuned": ("tab:blue", "s"), "learned": ("tab:orange", "^"),
              "verified in job": ("tab:green", "D")}
    for ax, coll in zip(axes[0], colls):
        for prof in profiles:
            pts = sorted((r["bytes"], float(r["chosen_busbw_GBps"])) for r in rows
                         if r["collective"] == coll and r["profile"] == prof)
            color, marker = styles.get(prof, (None, "."))
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, markersize=4, color=color, label=prof)
        best = sorted({r["bytes"]: float(r["best_busbw_GBps"]) for r in rows if r["collective"] == coll}.items())
        ax.plot([b for b, _ in best], [v for _, v in best], color="black", linestyle="--", linewidth=1,
                label="best configuration")
        ax.set_yscale("log")  # small sizes' bandwidth is orders below large ones': a linear axis hides them
        size_axes(ax, f"{coll}: bus bandwidth ({source})", "bus bandwidth (GB/s)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def plot_decision_map(path, out, points, source):
    """The mapped profile's decision per (collective, size): one colour per configuration; a dot where
    it differs from what NCCL runs alone."""
    with open(path) as f:
        rows = [(r["collective"], int(r["bytes"]), r["config"]) for r in csv.DictReader(f)]
    nccl = {(r["collective"], r["bytes"]): r["config"] for r in points if r["profile"] == "NCCL default"}
    mapped = [p for p in dict.fromkeys(r["profile"] for r in points) if p != "NCCL default"]
    name = mapped[-1] if mapped else "profile"
    if not rows:
        return
    colls = list(dict.fromkeys(c for c, _, _ in rows))
    sizes = sorted({b for _, b, _ in rows})
    configs = list(dict.fromkeys(cfg for _, _, cfg in rows))
    cmap = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(sizes) + 3), 1.2 + 0.7 * len(colls)))
    for y, coll in enumerate(colls):
        for coll2, b, cfg in rows:
            if coll2 != coll:
                continue
            x = sizes.index(b)
            ax.add_patch(plt.Rectangle((x, y), 1, 0.9, color=cmap(configs.index(cfg) % 20)))
            if (coll, b) in nccl and nccl[(coll, b)] != cfg:
                ax.plot(x + 0.5, y + 0.45, marker="o", color="black", markersize=4)
    ax.set_xlim(0, len(sizes))
    ax.set_ylim(0, len(colls))
    ax.set_xticks([i + 0.5 for i in range(len(sizes))])
    ax.set_xticklabels([size_text(b) for b in sizes], rotation=60, fontsize=7)
    ax.set_yticks([i + 0.45 for i in range(len(colls))])
    ax.set_yticklabels(colls)
    handles = [plt.Rectangle((0, 0), 1, 1, color=cmap(i % 20)) for i in range(len(configs))]
    ax.legend(handles, configs, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"{name}: what NCCL runs after the plugin decided (dot: not NCCL's own choice; {source})")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    source = source_of(out_dir)
    points = read_points(os.path.join(out_dir, "replay_points.csv"))
    plot_busbw(points, os.path.join(out_dir, "busbw.png"), source)
    plot_vs_nccl(points, os.path.join(out_dir, "vs_nccl.png"), source)
    plot_decision_map(os.path.join(out_dir, "decision_map.csv"), os.path.join(out_dir, "decision_map.png"), points, source)


if __name__ == "__main__":
    main()
