#!/usr/bin/env bash
# The newcomer's first command: set up, build what the main job runs, run it on an embedded default (no GPU).
# Prints how long the packages and the build took.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/setup.sh demo
echo "=== demo.sh: packages took $((SECONDS - start))s"
start=$SECONDS
# Only the main job's programs, the dynamiccl command and the plugin library its job loads, into their
# own folder without debug info (a third less compile time; build/ and scripts/test.sh keep theirs).
# BUILD_DIR=...: that folder as it is configured (e.g. build/, which scripts/build.sh makes).
configure=()
if [ -z "${BUILD_DIR:-}" ]; then
  export BUILD_DIR=build-demo BUILD_TYPE=Release
  configure=(-DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG"
             -DDYNAMICCL_TESTS=OFF -DDYNAMICCL_BENCH=OFF)
fi
TARGETS="dynamiccl dynamiccl_plugin" scripts/build.sh "${configure[@]}"
echo "=== demo.sh: build took $((SECONDS - start))s"
# The main job: a job replayed from the L40S measurements shipped here, verifying the simulator's
# profile in the job through the real plugin; then the verified profile, the table and plots (demo-out/).
"$BUILD_DIR"/offline/dynamiccl demo "$@"
