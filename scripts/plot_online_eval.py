#!/usr/bin/env python3
"""Plots `dynamiccl online-eval`'s CSV: time ratio to the best per call, online vs static vs NCCL default."""
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
        key = f"{row['collective']} {int(row['bytes']) // 1024} KiB"
        for name in ("call", "online_ratio", "static_ratio", "default_ratio"):
            series[key][name].append(float(row[name]))
fig, axes = plt.subplots(len(series), 1, figsize=(8, 2.2 * len(series)), sharex=True, squeeze=False)
for ax, (key, s) in zip(axes[:, 0], series.items()):
    ax.plot(s["call"], s["online_ratio"], label="online", lw=0.8)
    ax.plot(s["call"], s["static_ratio"], label="static profile", lw=1.2)
    ax.plot(s["call"], s["default_ratio"], label="NCCL default", lw=1.2, ls="--")
    ax.set_ylabel("time / best")
    ax.set_title(key, fontsize=9)
axes[0, 0].legend(fontsize=8)
axes[-1, 0].set_xlabel("call")
fig.tight_layout()
fig.savefig(out, dpi=110)
print(out)
