#!/usr/bin/env bash
# The newcomer's first command: set up, build, run the main job on an embedded default (no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
"${BUILD_DIR:-build}"/offline/dynamiccl show --profile profiles/example-dgx-h100.json --nodes 2 --ranks 16 "$@"
