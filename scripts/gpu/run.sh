#!/usr/bin/env bash
# Runs nccl_bench as N ranks on one GPU (distinct NCCL_HOSTID: N "nodes" over sockets on loopback),
# once with NCCL's own tuning and once with DynamICCL as tuner + profiler, then prints the comparison.
# usage: scripts/gpu/run.sh [-n NRANKS] [-b MIN_BYTES] [-e MAX_BYTES] [-c COLLS] [-i ITERS]
#          [--plugin SO] [--profile FILE] [--db FILE] [--out DIR] [--dry-run]
# --dry-run prints each rank's environment and command instead of running (no GPU needed).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NRANKS=2 MIN=8 MAX=64M COLLS=allreduce,allgather,reducescatter ITERS=20 DRY=0
PLUGIN=${DYNAMICCL_PLUGIN:-$ROOT/build/plugin/libnccl-tuner-dynamiccl.so}
PROFILE=${DYNAMICCL_PROFILE:-} DB=${DYNAMICCL_DB:-} OUT=${OUT_DIR:-$ROOT/build-gpu/run}
BENCH=${NCCL_BENCH:-$ROOT/build-gpu/nccl_bench}
die() { echo "gpu/run: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -n) NRANKS=${2:?}; shift 2 ;;
    -b) MIN=${2:?}; shift 2 ;;
    -e) MAX=${2:?}; shift 2 ;;
    -c) COLLS=${2:?}; shift 2 ;;
    -i) ITERS=${2:?}; shift 2 ;;
    --plugin) PLUGIN=${2:?}; shift 2 ;;
    --profile) PROFILE=${2:?}; shift 2 ;;
    --db) DB=${2:?}; shift 2 ;;
    --out) OUT=${2:?}; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
  esac
done
[[ "$NRANKS" =~ ^[1-9][0-9]*$ ]] || die "-n must be a positive integer"
[[ "$ITERS" =~ ^[1-9][0-9]*$ ]] || die "-i must be a positive integer"
# NCCL loads plugins by absolute path here, so relative paths are made absolute first.
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
PLUGIN=$(abspath "$PLUGIN")
[ -n "$PROFILE" ] && PROFILE=$(abspath "$PROFILE")
[ -n "$DB" ] || DB=$OUT/observations.db
DB=$(abspath "$DB")
if [ "$DRY" = 0 ]; then
  [ -x "$BENCH" ] || die "no $BENCH: run scripts/gpu/build.sh first"
  [ -f "$PLUGIN" ] || die "no plugin at $PLUGIN (build first or pass --plugin)"
fi
mkdir -p "$OUT"

# run_ranks <label> [env(1) arguments: -u VAR ... VAR=value ...]: starts every rank, waits for all.
run_ranks() {
  local label=$1; shift
  local idfile="$OUT/$label.id" pids=() r rc=0
  rm -f "$idfile"
  for ((r = 0; r < NRANKS; r++)); do
    local envs=("$@" NCCL_HOSTID="dynamiccl-gpu-host-$r" NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1)
    local cmd=("$BENCH" --rank "$r" --nranks "$NRANKS" --id-file "$idfile" --min-bytes "$MIN"
               --max-bytes "$MAX" --colls "$COLLS" --iters "$ITERS")
    if [ "$DRY" = 1 ]; then
      echo "$label rank $r: ${envs[*]} ${cmd[*]}"
      continue
    fi
    env "${envs[@]}" "${cmd[@]}" >"$OUT/$label.rank$r.txt" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ "$rc" = 0 ] || die "$label run failed; see $OUT/$label.rank*.txt"
  return 0
}

# Unset rather than empty: NCCL's own tuning, no plugin of ours (or anyone's) in the baseline.
run_ranks default -u NCCL_TUNER_PLUGIN -u NCCL_PROFILER_PLUGIN -u DYNAMICCL_PROFILE
tuned_env=(NCCL_TUNER_PLUGIN="$PLUGIN" NCCL_PROFILER_PLUGIN="$PLUGIN" DYNAMICCL_DB="$DB")
[ -n "$PROFILE" ] && tuned_env+=(DYNAMICCL_PROFILE="$PROFILE")
run_ranks tuned "${tuned_env[@]}"
[ "$DRY" = 1 ] && exit 0
python3 "$ROOT/scripts/gpu/compare.py" "$OUT/default.rank0.txt" "$OUT/tuned.rank0.txt"
