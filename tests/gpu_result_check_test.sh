#!/usr/bin/env bash
# scripts/gpu/result_check.py without a GPU or torch: the exact results the PyTorch GPU runs compare
# every checked call with, and the comparison itself. A wrong reference must fail, a right one pass.
# usage: gpu_result_check_test.sh <source dir>
set -euo pipefail
SRC=${1:?source dir}
CHECK="$SRC/scripts/gpu/result_check.py"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The command line: a simulated collective checks out; one corrupted element is named, exit 1.
for c in "allreduce 4 1000" "allgather 3 257" "reducescatter 2 1100" "allreduce 1 5"; do
  python3 "$CHECK" $c | grep -q '^ok: ' || fail "result_check.py $c should pass"
done
rc=0; out=$(python3 "$CHECK" reducescatter 3 1100 --corrupt 2:1050) || rc=$?
[ "$rc" -eq 1 ] || fail "a corrupted element must exit 1, got $rc"
[ "$out" = "RESULT MISMATCH [self-check] reducescatter 13200 B, rank 2: first mismatch at output index 1050: got 3628.0, expected 3627.0" ] \
  || fail "mismatch line: $out"
rc=0; python3 "$CHECK" allreduce 200 4 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "more ranks than float32 keeps exact must be refused, got $rc"

PYTHONPATH="$SRC/scripts/gpu" python3 - <<'PY'
import math
import struct
import sys

import result_check as rc

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


# 1. The closed forms agree with the collectives computed from the inputs, every rank, several shapes.
for coll in rc.COLLS:
    for world in (1, 2, 3, 4, 7):
        for n in (1, 5, 1100):
            sim = rc.simulate(coll, world, n)
            for rank in range(world):
                exp = rc.expected(coll, rank, world, n)
                expect(len(exp) == rc.output_length(coll, n, world), f"{coll} length")
                expect(rc.first_mismatch(sim[rank], exp) is None, f"{coll} world {world} n {n} rank {rank}")
                expect(rc.check("right", coll, 8, rank, sim[rank], exp) is None, f"{coll} check passes")

