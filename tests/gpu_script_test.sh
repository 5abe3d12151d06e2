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

# torch_runs.sh --dry-run: five runs per layout, 2 then 4 ranks, each rank bounded by timeout.
(cd "$TMP" && "$SRC/scripts/gpu/torch_runs.sh" --dry-run --out "$TMP/tout" --plugin lib/p.so) >"$TMP/tdry"
[ "$(grep -c '^n2 .* rank ' "$TMP/tdry")" -eq 10 ] || fail "5 runs x 2 ranks"
[ "$(grep -c '^n4 .* rank ' "$TMP/tdry")" -eq 20 ] || fail "5 runs x 4 ranks"
[ "$(grep '^n4 readme' "$TMP/tdry" | grep -o 'NCCL_HOSTID=[^ ]*' | sort -u | wc -l)" -eq 4 ] || fail "distinct host ids"
grep -v '^n[24] .* rank .* timeout -k 5 [0-9]* ' "$TMP/tdry" | grep -q ' rank ' && fail "every rank under timeout"
grep '^n2 default rank 0' "$TMP/tdry" | grep -q 'NCCL_TUNER_PLUGIN=' && fail "default run loads no plugin"
grep '^n2 tuner_empty rank 1' "$TMP/tdry" | grep -q "NCCL_TUNER_PLUGIN=$TMP/lib/p.so DYNAMICCL_PROFILE=$SRC/scripts/gpu/empty-profile.json" \
  || fail "tuner_empty: plugin by absolute path, empty profile"
grep '^n2 tuner_empty' "$TMP/tdry" | grep -q 'NCCL_PROFILER_PLUGIN=' && fail "tuner_empty has no profiler"
grep '^n2 tuner_forced rank 0' "$TMP/tdry" | grep -q 'forced-profile.json DYNAMICCL_TRUST=all' || fail "tuner_forced opts in"
grep '^n2 forced_profiled rank 1' "$TMP/tdry" | grep -q 'NCCL_PROFILER_PLUGIN=.* DYNAMICCL_TRUST=all DYNAMICCL_BUDGET=record=1' \
  || fail "forced_profiled profiles every call under the same rules"
grep '^n2 readme rank 0' "$TMP/tdry" | grep -q 'NCCL_PROFILER_PLUGIN=' || fail "readme run has the profiler role"
grep '^n2 readme rank 0' "$TMP/tdry" | grep -Eq 'DYNAMICCL_TRUST=|DYNAMICCL_BUDGET=' && fail "readme run keeps the defaults"
grep -q '^allreduce 268435456 warmup=3 timed=5$' "$TMP/tdry" || fail "sweep reaches 256 MiB"
grep -q '^allgather 8 ' "$TMP/tdry" || fail "sweep starts at 8 B"
for bad in "--ranks 0" "--runs bogus" "--budget-s x" "--nope"; do
  rc=0; "$SRC/scripts/gpu/torch_runs.sh" --dry-run --out "$TMP/tout" $bad >/dev/null 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "torch_runs.sh $bad should exit 2, got $rc"
done
# The profiles the runs use load as the plugin reads them (validate is the plugin's own reader).
if [ -n "${DYNAMICCL_CLI:-}" ]; then
  "$DYNAMICCL_CLI" validate "$SRC/scripts/gpu/empty-profile.json" | grep -q '0 rules' || fail "empty profile"
  "$DYNAMICCL_CLI" validate "$SRC/scripts/gpu/forced-profile.json" | grep -q '7 rules' || fail "forced profile"
fi
# The training-like job (--job): readme_empty takes the empty profile with the profiler role; the client runs the job.
(cd "$TMP" && "$SRC/scripts/gpu/torch_runs.sh" --dry-run --out "$TMP/jout" --plugin lib/p.so --ranks 2 \
   --runs "default readme_empty" --job 50) >"$TMP/jdry"
grep '^n2 readme_empty rank 1' "$TMP/jdry" | grep -q "NCCL_PROFILER_PLUGIN=$TMP/lib/p.so DYNAMICCL_PROFILE=$SRC/scripts/gpu/empty-profile.json" \
  || fail "readme_empty: profiler role, empty profile"
