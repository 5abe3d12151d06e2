#!/usr/bin/env bash
# Builds scripts/gpu/nccl_bench into ${GPU_BUILD_DIR:-build-gpu}; only where nvcc and a GPU exist.
#   scripts/gpu/build.sh [--compile-only]   (--compile-only: skip the GPU check, just compile)
set -euo pipefail
cd "$(dirname "$0")/../.."
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
OUT_DIR=${GPU_BUILD_DIR:-build-gpu}
[ -x "$NVCC" ] || command -v "$NVCC" >/dev/null || { echo "gpu/build: nvcc not found ($NVCC)" >&2; exit 2; }
if [ "${1:-}" != --compile-only ]; then
  command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || { echo "gpu/build: no GPU (nvidia-smi)" >&2; exit 2; }
fi
# NCCL may sit in the CUDA tree (lib or lib64) or under NCCL_HOME.
NCCL_HOME=${NCCL_HOME:-$CUDA_HOME}
mkdir -p "$OUT_DIR"
"$NVCC" -O2 -std=c++17 scripts/gpu/nccl_bench.cpp -o "$OUT_DIR/nccl_bench" \
  -I"$NCCL_HOME/include" -I"$CUDA_HOME/include" -L"$NCCL_HOME/lib" -L"$NCCL_HOME/lib64" -L"$CUDA_HOME/lib64" \
  -Xlinker -rpath -Xlinker "$NCCL_HOME/lib" -lnccl -lcudart
echo "gpu/build: $OUT_DIR/nccl_bench"
