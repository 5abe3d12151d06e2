#!/usr/bin/env python3
"""Default-vs-tuned table from two nccl_bench outputs (rank 0's RESULT lines).

usage: compare.py DEFAULT.txt TUNED.txt   -> one row per (collective, bytes) present in both
Speedup is default_time / tuned_time (>1: the plugin helped). Exit 2 on unreadable input.
"""
import sys


def read_results(path):
    """{(coll, bytes): (time_us, busbw)} from RESULT lines; anything else (NCCL logs) is ignored."""
    results = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) != 6 or parts[0] != "RESULT":
                continue
            try:
                key = (parts[1], int(parts[2]))
                time_us, busbw = float(parts[3]), float(parts[5])
            except ValueError:
                continue
            if time_us > 0:
                results[key] = (time_us, busbw)
    return results


def human(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        default, tuned = read_results(argv[1]), read_results(argv[2])
    except OSError as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    keys = sorted(set(default) & set(tuned))
    if not keys:
        print("compare: no common RESULT lines", file=sys.stderr)
        return 2
    print(f"{'collective':<14}{'bytes':>8}{'default_us':>12}{'tuned_us':>12}{'speedup':>9}"
          f"{'default_busbw':>15}{'tuned_busbw':>13}")
    for coll, nbytes in keys:
        (dt, db), (tt, tb) = default[(coll, nbytes)], tuned[(coll, nbytes)]
        print(f"{coll:<14}{human(nbytes):>8}{dt:>12.2f}{tt:>12.2f}{dt / tt:>8.2f}x{db:>15.3f}{tb:>13.3f}")
    for name, only in (("default", set(default) - set(tuned)), ("tuned", set(tuned) - set(default))):
        if only:
            print(f"# {len(only)} sizes only in the {name} run", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
