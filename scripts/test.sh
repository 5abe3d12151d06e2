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
# A new build folder is configured for the time a fresh clone takes (CI: 2 cores, no ccache): a unity
# build (each target's sources compiled a few at a time), Ninja, the offline tool at -O1 (the plugin
# and the libraries the job links keep the build type's -O2). Cold, 24 min -> 10 min on 2 cores.
# A folder already configured keeps its settings; extra arguments go to cmake's configure.
tests() {
  local dir=${BUILD_DIR:-build} fast=()
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    fast=(-DCMAKE_UNITY_BUILD=ON -DDYNAMICCL_OFFLINE_OPT=-O1)
    if command -v ninja >/dev/null; then fast+=(-G Ninja); fi
  fi
  scripts/build.sh "${fast[@]}" "$@"
  (cd "$dir" && ctest --output-on-failure -j"$(nproc)" --timeout 900)
}
stage "setup" scripts/setup.sh
stage "build + tests" tests "$@"
[ "$SANITIZE_STAGES" = 0 ] && exit 0
stage "ASan+UBSan: the plugin side" scripts/sanitize.sh address
stage "TSan: threaded tests" scripts/sanitize.sh thread
