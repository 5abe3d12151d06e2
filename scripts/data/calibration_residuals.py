#!/usr/bin/env python3
"""Where a dataset's calibration error is: the MAPE split by node count and message size, and the
shares offline/platforms/calibration/README.md quotes for Alps. Each share is the points of MAPE those rows
contribute (their summed |predicted - measured| / measured over all rows).

usage: calibration_residuals.py PREDICTIONS_CSV [DATASET]
  PREDICTIONS_CSV: calibration_predictions.csv from
  `dynamiccl-lab calibrate --data-dir ../shared/data --check --dataset DATASET --plots DIR`
"""
import collections
import csv
import math
import sys

BANDS = [("<=4K", 12), ("4K-64K", 15), ("64K-1M", 20), ("1M-64M", 26), (">64M", 99)]


def band(nbytes):
    log = int(math.log2(nbytes))
    return next(name for name, top in BANDS if log <= top)


def main(path, dataset=None):
    rows = [r for r in csv.DictReader(open(path)) if not dataset or r["dataset"] == dataset]
    if not rows:
        sys.exit("no rows")
    ape = lambda r: abs(float(r["predicted_us"]) - float(r["measured_us"])) / float(r["measured_us"])
    share = lambda pick: 100 * sum(ape(r) for r in rows if pick(r)) / len(rows)
    nodes = lambda r: int(r["nnodes"])
    print(f"rows {len(rows)}  MAPE {share(lambda r: True):.2f}%")
    print("points of MAPE by nodes x size (mean APE of the cell in brackets):")
    cells = collections.defaultdict(list)
    for r in rows:
        cells[(nodes(r), band(int(r["bytes"])))].append(ape(r))
    print("nodes " + "".join(f"{name:>14}" for name, _ in BANDS))
    for n in sorted({k[0] for k in cells}):
        line = ""
        for name, _ in BANDS:
            c = cells.get((n, name), [])
            line += f"{100 * sum(c) / len(rows):7.2f} ({100 * sum(c) / len(c) if c else 0:3.0f}%)"
        print(f"{n:5d} {line}")
    slow = lambda r: float(r["measured_us"]) > 1.5 * float(r["predicted_us"])
    print(f"rows at 64+ nodes ({sum(nodes(r) >= 64 for r in rows)}): {share(lambda r: nodes(r) >= 64):.1f} points")
    print(f"rows measured > 1.5x predicted: {share(slow):.1f} points, "
          f"{share(lambda r: slow(r) and nodes(r) >= 16):.1f} of them at 16+ nodes")
    print("64 KiB-1 MiB on 2-8 nodes: "
          f"{share(lambda r: 2 <= nodes(r) <= 8 and 65536 <= int(r['bytes']) <= 1 << 20):.1f} points")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(*sys.argv[1:])
