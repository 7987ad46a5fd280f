#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the suite with ctest.
#   scripts/test.sh            normal build + all default tests, then ASan+UBSan and TSan passes
#                              over the tests labelled `sanitize`, then short libFuzzer runs, then
#                              what a user installs built with gcc Debug, Release, MinSizeRel and
#                              clang Debug, warnings as errors, the whole tree with clang Release
#                              (scripts/build-matrix.sh, ~1-2 min), then the Debian package built,
#                              installed, run and removed (scripts/deb-check.sh, root, ~20 s)
#   scripts/test.sh --quick    normal build + default tests only (no sanitizers, fuzz, matrix)
#   scripts/test.sh --long     also the tests labelled `long`
#   scripts/test.sh --repeat N the emulator suites (normal build: emu.*, emu_cuda.*, emu_cudart.*,
#                              emu_nccl.*) and the ASan+UBSan and TSan passes (tests labelled
#                              `sanitize`) N times each, nothing else; ends with a line for every
#                              test that failed in some runs but not all, "flaky: NAME in TREE
#                              (failed k of N)", and for every one that failed in all, "failed:
#                              NAME in TREE (failed N of N)". CPU-heavy: ~3-4 min a round on 2
#                              cores. With --long, the long tests of those suites too.
# Build trees: build/ (normal), build-asan/, build-tsan/. Exit status: ctest's (--repeat: 1 when
# any run of any test failed).
set -uo pipefail
cd "$(dirname "$0")/.."
quick=0; long=0; repeat=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --long) long=1 ;;
    --repeat) repeat=${2:-}; shift ;;
    --repeat=*) repeat=${1#--repeat=} ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[[ "$repeat" =~ ^[0-9]+$ ]] || { echo "test.sh: --repeat wants a count" >&2; exit 2; }
bash scripts/setup.sh || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
label_args=(-LE long)
[ $long -eq 1 ] && label_args=()

build_tree() { # dir, cmake args...: configure and build; 1 (counted as a failure) when either fails
  local dir=$1; shift
  local cargs=("$@")
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
}

run_suite() { # dir, cmake args..., -- ctest args...
  local dir=$1; shift
  local cargs=() targs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cargs+=("$1"); shift; done
  [ "${1:-}" = "--" ] && shift
  targs=("$@")
  build_tree "$dir" "${cargs[@]}" || return 1
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

# --repeat N: each suite N times; a test's failures counted over the runs.
repeat_suites() {
  local st=0 i dir name k
  local dirs=(build build-asan build-tsan)
  declare -A fails=()
  build_tree build || return 1
  build_tree build-asan -DPROPHET_SANITIZE=address "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$san_opt" || return 1
  build_tree build-tsan -DPROPHET_SANITIZE=thread "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$san_opt" || return 1
  for i in $(seq 1 "$repeat"); do
    for dir in "${dirs[@]}"; do
      local sel=(-L sanitize) log=$dir.repeat$i.log t0=$SECONDS
      [ "$dir" = build ] && sel=(-R '^(emu|emu_cuda|emu_cudart|emu_nccl)[.]')
      (cd "$dir" && ctest --output-on-failure -j"$jobs" "${label_args[@]}" "${sel[@]}") >"$log" 2>&1 || st=1
      # the ctest summary line of this run, and its failed tests ("  12 - NAME (Failed)"); the
      # failures' output is in $log
      echo "=== repeat $i/$repeat $dir: $(grep -E 'tests passed, [0-9]+ tests failed' "$log" |
        tail -1) ($((SECONDS - t0)) s)"
      while read -r name; do
        echo "    failed: $name"
        fails["$dir $name"]=$((${fails["$dir $name"]:-0} + 1))
      done < <(sed -n '/^The following tests FAILED:/,/^[^[:space:]]/s/^[[:space:]]*[0-9]* - \([^ ]*\) .*/\1/p' "$log")
    done
  done
  local flaky=0 always=0
  for k in "${!fails[@]}"; do
    if [ "${fails[$k]}" -lt "$repeat" ]; then
      flaky=$((flaky + 1)); echo "flaky: ${k#* } in ${k%% *} (failed ${fails[$k]} of $repeat)"
    else
      always=$((always + 1)); echo "failed: ${k#* } in ${k%% *} (failed ${fails[$k]} of $repeat)"
    fi
  done >build.repeat-verdicts.log
  sort build.repeat-verdicts.log
  echo "repeat summary: $repeat runs of ${dirs[*]}: $flaky flaky, $always always failing"
  [ $((flaky + always)) -eq 0 ] || st=1
  return $st
}
if [ "$repeat" -gt 0 ]; then
  total_failed=0
  repeat_suites; exit $?
fi

rc=0
total_passed=0 total_failed=0 total_skipped=0
run_suite build || rc=1
if [ $quick -eq 0 ]; then
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
  # Users build Release (or any other type) with either compiler: it must build clean. gcc's
  # RelWithDebInfo is left out: build/ above is that very configuration, warnings as errors, the
  # whole tree (CI's 20 minutes are near).
  echo "=== build matrix: gcc x Debug, Release, MinSizeRel; clang x Debug, Release"
  t0=$SECONDS
  if bash scripts/build-matrix.sh --skip "gcc-RelWithDebInfo clang-RelWithDebInfo clang-MinSizeRel"; then
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
