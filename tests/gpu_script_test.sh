#!/usr/bin/env bash
# Non-GPU parts of scripts/gpu: the comparison table (canned outputs) and run.sh's argument handling
# and per-rank environment (--dry-run). usage: gpu_script_test.sh <source dir>
set -euo pipefail
SRC=${1:?source dir}
DATA="$SRC/tests/gpu_script_test_data"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Comparison: rows only for sizes in both runs, speedup = default/tuned, noise lines ignored.
python3 "$SRC/scripts/gpu/compare.py" "$DATA/default.txt" "$DATA/tuned.txt" >"$TMP/table" 2>"$TMP/err"
cat "$TMP/table"
[ "$(wc -l <"$TMP/table")" -eq 4 ] || fail "expected header + 3 rows"
grep -Eq '^allreduce +8 +20\.00 +10\.00 +2\.00x' "$TMP/table" || fail "allreduce 8 row"
grep -Eq '^allreduce +1M +400\.00 +500\.00 +0\.80x +2\.621 +2\.097$' "$TMP/table" || fail "allreduce 1M row"
grep -Eq '^allgather +1M .* 1\.00x' "$TMP/table" || fail "allgather 1M row"
grep -q broadcast "$TMP/table" && fail "broadcast is only in the tuned run"
grep -q 'only in the tuned run' "$TMP/err" || fail "missing note on unmatched sizes"
# Nothing in common / missing file: exit status 2.
rc=0; python3 "$SRC/scripts/gpu/compare.py" "$DATA/default.txt" /dev/null >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "no common rows should exit 2, got $rc"
rc=0; python3 "$SRC/scripts/gpu/compare.py" "$TMP/absent" "$DATA/tuned.txt" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "missing file should exit 2, got $rc"

# run.sh --dry-run: N ranks per run, distinct NCCL_HOSTID, loopback sockets, plugin only when tuned.
(cd "$TMP" && "$SRC/scripts/gpu/run.sh" --dry-run -n 3 --plugin lib/p.so --profile prof.json --db o.db \
   --out "$TMP/out") >"$TMP/dry"
cat "$TMP/dry"
[ "$(grep -c '^default rank' "$TMP/dry")" -eq 3 ] || fail "3 default ranks"
[ "$(grep -c '^tuned rank' "$TMP/dry")" -eq 3 ] || fail "3 tuned ranks"
[ "$(grep -o 'NCCL_HOSTID=[^ ]*' "$TMP/dry" | sort -u | wc -l)" -eq 3 ] || fail "distinct host ids"
grep '^default' "$TMP/dry" | grep -q 'NCCL_TUNER_PLUGIN=' && fail "default run must not set the plugin"
grep '^default rank 0' "$TMP/dry" | grep -q -- '-u NCCL_TUNER_PLUGIN' || fail "default run unsets the plugin"
grep '^tuned rank 2' "$TMP/dry" | grep -q "NCCL_TUNER_PLUGIN=$TMP/lib/p.so NCCL_PROFILER_PLUGIN=$TMP/lib/p.so" \
  || fail "tuned run takes the plugin by absolute path"
grep '^tuned rank 1' "$TMP/dry" | grep -q "DYNAMICCL_DB=$TMP/o.db" || fail "db path absolute"
grep '^tuned rank 1' "$TMP/dry" | grep -q "DYNAMICCL_PROFILE=$TMP/prof.json" || fail "profile path absolute"
grep -q 'NCCL_SOCKET_IFNAME=lo' "$TMP/dry" || fail "loopback sockets"
grep '^tuned rank 2' "$TMP/dry" | grep -q -- '--rank 2 --nranks 3' || fail "rank arguments"
# Bad arguments are refused before anything starts.
for bad in "-n 0" "-n x" "-i -1" "--bogus"; do
  rc=0; "$SRC/scripts/gpu/run.sh" --dry-run $bad --out "$TMP/out" >/dev/null 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "run.sh $bad should exit 2, got $rc"
done
echo "gpu_script_test: ok"
