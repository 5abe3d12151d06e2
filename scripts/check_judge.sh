#!/usr/bin/env bash
# `dynamiccl replay` against the independent judge (../shared/tools/judge.py) on every dataset of
# ../shared/data, same library, profile, trust and hardware: prints agree/disagree per dataset.
# Skipped (exit 0) where ../shared is absent (a fresh clone). usage: scripts/check_judge.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
SHARED=${DYNAMICCL_SHARED_DIR:-$SRC/../shared}
[ -d "$SHARED/data" ] && [ -f "$SHARED/tools/judge.py" ] || { echo "check_judge: no $SHARED/data or tools/judge.py: skipped"; exit 0; }
[ -x "$BUILD/offline/dynamiccl" ] || { echo "check_judge: build dynamiccl first ($BUILD/offline/dynamiccl)" >&2; exit 2; }
exec python3 "$SRC/scripts/check_judge.py" "$BUILD" "$SHARED" ${2:+--out "$2"}
