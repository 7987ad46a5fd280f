#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the suite with ctest.
#   scripts/test.sh            normal build + all default tests, then ASan+UBSan and TSan passes
#                              over the tests labelled `sanitize`, then short libFuzzer runs, then
#                              what a user installs built with gcc in the four build types and
#                              clang Debug, warnings as errors, the whole tree with clang Release
#                              (scripts/build-matrix.sh, ~1-2 min), then the Debian package built,
#                              installed, run and removed (scripts/deb-check.sh, root, ~20 s)
#   scripts/test.sh --quick    normal build + default tests only (no sanitizers, fuzz, matrix)
#   scripts/test.sh --long     also the tests labelled `long`
# Build trees: build/ (normal), build-asan/, build-tsan/. Exit status: ctest's.
set -uo pipefail
cd "$(dirname "$0")/.."
quick=0; long=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    --long) long=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
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
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROPHET_WERROR=ON "${cargs[@]}" >"$dir.configure.log" 2>&1 \
    || { cat "$dir.configure.log"; total_failed=$((total_failed + 1)); return 1; }
  if [ -s "$dir/tests-not-registered.txt" ]; then
    echo "=== not registered on this machine ($dir):"
    sed 's/^/    /' "$dir/tests-not-registered.txt"
  fi
  local tgt=()
  [ -n "${BUILD_TARGETS:-}" ] && tgt=(--target $BUILD_TARGETS)
  cmake --build "$dir" -j"$jobs" "${tgt[@]}" >"$dir.build.log" 2>&1 || { tail -60 "$dir.build.log"; total_failed=$((total_failed + 1)); return 1; }
  echo "=== ctest: $dir"
  local log=$dir.ctest.log st
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "${label_args[@]}" "${targs[@]}") 2>&1 | tee "$log"
  st=${PIPESTATUS[0]}
  # tally "NN% tests passed, F tests failed out of T" for the closing line; ctest counts a
  # skipped test (exit SKIP_RETURN_CODE, listed under "The following tests did not run:" with
  # "(Skipped)") among the passed ones, so skips are taken out of T; a DISABLED test (a known
  # defect, "(Disabled)") counts as skipped too
  local f t
  read -r f t < <(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1 \2/p' "$log" | tail -1)
  local notrun s d
  notrun=$(sed -n '/^The following tests did not run:/,/^$/p' "$log")
  s=$(grep -c '(Skipped)$' <<<"$notrun")
  d=$(grep -c '(Disabled)$' <<<"$notrun") # not in T
  if [ -n "${t:-}" ]; then
    total_passed=$((total_passed + t - f - s)); total_failed=$((total_failed + f))
    total_skipped=$((total_skipped + s + d))
  else
    total_failed=$((total_failed + 1)) # ctest did not get to its summary
  fi
  return "$st"
}

rc=0
total_passed=0 total_failed=0 total_skipped=0
run_suite build || rc=1
if [ $quick -eq 0 ]; then
  # Sanitizer passes over the tests labelled `sanitize` (unit suites, the emulated cluster, a
  # subset of prophet-emu runs, the fault tests; docs/reliability.md), findings fatal. 1.5-2 min
  # each on 2 cores, build included. -O1 -g1: quicker to build, still symbolised.
  # ASan: tests that preload libprophet.so put libasan.so first in LD_PRELOAD themselves;
  # verify_asan_link_order=0 keeps any other preloading test from failing on the order alone.
  # TSan: tests that fork after threads exist set die_after_fork=0 themselves (test/faults).
  san_opt="-O1 -g1"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:verify_asan_link_order=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  t0=$SECONDS
  run_suite build-asan -DPROPHET_SANITIZE=address "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$san_opt" \
    -- -L sanitize || rc=1
  echo "=== build-asan: $((SECONDS - t0)) s"; t0=$SECONDS
  run_suite build-tsan -DPROPHET_SANITIZE=thread "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$san_opt" \
    -- -L sanitize || rc=1
  echo "=== build-tsan: $((SECONDS - t0)) s"
  # Short libFuzzer runs (clang) over the seed corpora in test/fuzz/corpus.
  CC=clang BUILD_TARGETS="fuzz_config fuzz_profile fuzz_report" \
    run_suite build-fuzz -DPROPHET_FUZZ=ON -- -L fuzz || rc=1
  # Users build Release (or any other type) with either compiler: it must build clean.
  echo "=== build matrix: gcc x Debug, Release, RelWithDebInfo, MinSizeRel; clang x Debug, Release"
  t0=$SECONDS
  if bash scripts/build-matrix.sh --skip "clang-RelWithDebInfo clang-MinSizeRel"; then
    total_passed=$((total_passed + 1))
  else
    total_failed=$((total_failed + 1)); rc=1
  fi
  echo "=== build matrix: $((SECONDS - t0)) s"
  # The Debian package: cpack -G DEB from build/, dpkg -i, the demo job from the installed files,
  # dpkg -r (root only; exit 77 = skipped). ~20 s.
  echo "=== Debian package (scripts/deb-check.sh)"; t0=$SECONDS
  bash scripts/deb-check.sh build; st=$?
  if [ $st -eq 0 ]; then total_passed=$((total_passed + 1))
  elif [ $st -eq 77 ]; then total_skipped=$((total_skipped + 1))
  else total_failed=$((total_failed + 1)); rc=1; fi
  echo "=== Debian package: $((SECONDS - t0)) s"
fi
echo "=== all passes (normal$([ $quick -eq 0 ] && echo ', ASan+UBSan, TSan, fuzz, build matrix, package'))"
echo "summary: $total_passed passed, $total_failed failed, $total_skipped skipped"
exit $rc
