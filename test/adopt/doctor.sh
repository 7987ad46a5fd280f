#!/bin/sh
# prophet-doctor against its fixtures (test/adopt/fixture_doctor.c), each line checked:
#   linked  PASS nccl (interposable, version), PASS calls (the dry run saw the 4 all-reduces)
#   dlopen  WARN nccl (loaded with dlopen), FAIL calls (the preload saw none), exit 1
#   static  FAIL nccl naming libfixture_framework.so, exit 1
#   none    FAIL nccl (the command never loaded NCCL), FAIL calls (made none), exit 1; the same
#           for `-- sleep 0.1`
#   ebpf    BWMON=off, pinned maps, bpffs and privileges as here; without capabilities
#           (setpriv), without bpffs (a mount namespace), where root and those tools allow
#   --pid   a running process with and without the preload; knobs read from its environment;
#           whether its calls are intercepted (intercept: yes; no when another object defining
#           NCCL's symbols is preloaded first, when libprophet.so is dlopen()ed and not preloaded,
#           or not loaded; not yet before NCCL is loaded)
#   usage   --version, usage errors (tools/prophet_cli.h), --pid of no process
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
    $wrap "$doc" "$@" >"$tmp/out" 2>&1
    st=$?
    [ $st -eq "$want" ] || fail "${wrap:+$wrap }prophet-doctor $* exited $st, expected $want"
}
wrap=""
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
# the preload's own exit check (preload/process/exit_check.c) says it too, and the doctor relays it
has "^WARN  preload +said: prophet: .*WARN .*none of its calls reached the preload \(.*dlsym"
echo "dlopen: ok"

doctor 1 -- "$fix/doctor_fixture_static"
has "^FAIL  nccl +NCCL is linked statically into .*/libfixture_framework.so"
echo "static: ok"

doctor 1 -- "$fix/doctor_fixture_none"
has "^FAIL  nccl +the command never loaded NCCL: .*doctor_fixture_none mapped no libnccl.so"
has "^FAIL  calls +the command made no NCCL call"
has "^prophet-doctor: FAIL"
doctor 1 -- sleep 0.1
has "^FAIL  nccl +the command never loaded NCCL: sleep "
has "^FAIL  calls +the command made no NCCL call"
echo "none: ok"

# eBPF: privileges, bpffs and prophet-bwmon's pinned maps as this machine has them, then without
# privileges (setpriv drops every capability) and without bpffs (a mount namespace without it).
cap=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
priv=$(( (0x$cap >> 21 & 1) | ((0x$cap >> 38 & 1) & (0x$cap >> 39 & 1)) ))
PROPHET_BWMON=off doctor 0 -- "$fix/doctor_fixture_linked"
has "^PASS  ebpf +PROPHET_BWMON=off: bandwidth fitted"
mkdir "$tmp/pin" && : >"$tmp/pin/prophet_proc" # where the daemon pins its map
PROPHET_BWMON_PIN=$tmp/pin doctor 0 -- "$fix/doctor_fixture_linked"
has "^PASS  ebpf +prophet-bwmon's pinned maps at $tmp/pin"
if grep -q "^[^ ]* [^ ]* bpf " /proc/mounts; then has "^PASS  ebpf +bpffs mounted at /"
else has "^WARN  ebpf +no bpffs mounted"; fi
PROPHET_BWMON_PIN=$tmp/nopin doctor 0 -- "$fix/doctor_fixture_linked"
if [ "$priv" -eq 1 ]; then
    has "^PASS  ebpf +privileged"
    has "^PASS  ebpf +no prophet-bwmon running \(nothing pinned at PROPHET_BWMON_PIN=$tmp/nopin\); not needed"
else
    has "^WARN  ebpf +no CAP_BPF/CAP_SYS_ADMIN"
    has "fix: sudo prophet-bwmon --daemon --pin $tmp/nopin"
