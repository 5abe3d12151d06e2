#!/usr/bin/env bash
# Measures one forced configuration with nccl-tests: writes a one-rule DynamICCL profile, runs the
# *_perf binary under mpirun/srun (or directly) with NCCL_TUNER_PLUGIN + DYNAMICCL_PROFILE, and
# prints one out-of-place time_us per line (one line per nccl-tests cycle, -N).
# Used by `dynamiccl tune --backend runner`; runnable by hand on a cluster:
#   scripts/measure_nccl_tests.sh --launcher srun --nccl-tests-dir ~/nccl-tests/build \
#     --plugin /path/libnccl-tuner-dynamiccl.so --collective allreduce --bytes 1048576 --iters 20 \
#     --nranks 16 --nnodes 2 --algo ring --proto ll128 [--channels 8] [--chunk 131072] [-- extra launcher args]
# Sweep mode (`tune --backend runner --search runs`): --max-bytes M runs every power of two from
# --bytes to M in one job (-f 2) and prints nccl-tests' result rows as they are; a run of NCCL's
# default also prints NCCL's TUNING lines, which say what NCCL ran at each size.
set -euo pipefail

launcher=mpirun coll=allreduce bytes=1048576 maxbytes=0 iters=20 nranks=8 nnodes=1 algo=default proto=default
channels=0 chunk=0 nthreads=0 buffsize=0 warmup=${DYNAMICCL_MEASURE_WARMUP:-5}
dir=${NCCL_TESTS_DIR:-} plugin=${DYNAMICCL_PLUGIN:-dynamiccl}
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --launcher) launcher=$2; shift 2 ;;
    --collective) coll=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --max-bytes) maxbytes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --nranks) nranks=$2; shift 2 ;;
    --nnodes) nnodes=$2; shift 2 ;;
    --algo) algo=$2; shift 2 ;;
    --proto) proto=$2; shift 2 ;;
    --channels) channels=$2; shift 2 ;;
    --chunk) chunk=$2; shift 2 ;;
    --nthreads) nthreads=$2; shift 2 ;;
    --buffsize) buffsize=$2; shift 2 ;;
    --nccl-tests-dir) dir=$2; shift 2 ;;
    --plugin) plugin=$2; shift 2 ;;
    --) shift; extra+=("$@"); break ;;
    *) extra+=("$1"); shift ;;
  esac
done

case "$coll" in
  allreduce) bin=all_reduce_perf ;;
  allgather) bin=all_gather_perf ;;
  reducescatter) bin=reduce_scatter_perf ;;
  broadcast) bin=broadcast_perf ;;
  reduce) bin=reduce_perf ;;
  *) echo "measure_nccl_tests: unsupported collective $coll" >&2; exit 2 ;;
esac
exe=${dir:+$dir/}$bin
[[ -n "$dir" && ! -x "$exe" ]] && { echo "measure_nccl_tests: $exe not found" >&2; exit 2; }

# One rule covering every size of this collective: the plugin forces exactly this configuration.
profile=$(mktemp "${TMPDIR:-/tmp}/dynamiccl-measure-XXXXXX.json")
trap 'rm -f "$profile"' EXIT
fields=""
[[ "$algo" != default ]] && fields+=",\"algo\":\"$algo\",\"proto\":\"$proto\""
[[ "$channels" -gt 0 ]] && fields+=",\"channels\":$channels"
[[ "$chunk" -gt 0 ]] && fields+=",\"chunk\":$chunk"
if [[ -n "$fields" ]]; then
  echo "{\"format\":\"dynamiccl-profile\",\"version\":1,\"name\":\"measure\",\"rules\":[{\"collective\":\"$coll\",\"bytes\":[0,18446744073709551615]$fields}]}" >"$profile"
else
  echo '{"format":"dynamiccl-profile","version":1,"name":"measure-default","rules":[]}' >"$profile"
fi
export NCCL_TUNER_PLUGIN=$plugin DYNAMICCL_PROFILE=$profile
envs=(NCCL_TUNER_PLUGIN DYNAMICCL_PROFILE)
[[ "$nthreads" -gt 0 ]] && { export NCCL_NTHREADS=$nthreads; envs+=(NCCL_NTHREADS); }
[[ "$buffsize" -gt 0 ]] && { export NCCL_BUFFSIZE=$buffsize; envs+=(NCCL_BUFFSIZE); }

# Samples: up to 5 cycles (-N), each the mean over its share of the iterations.
cycles=$(( iters < 5 ? iters : 5 )); (( cycles < 1 )) && cycles=1
per=$(( (iters + cycles - 1) / cycles ))
last=$bytes; (( maxbytes > bytes )) && last=$maxbytes
cmd=("$exe" -b "$bytes" -e "$last" -f 2 -n "$per" -w "$warmup" -N "$cycles" -g 1 -c 0)
if (( maxbytes > 0 )) && [[ "$algo" == default ]]; then
  export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING; envs+=(NCCL_DEBUG NCCL_DEBUG_SUBSYS)
fi
case "$launcher" in
  mpirun)
    xs=(); for e in "${envs[@]}"; do xs+=(-x "$e"); done
    run=(mpirun -np "$nranks" "${xs[@]}" "${extra[@]}" "${cmd[@]}") ;;
  srun) run=(srun -n "$nranks" -N "$nnodes" --export=ALL "${extra[@]}" "${cmd[@]}") ;;
  none) run=("${cmd[@]}" "${extra[@]}") ;;
  *) echo "measure_nccl_tests: launcher must be mpirun, srun or none" >&2; exit 2 ;;
esac

out=$("${run[@]}" 2>&1) || { echo "measure_nccl_tests: ${run[*]} failed" >&2; echo "$out" | tail -5 >&2; exit 1; }
if (( maxbytes > 0 )); then  # sweep: result rows and NCCL's TUNING lines, parsed by the tuner
  echo "$out" | awk '$1 ~ /^[0-9]+$/ && NF >= 9 || / Bytes -> Algo /'
  exit 0
fi
# Result rows: size count type redop root time algbw busbw #wrong ...; field 6 = out-of-place us.
times=$(echo "$out" | awk -v b="$bytes" '$1 !~ /^#/ && $1 == b && NF >= 9 { print $6 }')
[[ -z "$times" ]] && { echo "measure_nccl_tests: no result row for $bytes B" >&2; echo "$out" | tail -5 >&2; exit 1; }
echo "$times"
