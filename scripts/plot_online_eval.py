#!/usr/bin/env python3
"""Plots `dynamiccl-lab online-eval`'s CSV: time ratio to the best per call, online vs static vs NCCL default,
one panel per key (simulated keys, then measured ones)."""
import csv
import sys
from collections import defaultdict

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

src = sys.argv[1] if len(sys.argv) > 1 else "online_eval.csv"
out = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
series = defaultdict(lambda: defaultdict(list))
with open(src) as f:
    for row in csv.DictReader(f):
        key = f"{row['source']}: {row['key']}"
        for name in ("call", "online_ratio", "static_ratio", "default_ratio"):
            series[key][name].append(float(row[name]))
if not series:
    sys.exit(f"{src}: no rows")
cols = 2 if len(series) > 6 else 1
rows = (len(series) + cols - 1) // cols
fig, axes = plt.subplots(rows, cols, figsize=(8 * cols, 2.2 * rows), sharex=True, squeeze=False)
for ax, (key, s) in zip(axes.flat, series.items()):
    ax.plot(s["call"], s["online_ratio"], label="online", lw=0.8)
    ax.plot(s["call"], s["static_ratio"], label="static profile", lw=1.2)
    ax.plot(s["call"], s["default_ratio"], label="NCCL default", lw=1.2, ls="--")
    top = max(max(s["static_ratio"]), max(s["default_ratio"]), 1.1)
    ax.set_ylim(0.95, min(top * 1.1, 6))
    ax.set_ylabel("time / best")
    ax.set_title(key, fontsize=9)
for ax in list(axes.flat)[len(series):]:
    ax.axis("off")
axes[0, 0].legend(fontsize=8)
for ax in axes[-1]:
    ax.set_xlabel("call")
fig.tight_layout()
fig.savefig(out, dpi=100)
print(out)
