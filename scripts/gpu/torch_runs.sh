#!/usr/bin/env bash
# The first run with a real client: PyTorch (torch.distributed, NCCL backend) as 2 and then 4 ranks on
# one GPU, each process its own NCCL_HOSTID (a "node" of its own, sockets on loopback), in five runs:
#   default       no plugin: NCCL's own choice
#   tuner_empty   tuner only, an empty profile (what loading the plugin costs)
#   tuner_forced  tuner only, scripts/gpu/forced-profile.json applied (DYNAMICCL_TRUST=all)
#   forced_profiled  as tuner_forced, with the profiler role recording every call (DYNAMICCL_BUDGET=record=1):
#                 what NCCL ran (store, observation CSV) and what profiling every call costs
#   readme        tuner + profiler as the README sets it up: the same rules unverified, so the job tests them
#   readme_empty  tuner + profiler as the README sets it up with an empty profile: what the profiler role
#                 costs where the profile names nothing to test (not in the default list)
# usage: scripts/gpu/torch_runs.sh --out DIR [--plugin SO] [--libs DIR] [--ranks "2 4"] [--runs "..."]
#          [--max-bytes 256M] [--budget-s 460] [--launch-timeout-s 75] [--mps] [--job ROUNDS] [--dry-run]
# DIR gets summary.md, env.txt and runs.tar.gz (every rank's log and timings, the stores, the
# observation CSVs), packed again after each launch so a cut-off run still returns what it measured,
# and at the end runs.png (scripts/gpu/plot_torch_runs.py).
# --mps: ranks share the GPU through CUDA MPS, so their kernels run side by side; without it the GPU
#   time-slices between the processes and every call waits whole slices (milliseconds). If the MPS
#   daemon does not start, or a CUDA client cannot reach it in 30 s, the runs go on without it (mps.txt).
# --libs: a folder put on LD_LIBRARY_PATH when the plugin's libraries are missing there (libsqlite3).
# --job ROUNDS: each rank runs torch_client.py's training-like job (ROUNDS rounds of a few calls where the
#   forced rules lose) instead of the sweep, and the summary is scripts/gpu/job_summary.py's: the whole
#   job's time against the default run's, measuring included, and how it went from the first rounds to the last;
#   runs.png is scripts/gpu/plot_job.py's.
# --dry-run prints each launch's ranks (environment and command) and the sweep, and runs nothing.
# Results are checked (torch_client.py, scripts/gpu/result_check.py): every warm-up call's output is
# compared with the exact result. A rank that saw a wrong result exits 3 after its sweep; the launch
# prints "n<ranks> <run>: RESULT MISMATCH [n<ranks>/<run>] <coll> <bytes> B, rank R: first mismatch at
# output index I: got X, expected Y", collected in OUT/mismatch.txt, and the script exits 1 at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/scripts/gpu
PLUGIN=$ROOT/build/plugin/libnccl-tuner-dynamiccl.so LIBS="" OUT="" DRY=0
RANKS="2 4" RUNS="default tuner_empty tuner_forced forced_profiled readme"
MAX=256M BUDGET_S=460 LAUNCH_S=75 MPS=0 JOB=0 PY=${PYTHON:-python3}
die() { echo "gpu/torch_runs: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=${2:?}; shift 2 ;;
    --plugin) PLUGIN=${2:?}; shift 2 ;;
    --libs) LIBS=${2:?}; shift 2 ;;
    --ranks) RANKS=${2:?}; shift 2 ;;
    --runs) RUNS=${2:?}; shift 2 ;;
    --max-bytes) MAX=${2:?}; shift 2 ;;
    --budget-s) BUDGET_S=${2:?}; shift 2 ;;
    --launch-timeout-s) LAUNCH_S=${2:?}; shift 2 ;;
    --mps) MPS=1; shift ;;
    --job) JOB=${2:?}; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
  esac
done
[ -n "$OUT" ] || die "--out DIR is required"
for n in $RANKS; do [[ "$n" =~ ^[1-9][0-9]?$ ]] || die "--ranks takes numbers of ranks 1..99, not '$n'"; done
for r in $RUNS; do
  case "$r" in default|tuner_empty|tuner_forced|forced_profiled|readme|readme_empty) ;; *) die "unknown run '$r'" ;; esac
