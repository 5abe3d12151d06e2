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
# own folder, built for time to first result (a fresh 2-core machine, no ccache: docs/BUILDING.md):
# no debug info, a unity build (each target's sources compiled a few at a time: the standard headers
# parsed once per batch, the heaviest precompiled once per group of targets), Ninja (a target compiles while those it links are still building), the tools
# at -O1 (the plugin, which a job may load from here, at -O2), no LibTorch (the demo never trains), no
# ccache (a fresh machine's cache is empty: it only adds its own cost).
# build/ and scripts/test.sh keep their own settings. BUILD_DIR=...: that folder as it is configured.
configure=()
if [ -z "${BUILD_DIR:-}" ]; then
  export BUILD_DIR=build-demo BUILD_TYPE=Release
  configure=(-DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG"
             -DDYNAMICCL_TESTS=OFF -DDYNAMICCL_BENCH=OFF -DDYNAMICCL_WITH_TORCH=OFF -DDYNAMICCL_LAB=OFF
             -DCMAKE_UNITY_BUILD=ON -DDYNAMICCL_PCH=ON -DDYNAMICCL_OFFLINE_OPT=-O1 -DDYNAMICCL_CCACHE=OFF)
  # GCC collects its garbage less often (measured 24.9 -> 23.1 s on the heaviest file; under 2 GiB a compile).
  if c++ --version 2>/dev/null | grep -q "Free Software"; then
    configure+=(-DCMAKE_CXX_FLAGS="--param ggc-min-expand=400 --param ggc-min-heapsize=1048576")
  fi
  # Ninja where it is installed and the folder is new (a folder keeps the generator it was made with).
  if command -v ninja >/dev/null && [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then configure+=(-G Ninja); fi
fi
TARGETS="dynamiccl dynamiccl_plugin" scripts/build.sh "${configure[@]}"
echo "=== demo.sh: build took $((SECONDS - start))s"
# The main job: a job replayed from the L40S measurements shipped here, verifying the simulator's
# profile in the job through the real plugin; then the verified profile, the table and plots (demo-out/).
"$BUILD_DIR"/offline/dynamiccl demo "$@"
