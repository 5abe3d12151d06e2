#!/usr/bin/env bash
# Builds the libFuzzer targets (clang++, ASan+UBSan) into build-fuzz and runs each for RUNS inputs.
# Usage: scripts/fuzz.sh [RUNS (default 1000000)] [target ...]   (default: every target in fuzz/)
# The seed corpus in fuzz/corpus/<target> is read only; new inputs go to build-fuzz/corpus/<target>,
# crashes to build-fuzz/artifacts/. Exit status is non-zero if any target found something.
# FUZZ_MAX_LEN caps input size (default 16384; 131072 for fuzz_profile_json, whose deep-nesting seeds
# only reach the nesting bound of the reader beyond 40 KB).
# FUZZ_MAX_TIME (seconds, default 0 = none) stops a target early; the log says how far it got.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-1000000}
shift || true
ALL=(fuzz_profile_json fuzz_nvidia_csv fuzz_nccl_tests_log fuzz_interchange_csv)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz: clang++ (with libFuzzer) is required" >&2; exit 2; }

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DDYNAMICCL_FUZZ=ON \
  -DDYNAMICCL_SANITIZE=address,undefined -DDYNAMICCL_TESTS=OFF -DDYNAMICCL_BENCH=OFF \
  -DDYNAMICCL_WITH_TORCH=OFF >/dev/null
cmake --build "$BUILD_DIR" -j"${JOBS:-2}" --target "${TARGETS[@]}"

mkdir -p "$BUILD_DIR/artifacts"
status=0
for t in "${TARGETS[@]}"; do
  mkdir -p "$BUILD_DIR/corpus/$t"
  start=$(date +%s)
  max_len=16384
  [ "$t" = fuzz_profile_json ] && max_len=131072
  if "$BUILD_DIR/fuzz/$t" -runs="$RUNS" -max_len="${FUZZ_MAX_LEN:-$max_len}" -max_total_time="${FUZZ_MAX_TIME:-0}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$BUILD_DIR/artifacts/$t-" "$BUILD_DIR/corpus/$t" "fuzz/corpus/$t" \
       >"$BUILD_DIR/$t.log" 2>&1; then result=ok; else result=FOUND; status=1; fi
  execs=$(grep -m1 'stat::number_of_executed_units' "$BUILD_DIR/$t.log" | awk '{print $2}')
  echo "fuzz: $t: $result, ${execs:-?} executions in $(( $(date +%s) - start ))s (log: $BUILD_DIR/$t.log)"
  [ "$result" = ok ] || grep -m5 -E 'ERROR|SUMMARY|Test unit written' "$BUILD_DIR/$t.log" || true
done
exit $status
