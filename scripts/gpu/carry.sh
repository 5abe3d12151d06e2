#!/usr/bin/env bash
# Builds what scripts/gpu/torch_runs.sh carries to a GPU machine: the plugin (Release, stripped) and the
# one library it links that a bare CUDA image may lack (libsqlite3), into ${CARRY_DIR:-build-gpu-carry}.
#   scripts/gpu/carry.sh   then, there:  scripts/gpu/torch_runs.sh --plugin build-gpu-carry/libnccl-tuner-dynamiccl.so --libs build-gpu-carry/lib ...
set -euo pipefail
cd "$(dirname "$0")/../.."
CARRY=${CARRY_DIR:-build-gpu-carry}
BUILD_DIR=build-gpu-plugin BUILD_TYPE=Release TARGETS=dynamiccl_plugin scripts/build.sh
mkdir -p "$CARRY/lib"
cp build-gpu-plugin/plugin/libnccl-tuner-dynamiccl.so "$CARRY/"
strip --strip-unneeded "$CARRY/libnccl-tuner-dynamiccl.so"
sqlite=$(ldd "$CARRY/libnccl-tuner-dynamiccl.so" | awk '/libsqlite3/ {print $3}')
[ -n "$sqlite" ] && cp -L "$sqlite" "$CARRY/lib/"
ls -l "$CARRY" "$CARRY/lib"
