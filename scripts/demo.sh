#!/usr/bin/env bash
# The newcomer's first command: set up, build what the main job runs, run it on an embedded default (no GPU).
# Prints how long the packages and the build took.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/setup.sh
echo "=== demo.sh: packages took $((SECONDS - start))s"
start=$SECONDS
# Only the main job's programs: the dynamiccl command and the plugin library its job loads (the tests,
# benchmarks and the LibTorch training module are scripts/test.sh's and scripts/build.sh's).
TARGETS="dynamiccl dynamiccl_plugin" scripts/build.sh
echo "=== demo.sh: build took $((SECONDS - start))s"
# The main job: a job replayed from the L40S measurements shipped here, verifying the simulator's
# profile in the job through the real plugin; then the verified profile, the table and plots (demo-out/).
"${BUILD_DIR:-build}"/offline/dynamiccl demo "$@"