# 2. Every value is exact in float32, up to the largest world allowed (the largest sum included).
world = rc.MAX_WORLD
top = rc.expected_value("allreduce", 0, world, 1, rc.MODULUS - 1)
expect(top < 2 ** 24 and struct.unpack("f", struct.pack("f", top))[0] == top, "largest sum exact in float32")
expect(rc.MODULUS * (world + 1) * (world + 2) // 2 >= 2 ** 24, "MAX_WORLD is the largest exact world")

# 3. A deliberately wrong reference fails, naming the first index; the right one passes.
right = rc.expected("allreduce", 0, 4, 64)
got = rc.simulate("allreduce", 4, 64)[0]
wrong = list(right)
wrong[17] += 1.0
wrong[40] -= 2.0
line = rc.check("n4/tuner_forced", "allreduce", 256, 0, got, wrong)
expect(line == "RESULT MISMATCH [n4/tuner_forced] allreduce 256 B, rank 0: first mismatch at output index 17: "
               f"got {right[17]}, expected {right[17] + 1.0}", f"wrong reference line: {line}")
expect(rc.check("n4/tuner_forced", "allreduce", 256, 0, got, right) is None, "right reference passes")

# 4. Wrong outputs of the kinds a bad chunk makes are all caught.
n, world = 4096, 2
good = rc.simulate("allgather", world, n)[1]
exp = rc.expected("allgather", 1, world, n)
chunk = 512  # a chunk-sized block (2 KiB of floats) landing one chunk off
shifted = good[:chunk] + good[:chunk] + good[2 * chunk:]
expect(rc.first_mismatch(shifted, exp)[0] == chunk, "a block written one chunk off")
other_rank = list(good)
other_rank[n:n + 8] = good[:8]  # rank 1's slot holding rank 0's data
expect(rc.first_mismatch(other_rank, exp)[0] == n, "another rank's data in a slot")
expect(rc.first_mismatch(good[:-1], exp) == (len(exp) - 1, None, exp[-1]), "a short output")
expect(rc.first_mismatch(good + [0.0], exp) == (len(exp), 0.0, None), "a long output")
nan = list(good)
nan[3] = float("nan")
m = rc.first_mismatch(nan, exp)
expect(m is not None and m[0] == 3 and math.isnan(m[1]), "NaN never equals")
twice = rc.simulate("reducescatter", 3, 100)[0]
twice[99] += rc.input_value(2, 99)  # one contribution added twice
expect(rc.first_mismatch(twice, rc.expected("reducescatter", 0, 3, 100))[0] == 99, "a doubled contribution")


# 5. Tensor-like arguments (the GPU path: .ne / .nonzero / .numel) get the same answers, no torch needed.
class FakeTensor:
    def __init__(self, values):
        self.v = [float(x) for x in values]

    def numel(self):
        return len(self.v)

    def reshape(self, *_):
        return self

    def __getitem__(self, key):
        return FakeTensor(self.v[key]) if isinstance(key, slice) else self.v[key]

    def ne(self, other):
        return FakeTensor([not (a == b) for a, b in zip(self.v, other.v)])

    def any(self):
        return any(self.v)

    def nonzero(self):
        return [[i] for i, x in enumerate(self.v) if x]


for a, e in ((got, wrong), (got, right), (good[:-1], exp), (nan, exp), (shifted, exp)):
    fa, fe = rc.first_mismatch(FakeTensor(a), FakeTensor(e)), rc.first_mismatch(a, e)
    same = fa == fe or (fa and fe and fa[0] == fe[0] and math.isnan(fa[1]) and math.isnan(fe[1]))
    expect(same, f"tensor path {fa} against list path {fe}")

# 6. The GPU path builds the same inputs and results on the device: torch_inputs / torch_expected run
#    here on a list-backed stand-in for the few torch calls they make.
class Vec(FakeTensor):
    def remainder(self, m):
        return Vec([x % m for x in self.v])

    def add(self, k):
        return Vec([x + k for x in self.v])

    def mul(self, k):
        return Vec([x * k for x in self.v])

    def repeat(self, k):
        return Vec(self.v * k)

    def repeat_interleave(self, k):
        return Vec([x for x in self.v for _ in range(k)])

    def __iadd__(self, other):
        return Vec([a + b for a, b in zip(self.v, other.v)])

    def to(self, dtype):
        return Vec([struct.unpack("f", struct.pack("f", x))[0] for x in self.v]) if dtype == "f32" else self


class FakeTorch:
    int64, float32 = "i64", "f32"

    @staticmethod
    def arange(start, end=None, dtype=None, device=None):
        return Vec(range(start, end) if end is not None else range(start))


for coll in rc.COLLS:
    for world, n in ((1, 3), (2, 1100), (5, 7)):
        for rank in range(world):
            ti = rc.torch_inputs(coll, rank, world, n, "cuda", torch=FakeTorch)
            te = rc.torch_expected(coll, rank, world, n, "cuda", torch=FakeTorch)
            expect(rc.first_mismatch(ti.v, rc.inputs(coll, rank, world, n)) is None, f"{coll} torch_inputs")
            expect(rc.first_mismatch(te.v, rc.expected(coll, rank, world, n)) is None, f"{coll} torch_expected")

# 7. Bad arguments are refused, not checked against a wrong formula.
for bad in (lambda: rc.expected("broadcast", 0, 2, 4), lambda: rc.expected("allreduce", 0, rc.MAX_WORLD + 1, 4)):
    try:
        bad()
        failures.append("bad arguments accepted")
    except ValueError:
        pass

for f in failures:
    print("FAIL:", f, file=sys.stderr)
sys.exit(1 if failures else 0)
PY

# torch_runs.sh: a run whose ranks report a wrong result (exit 3, the client's line) fails the script
# (exit 1), naming the run, the call and the index once, in OUT/mismatch.txt too; a clean run does not.
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat >"$TMP/py" <<'FAKE'
#!/usr/bin/env bash
# python3, except that torch_client.py is a rank that reports a mismatch in runs labelled */tuner_forced
if [[ "${1:-}" == */torch_client.py ]]; then
  label="" rank=0 prev=""
  for a in "$@"; do [ "$prev" = --label ] && label=$a; [ "$prev" = --rank ] && rank=$a; prev=$a; done
  if [[ "$label" == */tuner_forced ]]; then
    echo "torch_client: RESULT MISMATCH [$label] allreduce 2097152 B, rank $rank: first mismatch at output index 5: got 1027.0, expected 1033.0" >&2
    exit 3
  fi
  exit 0
fi
exec python3 "$@"
FAKE
chmod +x "$TMP/py"
touch "$TMP/p.so"
runs() { PYTHON="$TMP/py" GPU_RUNS_WORK="$TMP/work" "$SRC/scripts/gpu/torch_runs.sh" --out "$TMP/$1" \
           --plugin "$TMP/p.so" --ranks 2 --runs "$2" --budget-s 60 >"$TMP/$1.out" 2>"$TMP/$1.err"; }
rc=0; runs clean "default tuner_empty" || rc=$?
[ "$rc" -eq 0 ] || fail "runs with exact results should pass, got $rc"
[ -e "$TMP/clean/mismatch.txt" ] && fail "no mismatch file for a clean run"
rc=0; runs bad "default tuner_forced" || rc=$?
[ "$rc" -eq 1 ] || fail "a wrong result should fail torch_runs.sh with 1, got $rc"
want="n2 tuner_forced: RESULT MISMATCH [n2/tuner_forced] allreduce 2097152 B, rank 0: first mismatch at output index 5: got 1027.0, expected 1033.0"
[ "$(cat "$TMP/bad/mismatch.txt")" = "$want" ] || fail "mismatch.txt: $(cat "$TMP/bad/mismatch.txt")"
grep -qxF "$want" "$TMP/bad.err" || fail "the run's line on stderr"
grep -q 'FAILED: wrong collective results in 1 run' "$TMP/bad.err" || fail "the closing line"
[ -s "$TMP/bad/runs.tar.gz" ] || fail "results still packed"
echo "gpu_result_check_test: ok"