[ "$(grep -c '^n2 .* rank .* --job 50$' "$TMP/jdry")" -eq 4 ] || fail "every rank runs the job"
grep -q '^job allreduce 16777216 x 50 rounds$' "$TMP/jdry" || fail "the job's mix"
rc=0; "$SRC/scripts/gpu/torch_runs.sh" --dry-run --out "$TMP/jout" --job x >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--job x should exit 2, got $rc"
# job_summary.py on a canned job: the whole job's time over default's, and first rounds against the last third.
python3 "$SRC/scripts/gpu/job_summary.py" "$DATA/torch_job" >"$TMP/jsum"
cat "$TMP/jsum"
grep -q '^| readme | 300 | 0.30 | 1.167 | 0.40 | 0.800 |$' "$TMP/jsum" || fail "readme's job against default's"
grep -q '^| allreduce 2M | 800.0 | readme | 2.00 | 0.75 |$' "$TMP/jsum" || fail "first rounds and last third"
grep -q '^- readme: DynamICCL: online: communicator 00000000000000aa measured 100 of 600 calls' "$TMP/jsum" \
  || fail "the plugin's closing line"
grep -q 'observations delivered' "$TMP/jsum" && fail "only the closing lines"
if python3 -c 'import matplotlib' 2>/dev/null; then  # scripts/setup.sh installs it
  python3 "$SRC/scripts/gpu/plot_job.py" "$DATA/torch_job" "$TMP/job.png" >/dev/null || fail "plot_job"
  [ -s "$TMP/job.png" ] || fail "plot_job wrote no plot"
  mkdir -p "$TMP/nodefault/n2/readme" && cp "$DATA/torch_job/n2/readme/rank0.jsonl" "$TMP/nodefault/n2/readme/"
  rc=0; python3 "$SRC/scripts/gpu/plot_job.py" "$TMP/nodefault" "$TMP/none.png" >/dev/null 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "plot_job without a default run should exit 2, got $rc"
fi
# torch_summary.py on a canned work folder: ratios to the default, NCCL's picks, the profiler's cost and rows.
python3 "$SRC/scripts/gpu/torch_summary.py" "$DATA/torch_runs" >"$TMP/sum"
cat "$TMP/sum"
grep -q '^| 8 | 10.0 | 30% | RING/LL | 1.00 | 2.00 | RING/SIMPLE 2/3, RING/LL 1/3 | +10.0% | 1.10 | 1.00 | 1.0 | 0.82 |$' "$TMP/sum" \
  || fail "allreduce 8 B row"
grep -q '^| 1M | 100.0 | 0% | RING/SIMPLE | 1.01 | 1.10 | RING/LL | +10.0% | 1.00 | 1.00 | 4.0 | 0.95 |$' "$TMP/sum" \
  || fail "allgather 1M row (observations keyed by the total, as the plugin writes them)"
grep -q 'n2 tuner_forced: allreduce 8 -> RING/SIMPLE, 1 channels' "$TMP/sum" || fail "TUNING excerpt"
grep -q '14 observations delivered' "$TMP/sum" || fail "profiler summary line"
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 "$SRC/scripts/gpu/plot_torch_runs.py" "$DATA/torch_runs" "$TMP/runs.png" || fail "plot"
  [ -s "$TMP/runs.png" ] || fail "plot wrote no PNG"
fi
# --bands: ratios by size band; against a second folder (here the same one) the A/A rows are zero.
python3 "$SRC/scripts/gpu/torch_summary.py" --bands "$DATA/torch_runs" "$DATA/torch_runs" >"$TMP/bands"
cat "$TMP/bands"
grep -q '^| profiled every call / forced | +10.0% | +10.0% | - |$' "$TMP/bands" || fail "profiler cost by band"
grep -q '^| A/A default, this run / the other | +0.0% | +0.0% | - |$' "$TMP/bands" || fail "A/A row"
rc=0; python3 "$SRC/scripts/gpu/torch_summary.py" --bands "$DATA/torch_runs" a b >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--bands takes one or two folders, got exit $rc"
rc=0; python3 "$SRC/scripts/gpu/torch_summary.py" "$TMP/absent" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "missing folder should exit 2, got $rc"
echo "gpu_script_test: ok"
