#!/usr/bin/env python3
"""Exact results for scripts/gpu/torch_client.py's collectives, and the check that compares with them.

Every rank fills its input with small integers stored as float32:
    input_value(rank, i) = (i % MODULUS) + 1 + MODULUS * rank
so every partial sum NCCL can form, in any order, on any algorithm, protocol, channel count or chunk
size, is an integer below 2**24 and exact in float32 (up to MAX_WORLD ranks). The result each rank must
hold is then known exactly (expected_value), and a collective whose output differs from it in any
element ran wrong: a chunk written past its buffer slot, a step out of order, a missed or doubled
contribution. MODULUS is a prime, so data moved by any chunk-sized offset (a power of two) lands on a
different value and is seen.

Nothing here needs a GPU, torch or numpy: first_mismatch takes plain lists or any indexable sequence
(array.array, memoryview, numpy arrays, CPU tensors). Tensors (anything with .ne and .nonzero) take a
vectorised path with the same answer, so a 256 MiB output is compared on the GPU; torch itself is
imported only by torch_inputs / torch_expected, i.e. only on the GPU path.
"""
import math

MODULUS = 1021
COLLS = ("allreduce", "allgather", "reducescatter")
# The largest allreduce result is MODULUS * world * (world + 1) / 2; it must stay below 2**24.
MAX_WORLD = max(w for w in range(1, 1000) if MODULUS * w * (w + 1) // 2 < (1 << 24))


def _known(coll, world):
    if coll not in COLLS:
        raise ValueError(f"unknown collective {coll!r}")
    if not 1 <= world <= MAX_WORLD:
        raise ValueError(f"{world} ranks: results are exact in float32 only up to {MAX_WORLD} ranks")


def input_length(coll, n, world):
    """Floats each rank sends: n per rank (allreduce: n in all; reducescatter: n for each rank)."""
    return n * world if coll == "reducescatter" else n


def output_length(coll, n, world):
    return n * world if coll == "allgather" else n


def input_value(rank, index):
    return float(index % MODULUS + 1 + MODULUS * rank)


def _sum_over_ranks(index, world):
    """sum over r of input_value(r, index), in closed form."""
    return float(world * (index % MODULUS + 1) + MODULUS * world * (world - 1) // 2)


def expected_value(coll, rank, world, n, index):
    """Element `index` of `rank`'s output, for a call with n floats per rank (sum; allreduce in place)."""
    _known(coll, world)
    if coll == "allreduce":
        return _sum_over_ranks(index, world)
    if coll == "allgather":
        source, i = divmod(index, n)
        return input_value(source, i)
    return _sum_over_ranks(rank * n + index, world)  # reducescatter: rank's block of every input


def inputs(coll, rank, world, n):
    _known(coll, world)
    return [input_value(rank, i) for i in range(input_length(coll, n, world))]


def expected(coll, rank, world, n):
    return [expected_value(coll, rank, world, n, i) for i in range(output_length(coll, n, world))]


def simulate(coll, world, n):
    """Each rank's output computed from inputs() the way the collective is defined, not from the closed
    forms above: a second derivation the tests hold expected() to."""
    ins = [inputs(coll, r, world, n) for r in range(world)]
    if coll == "allreduce":
        total = [sum(col) for col in zip(*ins)]
        return [list(total) for _ in range(world)]
    if coll == "allgather":
        gathered = [v for r in range(world) for v in ins[r]]
        return [list(gathered) for _ in range(world)]
    total = [sum(col) for col in zip(*ins)]
    return [total[q * n:(q + 1) * n] for q in range(world)]


def _same(a, b):
    return a == b and not (isinstance(a, float) and math.isnan(a))


def _is_tensor(x):
    return hasattr(x, "ne") and hasattr(x, "nonzero") and hasattr(x, "numel")


def first_mismatch(actual, expected_values):
    """None when the two agree element by element (same length, equal values; NaN never equals),
    else (index, got, expected) for the first index where they differ (got or expected is None past
    the end of the shorter one)."""
    if _is_tensor(actual) and _is_tensor(expected_values):
        return _tensor_first_mismatch(actual, expected_values)
    la, le = len(actual), len(expected_values)
    for i in range(min(la, le)):
        got, want = float(actual[i]), float(expected_values[i])
        if not _same(got, want):
            return i, got, want
    if la != le:
        i = min(la, le)
        return i, (float(actual[i]) if i < la else None), (float(expected_values[i]) if i < le else None)
    return None


def _tensor_first_mismatch(actual, expected_values):
    la, le = actual.numel(), expected_values.numel()
    k = min(la, le)
    a, e = actual.reshape(-1)[:k], expected_values.reshape(-1)[:k]
    bad = a.ne(e)  # NaN != anything, as in _same
    if bool(bad.any()):
        i = int(bad.nonzero()[0][0])
        return i, float(a[i]), float(e[i])
    if la != le:
        return (k, float(actual.reshape(-1)[k]) if k < la else None,
                float(expected_values.reshape(-1)[k]) if k < le else None)
    return None


def describe(label, coll, nbytes, rank, mismatch):
    """The one line a failing run prints."""
    index, got, want = mismatch
    return (f"RESULT MISMATCH [{label}] {coll} {nbytes} B, rank {rank}: first mismatch at output index "
            f"{index}: got {got}, expected {want}")


def check(label, coll, nbytes, rank, actual, expected_values):
    """None when `actual` is the exact result, else the line describing the first mismatch."""
    mismatch = first_mismatch(actual, expected_values)
    return None if mismatch is None else describe(label, coll, nbytes, rank, mismatch)


# The GPU path: the same values as inputs() / expected(), built on the device.
def _torch(torch):
    if torch is None:
        import torch  # only here: the rest of the module runs without it
    return torch


def _pattern(torch, start, length, device):
    """input_value(r, start + i) without the rank term, for i < length, exact in float32."""
    idx = torch.arange(start, start + length, dtype=torch.int64, device=device)
    return idx.remainder(MODULUS).add(1)


def torch_inputs(coll, rank, world, n, device, torch=None):
    torch = _torch(torch)
    _known(coll, world)
    values = _pattern(torch, 0, input_length(coll, n, world), device).add(MODULUS * rank)
    return values.to(torch.float32)


def torch_expected(coll, rank, world, n, device, torch=None):
    torch = _torch(torch)
    _known(coll, world)
    offset = MODULUS * world * (world - 1) // 2
    if coll == "allreduce":
        values = _pattern(torch, 0, n, device).mul(world).add(offset)
    elif coll == "reducescatter":
        values = _pattern(torch, rank * n, n, device).mul(world).add(offset)
    else:
        values = _pattern(torch, 0, n, device).repeat(world)
        values += torch.arange(world, dtype=torch.int64, device=device).repeat_interleave(n).mul(MODULUS)
    return values.to(torch.float32)


def main(argv=None):
    """Self-check without a GPU: simulate COLL on WORLD ranks of N floats in plain Python, optionally
    corrupt one element of one rank's output, and check every rank against the exact result."""
    import argparse
    import sys
    p = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    p.add_argument("coll", choices=COLLS)
    p.add_argument("world", type=int)
    p.add_argument("n", type=int, help="floats per rank")
    p.add_argument("--corrupt", metavar="RANK:INDEX", help="add 1 to that output element before checking")
    args = p.parse_args(argv)
    if args.n < 1 or not 1 <= args.world <= MAX_WORLD:
        p.error(f"n >= 1 and 1 <= world <= {MAX_WORLD}")
    outputs = simulate(args.coll, args.world, args.n)
    if args.corrupt:
        rank, index = (int(x) for x in args.corrupt.split(":"))
        outputs[rank][index] += 1.0
    for rank, out in enumerate(outputs):
        total = 4 * args.n * (1 if args.coll == "allreduce" else args.world)  # as torch_client.py names sizes
        line = check("self-check", args.coll, total, rank, out, expected(args.coll, rank, args.world, args.n))
        if line:
            print(line)
            return 1
    print(f"ok: {args.coll} on {args.world} ranks, {args.n} floats per rank: every output exact")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
