#!/bin/sh
# bpf.unprivileged_reader: prophet-bwmon --daemon as root with a temporary pin dir; an
# unprivileged user opens the counters through prophet_bw_open(auto) and reads its own bytes.
# Both ways are checked: the pinned maps, and the shared-memory export (with the pins closed to
# the user, as on kernels that refuse bpf() to users).
# usage: unprivileged_reader.sh PROPHET_BWMON BW_TRAFFIC. Exit 0 pass, 1 fail, 77 skipped.
bwmon=$1 bw=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv not installed"; exit 77; }
if ! grep -q " /sys/fs/bpf bpf " /proc/mounts; then
    mount -t bpf bpf /sys/fs/bpf || { echo "SKIP: cannot mount bpffs"; exit 77; }
fi
pin=/sys/fs/bpf/prophet-test-$$
dpid=
cleanup() {
    [ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid"
    rm -rf "$pin"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
# the binaries must be reachable by nobody
tmp=$(mktemp -d /tmp/prophet-bw-test.XXXXXX)
chmod 0755 "$tmp"
cp "$bw" "$tmp/bw_traffic"
chmod 0755 "$tmp/bw_traffic"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all "$@"; }

run_case() { # $1 expected source
    "$bwmon" --daemon --pin "$pin" --shm-period-ms 50 &
    dpid=$!
    i=0
    while [ ! -e "$pin/prophet_host" ] && [ $i -lt 100 ]; do
        if ! kill -0 "$dpid" 2>/dev/null; then
            wait "$dpid"; rc=$?; dpid=
            [ $rc = 3 ] && { echo "SKIP: the daemon may not load BPF here"; exit 77; }
            echo "FAIL: prophet-bwmon --daemon exited with $rc"; exit 1
        fi
        sleep 0.05; i=$((i + 1))
    done
    [ -e "$pin/prophet_host" ] || { echo "FAIL: no pins after 5 s"; exit 1; }
    ls -ld "$pin" "$pin"/*
    if [ "$1" = daemon-shm ]; then chmod 0600 "$pin"/prophet_proc "$pin"/prophet_host; fi
    as_nobody "$tmp/bw_traffic" reader --pin "$pin" --bytes 50000000 --expect "$1" || exit 1
    kill "$dpid"; wait "$dpid"; rc=$?; dpid=
    [ $rc = 0 ] || { echo "FAIL: daemon exit status $rc after SIGTERM"; exit 1; }
    [ ! -e "$pin" ] || { echo "FAIL: daemon left $pin behind"; exit 1; }
}
run_case daemon
run_case daemon-shm
rm -rf "$tmp"
echo PASS
