#!/usr/bin/env bash
# Installs what DynamICCL needs from Debian's packages (idempotent). DYNAMICCL_SKIP_APT=1 skips it.
# `setup.sh demo`: only what scripts/demo.sh builds (no test, benchmark or LibTorch packages).
set -euo pipefail
PKGS=(build-essential cmake ninja-build ccache pkg-config binutils
      libeigen3-dev libsqlite3-dev sqlite3 nlohmann-json3-dev libcli11-dev python3 python3-matplotlib)
# libcurl: loaded at run time for DYNAMICCL_ETCD; etcd: its tests
[ "${1:-all}" = demo ] || PKGS+=(libgtest-dev libgmock-dev libbenchmark-dev libtorch-dev libcurl4 etcd-server etcd-client
  python3-prometheus-client)  # the metrics file's test parses it with Prometheus's own parser
[ "${DYNAMICCL_SKIP_APT:-0}" = 1 ] && exit 0
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
