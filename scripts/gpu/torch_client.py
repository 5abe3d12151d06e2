#!/usr/bin/env python3
"""One rank of the real client: torch.distributed with the NCCL backend, timing collectives with CUDA events.

usage: torch_client.py --rank R --world N --port P --out FILE [--min-bytes 8] [--max-bytes 256M]
                       [--colls allreduce,allgather,reducescatter] [--label TEXT] [--plan] [--job ROUNDS]
Sizes follow nccl-tests: the total buffer (allgather: output, reducescatter: input), float32 / sum,
rounded up to whole floats per rank. Each size: warm-up calls, then timed calls, each between two
CUDA events on the current stream (ProcessGroupNCCL's stream waits on it, and it on the collective).
FILE gets one JSON line per (collective, size) and a first line naming the versions.
Results are checked: every warm-up call runs on inputs whose sum is exact in float32 (result_check.py)
and its output is compared element by element with the exact result. A mismatch prints one line
("RESULT MISMATCH [LABEL] coll bytes B, rank R: first mismatch at output index I: got X, expected Y")
to stderr, is written into that size's JSON line ("check"), and makes the client exit 3 once the sweep
is over (the other ranks still run every call, so no rank is left waiting in a collective). --label
names the configuration in that line (torch_runs.sh passes n<ranks>/<run>; unset: the plugin and
profile named by the environment).
--plan prints the sweep (sizes, warm-up and timed calls) and exits without importing torch.
--job ROUNDS runs a training-like job instead of the sweep: ROUNDS rounds of the same few calls
(JOB_MIX), every call timed; FILE gets, per call of the mix, its times in blocks of BLOCK rounds, and
the job's wall time (first call to the last one's end). The job's warm-up calls are checked, and after
the job one more round of the mix (untimed, after the wall time) is checked: what the job settled on.
"""
import argparse
import json
import os
import sys
import time

import result_check  # beside this file; needs neither torch nor a GPU

WARMUP = 3
# The job's round: sizes where NCCL's pick and the GPU runs' forced rules differ (the rules lose).
JOB_MIX = [("allreduce", 8 << 10), ("allreduce", 512 << 10), ("allreduce", 2 << 20), ("allreduce", 16 << 20),
           ("allgather", 512 << 10)]
BLOCK = 100


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    scale = units.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in units else text
    value = int(number) * scale
    if value <= 0:
        raise ValueError(f"size must be positive: {text}")
    return value


def sizes(min_bytes, max_bytes):
    """8 B, 32 B, ... by factors of 4, and max_bytes itself: 14 sizes from 8 B to 256 MiB."""
    out, size = [], min_bytes
    while size < max_bytes:
        out.append(size)
        size *= 4
    out.append(max_bytes)
    return out


def timed_calls(size):
    """Fewer calls where one call is long: the sweep of 14 sizes x 3 collectives stays within seconds."""
    if size <= (1 << 20):
        return 20
    if size <= (32 << 20):
        return 10
    return 5


def floats_per_rank(coll, size, world):
    per = size if coll == "allreduce" else size // world
    return max(1, (per + 3) // 4)


def plan(args):
    if args.job:
        for coll, size in JOB_MIX:
            print(f"job {coll} {size} x {args.job} rounds")
        return
    for coll in args.colls:
        for size in sizes(args.min_bytes, args.max_bytes):
            n = floats_per_rank(coll, size, args.world)
            total = 4 * n * (1 if coll == "allreduce" else args.world)
            print(f"{coll} {total} warmup={WARMUP} timed={timed_calls(size)}")


def make_call(dist, coll, size, world, big_in, big_out):
    """The collective of `size` total bytes on the shared buffers, its total as the plugin keys it, and
    (n floats per rank, input view, output view) for the result check."""
    n = floats_per_rank(coll, size, world)
    if coll == "allreduce":
        t = big_in[:n]
        return (lambda: dist.all_reduce(t)), 4 * n, (n, t, t)
    if coll == "allgather":
        i, o = big_in[:n], big_out[:n * world]
        return (lambda: dist.all_gather_into_tensor(o, i)), 4 * n * world, (n, i, o)
    i, o = big_in[:n * world], big_out[:n]
    return (lambda: dist.reduce_scatter_tensor(o, i)), 4 * n * world, (n, i, o)


class Checker:
    """Runs a call on exact inputs and compares its output with the exact result (result_check.py)."""

    def __init__(self, args, torch, dev):
        self.args, self.torch, self.dev = args, torch, dev
        self.expected = {}
        self.failures = []

    def checked_call(self, call, coll, total, views):
        """One call on exact inputs; None if its output is exact, else the mismatch line (also printed)."""
        n, inp, out = views
        torch, rank, world = self.torch, self.args.rank, self.args.world
        inp.copy_(result_check.torch_inputs(coll, rank, world, n, self.dev, torch=torch))
        call()
        key = (coll, n)
        if key not in self.expected:
            self.expected = {key: result_check.torch_expected(coll, rank, world, n, self.dev, torch=torch)}
        torch.cuda.synchronize(self.dev)
        line = result_check.check(self.args.label, coll, total, rank, out, self.expected[key])
        if line is not None:
            self.failures.append(line)
            print(f"torch_client: {line}", file=sys.stderr, flush=True)
        return line

    def warmup(self, call, coll, total, views):
        """The warm-up calls, each on exact inputs and checked; 'ok' or the first mismatch line."""
        first = None
        for _ in range(WARMUP):
            line = self.checked_call(call, coll, total, views)
            first = first or line
        return first or "ok"


def run_job(args, torch, dist, dev, out, big_in, big_out, checker):
    """ROUNDS rounds of JOB_MIX, every call between two CUDA events; times written per block of rounds."""
    made = [(make_call(dist, coll, size, args.world, big_in, big_out), coll) for coll, size in JOB_MIX]
    calls = [(call, total, coll) for (call, total, _), coll in made]
    views = [v for (_, _, v), _ in made]
    checks = [checker.warmup(call, coll, total, v) for (call, total, coll), v in zip(calls, views)]
    torch.cuda.synchronize(dev)
    t0 = time.monotonic()
    for first in range(0, args.job, BLOCK):
        rounds = min(BLOCK, args.job - first)
        events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                   for _ in range(rounds)] for _ in calls]
        for r in range(rounds):
            for (call, _, _), ev in zip(calls, events):
                ev[r][0].record()
                call()
                ev[r][1].record()
        torch.cuda.synchronize(dev)
        for (_, total, coll), ev in zip(calls, events):
            out.write(json.dumps({"coll": coll, "bytes": total, "round": first,
                                  "times_us": [round(s.elapsed_time(e) * 1000.0, 3) for s, e in ev]}) + "\n")
        out.flush()
    out.write(json.dumps({"job_rounds": args.job, "job_calls": args.job * len(calls),
                          "job_wall_s": round(time.monotonic() - t0, 3)}) + "\n")
    # One more round, untimed and after the wall time, each call checked: the choices the job settled on.
    for i, ((call, total, coll), v) in enumerate(zip(calls, views)):
        after = checker.checked_call(call, coll, total, v) or "ok"
        out.write(json.dumps({"job_check": coll, "bytes": total, "warmup": checks[i], "after_job": after}) + "\n")
    out.flush()


