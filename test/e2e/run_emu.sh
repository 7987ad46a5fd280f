#!/bin/sh
# Runs prophet-emu under libprophet.so and checks its outcome and the preload's stderr.
# usage: run_emu.sh BUILD EXPECT CHECK [VAR=VALUE ...] -- PROPHET-EMU-ARGS...
#   EXPECT  ok     prophet-emu exits 0 (every element of every iteration exact)
#           wrong  prophet-emu exits 1 and reports a wrong result (a contract test)
#   CHECK   none | multi (every rank's summary line has blocks>1=N with N > 0)
#           | multi-trace (a TRACE line shows a block of more than one call released)
#           | observed (every rank's summary counts calls and at least one agreed plan)
#           | passthrough (every rank's summary: calls=N passthrough=N scheduled=0, N > 0 and the
#             same N on every rank: each call observed and handed to NCCL at once, none held)
#           | warn:REGEX (a 'prophet: WARN' line matching REGEX)
#           | info:REGEX (a 'prophet: INFO' line matching REGEX)
set -u
build=$1 expect=$2 check=$3
shift 3
envs=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs="$envs $1"; shift; done
[ $# -gt 0 ] && shift
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
# shellcheck disable=SC2086
env LD_LIBRARY_PATH="$build/lib/emu" LD_PRELOAD="$build/lib/libprophet.so" $envs \
    "$build/bin/prophet-emu" --timeout 120 --quiet "$@" >"$out" 2>&1
rc=$?
fail() { echo "FAIL: $*"; echo "---- output (tail)"; tail -n 40 "$out"; exit 1; }
case $expect in
ok) [ $rc -eq 0 ] || fail "prophet-emu exited $rc, expected 0" ;;
wrong)
    [ $rc -eq 1 ] || fail "prophet-emu exited $rc, expected 1 (a detected early read)"
    grep -q "wrong result" "$out" || fail "no 'wrong result' report" ;;
*) fail "bad EXPECT $expect" ;;
esac
# an injected fault (EMU_FAULT, test/emu/cuda/emu_fault.c) must have hit
case "$envs" in
*EMU_FAULT=*) grep -q "^emu-fault: .* fails with" "$out" || fail "EMU_FAULT set but no fault injected"
    grep "^emu-fault: .* fails with" "$out" | head -n 1 ;;
esac
ranks=$(echo "$*" | sed -n 's/.*--ranks \([0-9]*\).*/\1/p')
summaries=$(grep -c "prophet: INFO summary comm" "$out")
case $check in
none) ;;
multi)
    [ "$summaries" -eq "$ranks" ] || fail "$summaries summary lines for $ranks ranks"
    bad=$(grep "prophet: INFO summary comm" "$out" | grep -c "blocks>1=0 ")
    [ "$bad" -eq 0 ] || fail "$bad rank(s) formed no block of more than one call"
    grep "prophet: INFO summary comm" "$out" | head -n 1 ;;
multi-trace)
    grep -Eq "prophet: TRACE comm [0-9]+: block [0-9]+ released: ([2-9]|[1-9][0-9]+) calls" "$out" ||
        fail "no block of more than one call was released" ;;
observed)
    [ "$summaries" -eq "$ranks" ] || fail "$summaries summary lines for $ranks ranks"
    bad=$(grep "prophet: INFO summary comm" "$out" | grep -Ec "calls=0 |plans=0 ")
    [ "$bad" -eq 0 ] || fail "$bad rank(s) observed no calls or agreed no plan"
    grep "prophet: INFO summary comm" "$out" | head -n 1 ;;
passthrough)
    [ "$summaries" -eq "$ranks" ] || fail "$summaries summary lines for $ranks ranks"
    grep "prophet: INFO summary comm" "$out" |
        sed -n 's/.* calls=\([0-9]*\) scheduled=\([0-9]*\) passthrough=\([0-9]*\) .*/\1 \2 \3/p' >"$out.s"
    n=$(head -n 1 "$out.s" | cut -d' ' -f1)
    bad=$(awk -v n="$n" '$1 != n || $2 != 0 || $3 != n || n == 0' "$out.s" | wc -l)
    rm -f "$out.s"
    [ "$(grep -c "prophet: INFO summary comm" "$out")" -eq "$ranks" ] && [ "$bad" -eq 0 ] ||
        fail "not every rank passed all of the same $n calls through unheld"
    grep "prophet: INFO summary comm" "$out" | head -n 1 ;;
warn:*)
    re=${check#warn:}
    grep -Eq "prophet: WARN .*$re" "$out" || fail "no WARN line matching '$re'"
    grep -E "prophet: WARN .*$re" "$out" | head -n 1 ;;
info:*)
    re=${check#info:}
    grep -Eq "prophet: INFO .*$re" "$out" || fail "no INFO line matching '$re'"
    grep -E "prophet: INFO .*$re" "$out" | tail -n 1 ;;
*) fail "bad CHECK $check" ;;
esac
echo "PASS"
