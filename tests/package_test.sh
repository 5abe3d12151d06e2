#!/usr/bin/env bash
# cpack -G DEB into a temporary folder, then per package: its files unpacked into a temporary root,
# every NEEDED library of every ELF file there must be covered by a declared dependency (the Debian
# package that owns it, dpkg -S, or the one of ours that ships it); the plugin's package depends on no
# LibTorch; every ELF file is stripped and its debug info is in a -dbgsym package (by build id); the
# runner's measurement script is installed executable. Prints each package's size.
# usage: package_test.sh <cpack> <build dir>. Exit 77 (skipped) without dpkg's tools.
set -euo pipefail
CPACK=${1:?cpack} BUILD=${2:?build dir}
for t in dpkg-deb dpkg-shlibdeps dpkg readelf file ldconfig; do
  command -v "$t" >/dev/null || { echo "package test: no $t: skipped"; exit 77; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$TMP" && "$CPACK" -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP/out" >"$TMP/cpack.log" 2>&1) ||
  { tail -30 "$TMP/cpack.log"; fail "cpack -G DEB"; }
shopt -s nullglob
debs=("$TMP"/out/*.deb) ddebs=("$TMP"/out/*.ddeb)
[ ${#debs[@]} -ge 2 ] || fail "expected the plugin's and the tools' packages, got: ${debs[*]##*/}"

# Every package unpacked: root/<package>/..., and which of our packages ships each file name.
declare -A ours deps
mkdir -p "$TMP/root" "$TMP/debug"
for deb in "${debs[@]}"; do
  pkg=$(dpkg-deb -f "$deb" Package)
  dpkg-deb -x "$deb" "$TMP/root/$pkg"
  # "a (>= 1), b | c" -> " a b c "
  deps[$pkg]=" $(dpkg-deb -f "$deb" Depends | tr ',|' '\n\n' | sed -E 's/\(.*\)//; s/^ +//; s/ +$//' | tr '\n' ' ') "
  while IFS= read -r f; do ours[$(basename "$f")]=$pkg; done < <(find "$TMP/root/$pkg" -type f -o -type l)
  printf '%-24s %8s KiB  Depends: %s\n' "$pkg" "$(( $(stat -c %s "$deb") / 1024 ))" "$(dpkg-deb -f "$deb" Depends)"
done
for ddeb in "${ddebs[@]}"; do
  dpkg-deb -x "$ddeb" "$TMP/debug"
  printf '%-24s %8s KiB  (debug symbols)\n' "$(dpkg-deb -f "$ddeb" Package)" "$(( $(stat -c %s "$ddeb") / 1024 ))"
done

for pkg in "${!deps[@]}"; do
  while IFS= read -r elf; do
    rel=${elf#"$TMP/root/$pkg"}
    info=$(file -b "$elf")
    [[ $info == *", stripped"* ]] || fail "$pkg: $rel is not stripped ($info)"
    id=$(readelf -n "$elf" | awk '/Build ID/ {print $3}')
    [ -n "$id" ] && [ -f "$TMP/debug/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ] ||
      fail "$pkg: $rel has no debug symbols in a -dbgsym package (build id '${id}')"
    for lib in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      if [ -n "${ours[$lib]:-}" ]; then
        owner=${ours[$lib]}
      else
        path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && !found {print $NF; found = 1}')
        [ -n "$path" ] || fail "$pkg: $rel needs $lib, which is nowhere on this machine"
        owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null) ||
          fail "$pkg: $rel needs $lib ($path), which no Debian package owns"
        owner=${owner%%:*}
      fi
      [ "$owner" = "$pkg" ] || [[ ${deps[$pkg]} == *" $owner "* ]] ||
        fail "$pkg: $rel needs $lib (package $owner), not among its dependencies:${deps[$pkg]}"
    done
  done < <(find "$TMP/root/$pkg" -type f -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print)
done

[ -n "${deps[dynamiccl-plugin]:-}" ] || fail "no dynamiccl-plugin package"
[[ ${deps[dynamiccl-plugin]} != *torch* ]] || fail "the plugin's package depends on LibTorch:${deps[dynamiccl-plugin]}"
[ -n "$(find "$TMP/root/dynamiccl-plugin" -name libnccl-tuner-dynamiccl.so)" ] || fail "the plugin is not in dynamiccl-plugin"
[ -z "$(find "$TMP/root/dynamiccl" -name 'libnccl-tuner-dynamiccl.so')" ] || fail "the tools' package ships the plugin too"
[[ ${deps[dynamiccl]} == *" dynamiccl-plugin "* ]] || fail "dynamiccl does not depend on the plugin it loads"
script=$TMP/root/dynamiccl/usr/share/dynamiccl/scripts/measure_nccl_tests.sh
[ -x "$script" ] || fail "the runner's measurement script is not installed executable"
echo "package test passed"
