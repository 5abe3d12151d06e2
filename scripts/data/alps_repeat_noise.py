#!/usr/bin/env python3
"""Run-to-run noise of the Alps allreduce benchmarks, from the repeated runs (run_0000..run_0002)
kept in the history of github.com/boeschf/nccl-benchmark-on-alps-2025 (shared/data holds one run per
configuration). For every point measured in several runs of one configuration, the MAPE of the best
single time against those runs: what a per-configuration model cannot beat.

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
    every = []
    for config, points in sorted(times.items()):
        errs = []
        for runs in points.values():
            if len(runs) < 2:
                continue
            best = min(sum(abs(c - t) / t for t in runs) for c in runs)
            errs += [best / len(runs)] * len(runs)
        if errs:
            print(f"{config[:90]:90s} rows {len(errs):5d}  floor {100 * statistics.mean(errs):5.1f}%")
            every += errs
    print(f"all configurations: rows {len(every)}  floor {100 * statistics.mean(every):.1f}%")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
