#!/usr/bin/env bash
# Builds what a user installs (target prophet-dist: libprophet.so, its eBPF plugin and the programs)
# with every CMake build type and every compiler, warnings as errors, in build-matrix/CC-TYPE; the
# WHOLE tree (tests included, as a user's `cmake --build` does) in the configurations named by
# --whole (default clang-Release: gcc builds the whole tree in scripts/test.sh's own passes); then
# libprophet.so once without the schedule-log writer (build-matrix/gcc-nolog).
#   scripts/build-matrix.sh [--compilers "gcc clang"] [--types "Debug Release ..."]
#                           [--whole "clang-Release ..."] [--skip "clang-MinSizeRel ..."] [--out DIR]
# --skip leaves configurations out (scripts/test.sh leaves out clang's RelWithDebInfo and
# MinSizeRel: clang's warnings do not depend on the optimisation level as gcc's do, and CI's
# 20 minutes are near).
# Exit status: the number of configurations that failed (0: all built clean).
set -uo pipefail
cd "$(dirname "$0")/.."
compilers="gcc clang"
types="Debug Release RelWithDebInfo MinSizeRel"
whole="clang-Release"
skip=""
out=build-matrix
while [ $# -gt 0 ]; do
  case "$1" in
    --compilers) compilers=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --whole) whole=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "build-matrix.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
jobs=$(nproc 2>/dev/null || echo 2)
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
mkdir -p "$out" || exit 1
failed=0
for cc in $compilers; do
  for type in $types; do
    dir=$out/$cc-$type
    case " $skip " in *" $cc-$type "*) continue ;; esac
    t0=$SECONDS
    target=(--target prophet-dist) what=""
    case " $whole " in *" $cc-$type "*) target=() what=" (whole tree)" ;; esac
    if cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE="$type" \
         -DPROPHET_WERROR=ON >"$dir.log" 2>&1 &&
       cmake --build "$dir" -j"$jobs" "${target[@]}" >>"$dir.log" 2>&1; then
      echo "build-matrix: $cc $type$what ok ($((SECONDS - t0)) s)"
    else
      echo "build-matrix: $cc $type$what FAILED ($dir.log):"
      grep -E "error|warning" "$dir.log" | head -20
      failed=$((failed + 1))
    fi
  done
done
# The optional parts' other files (stubs that CMake picks instead of #ifdef branches): the
# preload without the schedule-log writer (preload/schedule_log/log_bridge_stub.c), built once, and its file
# graph checked like the default one.
dir=$out/gcc-nolog
t0=$SECONDS
if cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo \
     -DPROPHET_WERROR=ON -DPROPHET_SCHEDULE_LOG=OFF >"$dir.log" 2>&1 &&
   cmake --build "$dir" -j"$jobs" --target prophet >>"$dir.log" 2>&1 &&
   ! nm "$dir/lib/libprophet.so" | grep -q " prophet_log_open$" &&
   bash scripts/callgraph-check.sh "$dir/preload/CMakeFiles/prophet.dir" >>"$dir.log" 2>&1; then
  echo "build-matrix: gcc RelWithDebInfo -DPROPHET_SCHEDULE_LOG=OFF ok ($((SECONDS - t0)) s)"
else
  echo "build-matrix: gcc RelWithDebInfo -DPROPHET_SCHEDULE_LOG=OFF FAILED ($dir.log):"
  grep -E "error|warning|callgraph" "$dir.log" | head -20
  failed=$((failed + 1))
fi
exit $failed
