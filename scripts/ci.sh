#!/usr/bin/env bash
# CI (.ci/run): the newcomer's test command, then the same tests under ASan+UBSan, then the threaded
# tests under TSan. Each stage prints its duration. DYNAMICCL_CI_SANITIZE=0 stops after the first.
set -euo pipefail
cd "$(dirname "$0")/.."
stage() {
  local name=$1 start=$SECONDS; shift
  echo "=== ci: $name"
  "$@"
  echo "=== ci: $name took $((SECONDS - start))s"
}
stage "build + tests" scripts/test.sh
[ "${DYNAMICCL_CI_SANITIZE:-1}" = 0 ] && exit 0
stage "address,undefined" scripts/sanitize.sh address
stage "thread (subset)" scripts/sanitize.sh thread