fi
echo "ebpf: ok (privileged=$priv)"
if [ "$priv" -eq 1 ] && command -v setpriv >/dev/null; then
    wrap="setpriv --inh-caps=-all --bounding-set=-all"
    PROPHET_BWMON_PIN=$tmp/nopin doctor 0 -- "$fix/doctor_fixture_linked"
    has "^WARN  ebpf +no CAP_BPF/CAP_SYS_ADMIN: the in-process probe cannot load"
    has "fix: run .sudo prophet-bwmon --daemon. on the host"
    has "^WARN  ebpf +no prophet-bwmon running"
    has "fix: sudo prophet-bwmon --daemon --pin $tmp/nopin"
    wrap=""
    echo "ebpf without privileges: ok"
fi
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
    unshare -m sh -c 'for m in $(awk '"'"'$3 == "bpf" {print $2}'"'"' /proc/mounts); do umount "$m"; done
        exec "$0" -- "$1"' "$doc" "$fix/doctor_fixture_linked" >"$tmp/out" 2>&1
    has "^WARN  ebpf +no bpffs mounted: prophet-bwmon cannot pin its maps"
    has "fix: mount -t bpf bpf /sys/fs/bpf"
    echo "ebpf without bpffs: ok"
fi

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
has "^PASS  intercept +yes: libprophet.so is preloaded \(LD_PRELOAD entry 1\), so its NCCL symbols come before those of .*/libnccl.so.2"
has '^FAIL  knobs +ignoring PROPHET_GATE="?sideways'
hasnt "^.{4}  calls" # no dry run against a pid
kill $pid; wait $pid 2>/dev/null; pid=""
hold() { # COMMAND...: started in the background as $pid, once it has said "ready"
    : >"$tmp/rank" # emptied here: the background redirection comes later, the last "ready" is there
    "$@" >"$tmp/rank" 2>&1 &
    pid=$!
    i=0
    while ! grep -q ready "$tmp/rank" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 100 ] || fail "$* did not start"; sleep 0.1
    done
}
# the same without the preload
hold "$fix/doctor_fixture_linked" --hold
doctor 1 --pid "$pid"
has "^FAIL  preload +libprophet.so is not loaded"
has "fix: start the job with prophet-run"
has "^FAIL  intercept +no: libprophet.so is not loaded into pid $pid"
kill $pid; wait $pid 2>/dev/null; pid=""
# preloaded, but after another object that defines NCCL's symbols: calls bind to that one
lib=$(cd "$build/lib" && pwd -P)/libprophet.so
hold env LD_PRELOAD="$build/lib/emu/libnccl.so.2:$lib" "$fix/doctor_fixture_linked" --hold
doctor 1 --pid "$pid"
has "^PASS  preload +.*/libprophet.so is loaded"
has "^FAIL  intercept +no: .*/libnccl.so.2 is preloaded ahead of libprophet.so \\(LD_PRELOAD entry 2\\)"
kill $pid; wait $pid 2>/dev/null; pid=""
# loaded with dlopen(), not preloaded: NCCL's own symbols come first
hold python3 -c 'import ctypes, sys, time
ctypes.CDLL(sys.argv[1]); print("ready", flush=True); time.sleep(60)' "$lib"
doctor 1 --pid "$pid"
has "^FAIL  intercept +no: $lib is loaded but not preloaded"
kill $pid; wait $pid 2>/dev/null; pid=""
# preloaded, NCCL not loaded yet
hold "$build/bin/prophet-run" sh -c 'echo ready; exec sleep 60'
doctor 0 --pid "$pid"
has "^WARN  intercept +not yet: libprophet.so is preloaded \(LD_PRELOAD entry 1\), but no NCCL"
kill $pid; wait $pid 2>/dev/null; pid=""
echo "--pid: ok"

# the command line: --version, usage errors, a pid that is no process
"$doc" --version >"$tmp/out" 2>&1 || fail "--version failed"
has "^prophet-doctor \(Prophet for NCCL\) [0-9]+\.[0-9]+\.[0-9]+$"
doctor 2 --pid abc
has "^prophet-doctor: --pid: 'abc' is not a process id$"
has "^Try 'prophet-doctor --help'\.$"
doctor 2 --bogus
has "^prophet-doctor: unknown option '--bogus'$"
doctor 2 --pid 999999999
has "^prophet-doctor: pid 999999999: no such process$"
echo "usage: ok"
"$doc" --help | grep -q "^SYNOPSIS" || fail "--help has no SYNOPSIS"
echo "PASS"
