#!/usr/bin/env bash
# The newcomer's test command, and CI's (.ci/run): set up, build, run every test; then the same
# plugin side's tests under ASan+UBSan and the threaded tests under TSan (docs/HARDENING.md). Each stage prints
# its duration. DYNAMICCL_SANITIZE_STAGES=0 stops after the first stage.
set -euo pipefail
cd "$(dirname "$0")/.."
SANITIZE_STAGES=${DYNAMICCL_SANITIZE_STAGES:-1}
# The tests set the plugin's variables themselves; one left in the shell (an exported DYNAMICCL_DB, or
# DYNAMICCL_SANITIZE_STAGES itself) would be read by, or warned about in, every test that loads it.
for v in $(compgen -e | grep '^DYNAMICCL_' || true); do
  echo "test.sh: unset $v for the tests"
  unset "$v"
done
stage() {
  local name=$1 start=$SECONDS
  shift
  echo "=== test.sh: $name"
  "$@"
  echo "=== test.sh: $name took $((SECONDS - start))s"
}
tests() {
  scripts/build.sh "$@"
  (cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j"$(nproc)" --timeout 900)
}
stage "setup" scripts/setup.sh
stage "build + tests" tests "$@"
[ "$SANITIZE_STAGES" = 0 ] && exit 0
stage "ASan+UBSan: the plugin side" scripts/sanitize.sh address
stage "TSan: threaded tests" scripts/sanitize.sh thread
