#!/bin/sh
# prophet-doctor against its fixtures (test/adopt/doctor_fixture.c), each line checked:
#   linked  PASS nccl (interposable, version), PASS calls (the dry run saw the 4 all-reduces)
#   dlopen  WARN nccl (loaded with dlopen), FAIL calls (the preload saw none), exit 1
#   static  FAIL nccl naming libfixture_framework.so, exit 1
#   none    WARN nccl (no NCCL), exit 0
#   --pid   a running process with and without the preload; knobs read from its environment
# usage: doctor.sh BUILD FIXTURES
set -u
build=$1 fix=$2
doc=$build/bin/prophet-doctor
tmp=$(mktemp -d) || exit 1
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH="$build/lib/emu"
fail() { echo "FAIL: $*"; echo "---- prophet-doctor's output"; cat "$tmp/out"; exit 1; }
doctor() { # EXPECTED-STATUS ARGS...
    want=$1; shift
    "$doc" "$@" >"$tmp/out" 2>&1
    st=$?
    [ $st -eq "$want" ] || fail "prophet-doctor $* exited $st, expected $want"
}
has() { grep -Eq "$1" "$tmp/out" || fail "no line matching '$1'"; }
hasnt() { grep -Eq "$1" "$tmp/out" && fail "a line matching '$1'"; return 0; }

doctor 0 -- "$fix/doctor_fixture_linked"
has "^PASS  preload +.*/libprophet.so is loaded"
has "^PASS  nccl +.*/libnccl.so.2, version 2\.[0-9]+\.[0-9]+.*interposable"
has "^PASS  calls +the preload intercepted 4 NCCL calls"
has "^PASS  knobs +.*GATE=hold"
has "^PASS  cuda +driver .*libcuda.so.1"
echo "linked: ok"

doctor 1 -- "$fix/doctor_fixture_dlopen"
has "^WARN  nccl +.*libnccl.so.2.*loaded with dlopen"
has "^FAIL  calls +NCCL was loaded but the preload saw none"
has "^ +fix: "
echo "dlopen: ok"

doctor 1 -- "$fix/doctor_fixture_static"
has "^FAIL  nccl +NCCL is linked statically into .*/libfixture_framework.so"
echo "static: ok"

doctor 0 -- "$fix/doctor_fixture_none"
has "^WARN  nccl +no NCCL is loaded"
hasnt "^FAIL"
echo "none: ok"

# --pid: a running rank started with prophet-run, with a bad knob in its environment.
PROPHET_GATE=sideways "$build/bin/prophet-run" "$fix/doctor_fixture_linked" --hold >"$tmp/rank" 2>&1 &
pid=$!
i=0
while ! grep -q ready "$tmp/rank" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || { cat "$tmp/rank"; fail "the fixture did not start"; }; sleep 0.1
done
doctor 1 --pid "$pid"
has "^PASS  preload +.*/libprophet.so is loaded"
has "^PASS  nccl +.*/libnccl.so.2, version"
has '^FAIL  knobs +ignoring PROPHET_GATE="?sideways'
hasnt "^.{4}  calls" # no dry run against a pid
kill $pid; wait $pid 2>/dev/null; pid=""
# the same without the preload
"$fix/doctor_fixture_linked" --hold >"$tmp/rank" 2>&1 &
pid=$!
i=0
while ! grep -q ready "$tmp/rank" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "the fixture did not start"; sleep 0.1
done
doctor 1 --pid "$pid"
has "^FAIL  preload +libprophet.so is not loaded"
has "fix: start the job with prophet-run"
echo "--pid: ok"
"$doc" --help | grep -q "^SYNOPSIS" || fail "--help has no SYNOPSIS"
echo "PASS"
