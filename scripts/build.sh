#!/usr/bin/env bash
# Configures and builds into ${BUILD_DIR:-build}: everything, or only the targets named in TARGETS
# (space-separated, e.g. TARGETS="dynamiccl dynamiccl_plugin"). Extra arguments go to cmake's configure.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j"$(nproc)" ${TARGETS:+--target $TARGETS}
