#!/bin/sh
# One eBPF probe for the host, shared by its ranks (PROPHET_BWMON=shared; auto's choice when no
# prophet-bwmon runs). Three processes open it (bw_traffic shared); in each round each moves N
# bytes over loopback and must read exactly N more from the shared maps. Checks:
#  - one program per tracepoint while three processes read (bpftool), the first one's pins only;
#  - the owner killed (SIGKILL) while the other two follow its pins: in the next round one of them
#    has taken the ownership over (its pins, the dead owner's stale pins gone), both count exactly;
#  - the new owner ends (SIGTERM: it closes): its pins go at once, and the last process takes
#    over and counts exactly in the next round;
#  - when the last process ends, no pin is left.
# usage: shared_probe.sh BW_TRAFFIC
set -u
bw=$1
bytes=3000000
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v bpftool >/dev/null 2>&1 || { echo "SKIP: no bpftool"; exit 77; }
[ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ] || { echo "SKIP: no bpffs on /sys/fs/bpf"; exit 77; }
pin=/sys/fs/bpf/prophet-test-shared-$$
# the lock file the library derives from the pin dir (prophet_bw_shm_name: FNV-1a of the path)
lock=$(python3 -c 'import sys
h=2166136261
for c in sys.argv[1].encode(): h=((h^c)*16777619)&0xffffffff
print("/dev/shm/prophet-bw-%08x.ranks"%h)' "$pin")
sync=$(mktemp -d) || exit 1
pids=""
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$sync"
    rm -f "$pin"/prophet_rk_* 2>/dev/null
    rmdir "$pin" 2>/dev/null
    rm -f "$lock"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$sync"/out.*; do echo "== $f"; cat "$f"; done; exit 1; }
progs() { bpftool prog show 2>/dev/null | grep -cE "name prophet_(raw|tp)_send"; }
pins() { ls "$pin" 2>/dev/null | sed -n 's/^prophet_rk_proc_//p'; }
wait_for() { # wait_for CMD...: up to 30 s
    i=0
    while ! "$@"; do
        i=$((i + 1)); [ $i -lt 3000 ] || return 1; sleep 0.01
    done
}
done_by() { [ -e "$sync/done$1.$2" ]; }
has_line() { grep -q "$2" "$sync/out.$1" 2>/dev/null; }

base=$(progs)
"$bw" shared --pin "$pin" --sync "$sync" --rounds 3 --bytes $bytes >"$sync/out.a" 2>&1 &
a=$!; pids="$a"
wait_for has_line a "reads through source shared" || fail "the first process did not open the shared probe"
[ "$(pins)" = "$a" ] || fail "the first process ($a) does not own the probe: pins '$(pins)'"
"$bw" shared --pin "$pin" --sync "$sync" --rounds 3 --bytes $bytes >"$sync/out.b" 2>&1 &
b=$!; pids="$pids $b"
"$bw" shared --pin "$pin" --sync "$sync" --rounds 3 --bytes $bytes >"$sync/out.c" 2>&1 &
c=$!; pids="$pids $c"
wait_for has_line b "reads through source shared" && wait_for has_line c "reads through source shared" ||
    fail "the followers did not open the shared probe"
n=$(($(progs) - base))
[ "$n" -eq 1 ] || fail "$n send programs loaded for 3 processes, want 1"
[ "$(pins)" = "$a" ] || fail "pins '$(pins)' with 3 processes, want only the owner's ($a)"
echo "3 processes, 1 program, owner $a"

touch "$sync/go1"
for p in $a $b $c; do wait_for done_by 1 "$p" || fail "round 1 of $p"; done
kill -9 "$a"; wait "$a" 2>/dev/null
[ "$(pins)" = "$a" ] || fail "the killed owner's pins are not there: the kill did not hit a held probe"
echo "owner $a killed while $b and $c followed its pins"

touch "$sync/go2"
for p in $b $c; do wait_for done_by 2 "$p" || fail "round 2 of $p after the owner was killed"; done
o=$(pins)
[ "$o" = "$b" ] || [ "$o" = "$c" ] || fail "after the kill the pins are '$o', want one of $b $c"
n=$(($(progs) - base))
[ "$n" -eq 1 ] || fail "$n send programs after the takeover, want 1"
[ "$o" = "$b" ] && f=$c || f=$b
echo "round 2: $o took over, counts exact"

kill -TERM "$o"; wait "$o"; rc=$?
[ $rc -eq 0 ] || fail "owner $o exited $rc on SIGTERM"
[ -z "$(pins)" ] || fail "owner $o closed but left pins '$(pins)'"
touch "$sync/go3"
wait_for done_by 3 "$f" || fail "round 3 of $f after the owner closed"
[ "$(pins)" = "$f" ] || [ -z "$(pins)" ] || fail "round 3: pins '$(pins)', want $f's"
wait "$f"; rc=$?
[ $rc -eq 0 ] || fail "the last process exited $rc"
[ -z "$(pins)" ] || fail "the last process left pins '$(pins)'"
grep -h "round" "$sync"/out.* | sort -k4
echo "PASS"
