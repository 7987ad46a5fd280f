#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the suite with ctest.
#   scripts/test.sh            normal build + all default tests, then ASan+UBSan and TSan passes
#                              over the tests labelled `sanitize`, then short libFuzzer runs
#   scripts/test.sh --quick    normal build + default tests only
#   scripts/test.sh --long     also the tests labelled `long`
# Build trees: build/ (normal), build-asan/, build-tsan/. Exit status: ctest's.
set -uo pipefail
cd "$(dirname "$0")/.."
quick=0; long=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    --long) long=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
label_args=(-LE long)
[ $long -eq 1 ] && label_args=()

run_suite() { # dir, cmake args..., -- ctest args...
  local dir=$1; shift
  local cargs=() targs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cargs+=("$1"); shift; done
  [ "${1:-}" = "--" ] && shift
  targs=("$@")
  echo "=== configure and build: $dir ${cargs[*]}"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cargs[@]}" >"$dir.configure.log" 2>&1 \
    || { cat "$dir.configure.log"; return 1; }
  local tgt=()
  [ -n "${BUILD_TARGETS:-}" ] && tgt=(--target $BUILD_TARGETS)
  cmake --build "$dir" -j"$jobs" "${tgt[@]}" >"$dir.build.log" 2>&1 || { tail -60 "$dir.build.log"; return 1; }
  echo "=== ctest: $dir"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "${label_args[@]}" "${targs[@]}")
}

rc=0
run_suite build || rc=1
if [ $quick -eq 0 ]; then
  # Sanitizer passes: the unit suites and the emulated cluster, with findings fatal.
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  run_suite build-asan -DPROPHET_SANITIZE=address -- -L sanitize || rc=1
  run_suite build-tsan -DPROPHET_SANITIZE=thread -- -L sanitize || rc=1
  # Short libFuzzer runs (clang) over the seed corpora in test/fuzz/corpus.
  CC=clang BUILD_TARGETS="fuzz_config fuzz_profile fuzz_report" \
    run_suite build-fuzz -DPROPHET_FUZZ=ON -- -L fuzz || rc=1
fi
exit $rc