def run(args):
    import torch
    import torch.distributed as dist

    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    t0 = time.monotonic()
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{args.port}", rank=args.rank,
                            world_size=args.world, device_id=dev)
    init_s = time.monotonic() - t0
    calls = JOB_MIX if args.job else [(c, args.max_bytes) for c in args.colls]
    biggest = max(floats_per_rank(c, size, args.world) * (args.world if c != "allreduce" else 1) for c, size in calls)
    big_in = torch.ones(biggest, dtype=torch.float32, device=dev)
    big_out = torch.empty(biggest, dtype=torch.float32, device=dev)
    checker = Checker(args, torch, dev)
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(json.dumps({"rank": args.rank, "world": args.world, "torch": torch.__version__,
                              "nccl": ".".join(str(v) for v in torch.cuda.nccl.version()),
                              "device": torch.cuda.get_device_name(dev), "init_s": round(init_s, 3)}) + "\n")
        if args.job:
            run_job(args, torch, dist, dev, out, big_in, big_out, checker)
            dist.destroy_process_group()
            return checker.failures
        for coll in args.colls:
            for size in sizes(args.min_bytes, args.max_bytes):
                call, total, views = make_call(dist, coll, size, args.world, big_in, big_out)
                check = checker.warmup(call, coll, total, views)
                k = timed_calls(size)
                events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                          for _ in range(k)]
                for start, stop in events:
                    start.record()
                    call()
                    stop.record()
                torch.cuda.synchronize(dev)
                times_us = [round(s.elapsed_time(e) * 1000.0, 3) for s, e in events]
                out.write(json.dumps({"coll": coll, "bytes": total, "warmup": WARMUP, "times_us": times_us,
                                      "check": check}) + "\n")
                out.flush()
    dist.destroy_process_group()
    return checker.failures


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", type=int, default=29500)
    p.add_argument("--out", default="/dev/stdout")
    p.add_argument("--min-bytes", type=parse_bytes, default=8)
    p.add_argument("--max-bytes", type=parse_bytes, default=256 << 20)
    p.add_argument("--colls", type=lambda s: s.split(","), default=["allreduce", "allgather", "reducescatter"])
    p.add_argument("--plan", action="store_true")
    p.add_argument("--job", type=int, default=0, metavar="ROUNDS")
    p.add_argument("--label", default=None, help="the configuration, as the mismatch line names it")
    args = p.parse_args()
    if args.label is None:
        profile = os.environ.get("DYNAMICCL_PROFILE")
        args.label = (f"plugin, profile {os.path.basename(profile)}" if os.environ.get("NCCL_TUNER_PLUGIN") and profile
                      else "plugin" if os.environ.get("NCCL_TUNER_PLUGIN") else "no plugin")
    known = {"allreduce", "allgather", "reducescatter"}
    if not set(args.colls) <= known or args.world < 1 or not 0 <= args.rank < args.world:
        p.error(f"collectives must be among {sorted(known)}, 0 <= rank < world")
    if args.world > result_check.MAX_WORLD:
        p.error(f"results are checked exactly up to {result_check.MAX_WORLD} ranks")
    if args.min_bytes > args.max_bytes:
        p.error("--min-bytes exceeds --max-bytes")
    if args.job < 0:
        p.error("--job takes a number of rounds")
    if args.plan:
        plan(args)
        return 0
    failures = run(args)
    if failures:
        print(f"torch_client: {len(failures)} call(s) with a wrong result; first: {failures[0]}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
