#!/usr/bin/env bash
# The newcomer's first command: set up, build, run the main job on an embedded default (no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# The main job: simulate, tune, train, export, replay through the real plugin, plot (into demo-out/).
"${BUILD_DIR:-build}"/offline/dynamiccl demo "$@"
