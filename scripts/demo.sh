#!/usr/bin/env bash
# The newcomer's first command: set up, build, run the main job on an embedded default (no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# The main job: a job replayed from the L40S measurements shipped here, verifying the simulator's
# profile in the job through the real plugin; then the verified profile, the table and plots (demo-out/).
"${BUILD_DIR:-build}"/offline/dynamiccl demo "$@"