done
[[ "$BUDGET_S" =~ ^[0-9]+$ && "$LAUNCH_S" =~ ^[1-9][0-9]*$ ]] || die "--budget-s and --launch-timeout-s take seconds"
[[ "$JOB" =~ ^[0-9]+$ ]] || die "--job takes a number of rounds"
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
PLUGIN=$(abspath "$PLUGIN") OUT=$(abspath "$OUT")
[ -n "$LIBS" ] && LIBS=$(abspath "$LIBS")
EMPTY=$HERE/empty-profile.json FORCED=$HERE/forced-profile.json
WORK=${GPU_RUNS_WORK:-/tmp/dynamiccl-gpu-runs}
mkdir -p "$OUT"

# run_env <run> <rank> <dir>: env(1) arguments for one rank of one run.
run_env() {
  local run=$1 r=$2 dir=$3
  local e=(-u NCCL_TUNER_PLUGIN -u NCCL_PROFILER_PLUGIN -u DYNAMICCL_PROFILE -u DYNAMICCL_TRUST
           -u DYNAMICCL_BUDGET -u DYNAMICCL_DB -u DYNAMICCL_VERIFY -u DYNAMICCL_ONLINE
           NCCL_HOSTID="dynamiccl-gpu-host-$r" NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 HOME="$dir/home"
           PYTHONUNBUFFERED=1 DYNAMICCL_COORD_DIR="$dir/coord")
  # Rank 0 logs NCCL's choices (TUNING prints on rank 0 only) and the plugin's INFO lines; others warn.
  if [ "$r" = 0 ]; then e+=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV); else e+=(NCCL_DEBUG=WARN); fi
  [ -n "$LIBS" ] && e+=(LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  case "$run" in
    default) ;;
    tuner_empty) e+=(NCCL_TUNER_PLUGIN="$PLUGIN" DYNAMICCL_PROFILE="$EMPTY") ;;
    tuner_forced) e+=(NCCL_TUNER_PLUGIN="$PLUGIN" DYNAMICCL_PROFILE="$FORCED" DYNAMICCL_TRUST=all) ;;
    forced_profiled) e+=(NCCL_TUNER_PLUGIN="$PLUGIN" NCCL_PROFILER_PLUGIN="$PLUGIN" DYNAMICCL_PROFILE="$FORCED"
                         DYNAMICCL_TRUST=all DYNAMICCL_BUDGET=record=1 DYNAMICCL_DB="$dir/store.db"
                         DYNAMICCL_OBSERVATION_LOG="$dir/obs.rank$r.csv") ;;
    readme) e+=(NCCL_TUNER_PLUGIN="$PLUGIN" NCCL_PROFILER_PLUGIN="$PLUGIN" DYNAMICCL_PROFILE="$FORCED"
                DYNAMICCL_DB="$dir/store.db" DYNAMICCL_OBSERVATION_LOG="$dir/obs.rank$r.csv") ;;
    readme_empty) e+=(NCCL_TUNER_PLUGIN="$PLUGIN" NCCL_PROFILER_PLUGIN="$PLUGIN" DYNAMICCL_PROFILE="$EMPTY"
                      DYNAMICCL_DB="$dir/store.db" DYNAMICCL_OBSERVATION_LOG="$dir/obs.rank$r.csv") ;;
  esac
  printf '%s\n' "${e[@]}"
}

pack() {
  [ "$DRY" = 1 ] && return 0
  local summary=torch_summary.py
  [ "$JOB" -gt 0 ] && summary=job_summary.py
  "$PY" "$HERE/$summary" "$WORK" >"$OUT/summary.md" 2>"$OUT/summary.err" || true
  tar -C "$WORK" -czf "$OUT/runs.tar.gz.part" . && mv "$OUT/runs.tar.gz.part" "$OUT/runs.tar.gz"
}

if [ "$DRY" = 0 ]; then
  rm -rf "$WORK"; mkdir -p "$WORK"
  [ -f "$PLUGIN" ] || die "no plugin at $PLUGIN"
  {
    date -u; nvidia-smi -L 2>&1 || true
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
    "$PY" - <<'EOF' 2>&1 || true
import torch, importlib.metadata as md
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())
for pkg in ("nvidia-nccl-cu13", "nvidia-nccl-cu12"):
    try:
        print(pkg, md.version(pkg))
    except md.PackageNotFoundError:
        pass
