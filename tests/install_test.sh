#!/usr/bin/env bash
# cmake --install into a temporary prefix, then use only what was installed, from outside the source
# tree (hidden when user namespaces allow): the plugin by name on the loader path as NCCL finds it,
# and the dynamiccl command's data under share/dynamiccl. usage: install_test.sh <cmake> <build dir> <source dir>
set -euo pipefail
CMAKE=${1:?cmake} BUILD=${2:?build dir} SRC=${3:?source dir}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
P="$TMP/prefix"

"$CMAKE" --install "$BUILD" --prefix "$P" >"$TMP/install.log" || { cat "$TMP/install.log"; fail "cmake --install"; }
for f in lib/libnccl-tuner-dynamiccl.so bin/dynamiccl share/dynamiccl/offline/platforms/dgx-h100.json \
         share/dynamiccl/offline/platforms/calibration/h100-ib-cluster-xxrjun.json \
         share/dynamiccl/profiles/example-dgx-h100.json share/dynamiccl/scripts/plot_demo.py \
         share/dynamiccl/scripts/measure_nccl_tests.sh \
         share/dynamiccl/offline/demo/data/l40s-pcie-cs244c/normalized.csv \
         share/dynamiccl/offline/demo/data/l40s-pcie-cs244c/PROVENANCE.md \
         share/doc/dynamiccl/README.md share/doc/dynamiccl/PROFILE_FORMAT.md share/doc/dynamiccl/SCHEMA.md \
         include/dynamiccl/abi/nccl_abi.h lib/cmake/DynamICCL/DynamICCLConfig.cmake; do
  [ -f "$P/$f" ] || fail "not installed: $f"
done
[ -x "$P/bin/dynamiccl" ] || fail "bin/dynamiccl is not executable"
[ -x "$P/share/dynamiccl/scripts/measure_nccl_tests.sh" ] || fail "the runner's measurement script is not executable"
# LibTorch only in the training module, never in the command or the plugin.
for f in "$P/bin/dynamiccl" "$P/lib/libnccl-tuner-dynamiccl.so"; do
  ! readelf -d "$f" | grep -q 'NEEDED.*torch' || fail "$f links LibTorch"
done
if grep -q '^DYNAMICCL_HAVE_TORCH:INTERNAL=ON' "$BUILD/CMakeCache.txt"; then
  [ -f "$P"/lib*/dynamiccl/libdynamiccl-train.so ] || fail "not installed: the training module <libdir>/dynamiccl/libdynamiccl-train.so"
fi
extra=$(find "$P" -name '*.a' -o -name '*_test' -o -name 'bench_*')
[ -z "$extra" ] || fail "installed what should not be: $extra"
grep -q 'DynamICCL::abi' "$P"/lib/cmake/DynamICCL/DynamICCLTargets.cmake || fail "no DynamICCL::abi target"

# A platform only the installed data folder has: listed only if the installed dynamiccl reads it.
python3 - "$P/share/dynamiccl/offline/platforms" <<'PY'
import json, sys
d = sys.argv[1]
p = json.load(open(d + "/dgx-h100.json"))
p["name"], p["systems"] = "installtest-only", ["INSTALLTEST-ONLY"]
json.dump(p, open(d + "/installtest-only.json", "w"))
PY

cat >"$TMP/run.sh" <<RUN
set -eu
cd "$TMP"
env -u DYNAMICCL_PLUGIN_PATH -u DYNAMICCL_PLATFORM_DIR -u DYNAMICCL_SCRIPTS_DIR -u DYNAMICCL_PROFILE \
  NCCL_TUNER_PLUGIN=dynamiccl LD_LIBRARY_PATH="$P/lib" PATH="$P/bin:/usr/bin:/bin" sh -c '
  dynamiccl show --plugin "\$NCCL_TUNER_PLUGIN" --profile "$P/share/dynamiccl/profiles/example-dgx-h100.json" \
    --nodes 2 --ranks 16 --trust all >"$TMP/show.out" 2>&1
  dynamiccl env "$P/share/dynamiccl/profiles/example-dgx-h100.json" >"$TMP/env.out" 2>&1
  dynamiccl sim --preset installtest-only >"$TMP/sim-help.out" 2>&1
  dynamiccl tune --help >"$TMP/tune-help.out" 2>&1'
RUN
if unshare -rm true 2>/dev/null; then
  unshare -rm sh -c "mount -t tmpfs none '$SRC' && sh '$TMP/run.sh'" || { cat "$TMP"/*.out; fail "installed dynamiccl failed"; }
  [ -e "$SRC/README.md" ] || fail "the source tree is gone outside the namespace"
else
  echo "note: no user namespaces; the source tree stays reachable"
  sh "$TMP/run.sh" || { cat "$TMP"/*.out; fail "installed dynamiccl failed"; }
fi

cat "$TMP/show.out"
grep -q 'plugin libnccl-tuner-dynamiccl.so (tuner v' "$TMP/show.out" || fail "show did not load the plugin by name"
grep -Eq '^ +8M \.\. 4G +RING/SIMPLE channels=32$' "$TMP/show.out" || fail "show printed not the profile's decisions"
cat "$TMP/env.out"
grep -qx 'export NCCL_TUNER_PLUGIN=dynamiccl' "$TMP/env.out" || fail "env: no NCCL_TUNER_PLUGIN=dynamiccl"
grep -qF "export LD_LIBRARY_PATH=$P/lib" "$TMP/env.out" || fail "env: no LD_LIBRARY_PATH with the prefix's lib"
grep -qF "(data: $P/share/dynamiccl)" "$TMP/env.out" || fail "env: data root is not the installed one"
grep -q 'installtest-only' "$TMP/sim-help.out" || fail "the installed platform folder was not read"
grep -qF "$P/share/dynamiccl/scripts/measure_nccl_tests.sh" "$TMP/tune-help.out" ||
  fail "tune --backend runner's default script is not the installed one"
echo "install test passed"
