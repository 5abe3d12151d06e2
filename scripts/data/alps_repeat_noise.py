#!/usr/bin/env python3
"""Run-to-run noise of the Alps allreduce benchmarks, from the repeated runs (run_0000..run_0002)
kept in the history of github.com/boeschf/nccl-benchmark-on-alps-2025 (shared/data holds one run per
configuration). For every point measured in several runs of one configuration, the MAPE of the best
single time against those runs: what a per-configuration model cannot beat.

Also the held-out figure: each run predicted by the fastest of the other runs of its configuration
(the MAPE-optimal choice when slow runs are outliers). It is what a model that knew every point's
other repeats would score on one unseen run, as shared/data's single run is to our fit.

usage: alps_repeat_noise.py PATH_TO_A_CLONE_OF_THAT_REPOSITORY
"""
import collections
import re
import statistics
import subprocess
import sys


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout


def main(repo):
    files, commit = {}, None
    for line in git(repo, "log", "--all", "--name-only", "--format=%h").splitlines():
        if re.fullmatch(r"[0-9a-f]{7,40}", line):
            commit = line
            continue
        m = re.match(r"results/(.*)/(run_\d+)/job-n-\d+-N-(\d+)\.txt$", line)
        if m and m.groups() not in files:
            files[m.groups()] = (commit, line)
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    for (config, _run, nodes), (c, path) in files.items():
        for row in git(repo, "show", f"{c}:{path}").splitlines():
            f = row.split()
            # nccl-tests: size count type redop root time algbw busbw #wrong (out-of-place first)
            if len(f) >= 12 and f[0].isdigit() and f[2] == "float" and f[8] == "0":
                times[config][(int(nodes), int(f[0]))].append(float(f[5]))
    every, heldOut = [], collections.defaultdict(list)
    for config, points in sorted(times.items()):
        errs = []
        for (nodes, _size), runs in points.items():
            for i, t in enumerate(runs):
                others = runs[:i] + runs[i + 1:]
                if others:
                    heldOut[nodes].append(abs(min(others) - t) / t)
            if len(runs) < 2:
                continue
            best = min(sum(abs(c - t) / t for t in runs) for c in runs)
            errs += [best / len(runs)] * len(runs)
        if errs:
            print(f"{config[:90]:90s} rows {len(errs):5d}  floor {100 * statistics.mean(errs):5.1f}%")
            every += errs
    print(f"all configurations: rows {len(every)}  floor {100 * statistics.mean(every):.1f}%")
    flat = [e for errs in heldOut.values() for e in errs]
    print(f"held out (each run from the fastest other run): rows {len(flat)}  MAPE {100 * statistics.mean(flat):.1f}%")
    print("  by nodes: " + ", ".join(f"{n}: {100 * statistics.mean(e):.1f}%" for n, e in sorted(heldOut.items())))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