EOF
    echo "plugin: $PLUGIN"; ldd "$PLUGIN" 2>&1 || true
  } >"$OUT/env.txt"
  if ldd "$PLUGIN" | grep -q "not found" && [ -z "$LIBS" ]; then
    die "the plugin's libraries are missing here (see $OUT/env.txt); pass --libs"
  fi
  cp "$OUT/env.txt" "$WORK/env.txt"
  if [ "$MPS" = 1 ]; then
    export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps-pipe CUDA_MPS_LOG_DIRECTORY=$WORK/mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if timeout 20 nvidia-cuda-mps-control -d >"$WORK/mps.txt" 2>&1 &&
       timeout 30 "$PY" -c "import torch; torch.ones(1, device='cuda').sum().item()" >>"$WORK/mps.txt" 2>&1; then
      echo "on (nvidia-cuda-mps-control -d; a CUDA client reached it)" >>"$WORK/mps.txt"
      trap 'echo quit | timeout 20 nvidia-cuda-mps-control >/dev/null 2>&1 || true' EXIT
    else
      echo quit | timeout 20 nvidia-cuda-mps-control >/dev/null 2>&1 || true
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
      echo "off: the daemon did not start or no client reached it (output above); ranks time-slice" >>"$WORK/mps.txt"
    fi
    cat "$WORK/mps.txt"
  fi
fi

start=$SECONDS port=29500
for n in $RANKS; do
  for run in $RUNS; do
    dir=$WORK/n$n/$run
    port=$((port + 11))
    if [ "$DRY" = 0 ]; then
      left=$((BUDGET_S - (SECONDS - start)))
      if [ "$left" -lt 20 ]; then
        echo "gpu/torch_runs: n$n $run skipped: ${left}s of the ${BUDGET_S}s budget left" | tee -a "$WORK/skipped.txt"
        continue
      fi
      mkdir -p "$dir/home" "$dir/coord"
    fi
    limit=$LAUNCH_S
    [ "$DRY" = 0 ] && [ "$left" -lt "$limit" ] && limit=$left
    pids=() t0=$SECONDS
    for ((r = 0; r < n; r++)); do
      mapfile -t envs < <(run_env "$run" "$r" "$dir")
      cmd=(timeout -k 5 "$limit" "$PY" "$HERE/torch_client.py" --rank "$r" --world "$n" --port "$port"
           --label "n$n/$run" --max-bytes "$MAX" --out "$dir/rank$r.jsonl")
      [ "$JOB" -gt 0 ] && cmd+=(--job "$JOB")
      if [ "$DRY" = 1 ]; then
        echo "n$n $run rank $r: env ${envs[*]} ${cmd[*]}"
        continue
      fi
      env "${envs[@]}" "${cmd[@]}" >"$dir/rank$r.log" 2>&1 &
      pids+=($!)
    done
    [ "$DRY" = 1 ] && continue
    rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=$?; done
    echo "n$n $run: exit $rc after $((SECONDS - t0))s" | tee "$dir/status.txt"
    bad=$(grep -h '^torch_client: RESULT MISMATCH' "$dir"/rank*.log 2>/dev/null | head -n 1 || true)
    [ -n "$bad" ] && echo "n$n $run: ${bad#torch_client: }" | tee -a "$WORK/mismatch.txt" >&2
    pack
  done
done
if [ "$DRY" = 1 ]; then
  echo "sweep:"; "$PY" "$HERE/torch_client.py" --plan --world 2 --max-bytes "$MAX" --job "$JOB"
  exit 0
fi
plot=plot_torch_runs.py
[ "$JOB" -gt 0 ] && plot=plot_job.py
"$PY" "$HERE/$plot" "$WORK" "$OUT/runs.png" >"$OUT/plot.log" 2>&1 || true  # needs matplotlib
echo "gpu/torch_runs: done in $((SECONDS - start))s; $OUT/summary.md"
if [ -s "$WORK/mismatch.txt" ]; then
  cp "$WORK/mismatch.txt" "$OUT/mismatch.txt"
  echo "gpu/torch_runs: FAILED: wrong collective results in $(wc -l <"$OUT/mismatch.txt") run(s), $OUT/mismatch.txt" >&2
  exit 1
fi
