#!/bin/sh
# bpf.watch_pid_exit: prophet-bwmon --pid P (--watch implied) stops by itself once P exits, after
# printing P's last interval: exit status 0, "prophet-bwmon: pid P exited" on stderr, a JSON line
# of P's every interval until then. (A pid that is no process is refused at once: adopt.cli.)
# usage: watch_pid_exit.sh PROPHET_BWMON. Exit 0 pass, 1 fail, 77 skipped.
bwmon=$1
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err" "$tmp/out"; exit 1; }
sleep 1 &
p=$!
t0=$(date +%s)
timeout 20 "$bwmon" --pid "$p" --json --interval-ms 100 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 3 ] && { echo "SKIP: may not load BPF here"; exit 77; }
[ $rc = 124 ] && fail "prophet-bwmon still watched pid $p 20 s after it started (P lives 1 s)"
[ $rc = 0 ] || fail "prophet-bwmon --pid $p exited $rc"
[ $(($(date +%s) - t0)) -le 10 ] || fail "prophet-bwmon took more than 10 s to notice"
[ "$(cat "$tmp/err")" = "prophet-bwmon: pid $p exited" ] || fail "no 'pid $p exited' line"
n=$(grep -c "^{\"t\": .*\"pid\": $p," "$tmp/out")
[ "$n" -ge 3 ] || fail "$n JSON lines about pid $p, expected one per 100 ms interval"
[ "$n" -eq "$(wc -l <"$tmp/out")" ] || fail "lines about other processes"
echo "PASS: stopped $n intervals after it started, when pid $p exited"
