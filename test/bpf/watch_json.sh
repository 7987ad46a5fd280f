#!/bin/sh
# bpf.watch_json: prophet-bwmon --watch --json --pid P prints valid JSON lines with the fields
# t, pid, tx_bytes, rx_bytes, tx_bps, rx_bps, and counts P's traffic.
# usage: watch_json.sh PROPHET_BWMON BW_TRAFFIC. Exit 0 pass, 1 fail, 77 skipped.
bwmon=$1 bw=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
out=$(mktemp /tmp/prophet-watch.XXXXXX)
trap 'rm -f "$out"' EXIT
# a process of known pid that moves 100 MiB over loopback to itself, starting after 0.5 s
python3 -c '
import socket, threading, time
N = 100 << 20
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
def rd():
    n = 0
    while n < N:
        n += len(a.recv(1 << 20))
t = threading.Thread(target=rd); t.start()
time.sleep(0.5); buf = b"x" * (1 << 20)
for i in range(100):
    c.sendall(buf); time.sleep(0.005)
t.join()
' &
gpid=$!
# the watch runs until the generator is done and two more intervals have passed (SIGINT ends it
# cleanly): a fixed count raced with a loaded machine, where the transfer took longer
"$bwmon" --watch --json --pid "$gpid" --interval-ms 200 > "$out" &
wpid=$!
wait "$gpid"
sleep 0.5
kill -INT "$wpid" 2>/dev/null
wait "$wpid"
rc=$?
[ $rc = 3 ] && { echo "SKIP: may not load BPF here"; exit 77; }
[ $rc = 0 ] || { echo "FAIL: prophet-bwmon --watch exited with $rc"; exit 1; }
cat "$out"
python3 - "$out" "$gpid" <<'PY'
import json, sys
path, pid = sys.argv[1], int(sys.argv[2])
lines = open(path).read().splitlines()
assert len(lines) >= 5, "expected at least 5 lines, got %d" % len(lines)
recs = [json.loads(l) for l in lines]
for r in recs:
    for k in ("t", "pid", "tx_bytes", "rx_bytes", "tx_bps", "rx_bps"):
        assert k in r, "missing %s in %r" % (k, r)
    assert r["pid"] == pid
    assert isinstance(r["tx_bytes"], int) and isinstance(r["rx_bytes"], int)
ts = [r["t"] for r in recs]
assert ts == sorted(ts)
N = 100 << 20
assert recs[-1]["tx_bytes"] == N and recs[-1]["rx_bytes"] == N, "expected %d bytes each way" % N
assert max(r["tx_bps"] for r in recs) > 0 and max(r["rx_bps"] for r in recs) > 0
# each interval's rate times its length gives the bytes of that interval
for p_, r in zip(recs, recs[1:]):
    dt = r["t"] - p_["t"]
    for k in ("tx", "rx"):
        moved = r[k + "_bytes"] - p_[k + "_bytes"]
        assert abs(r[k + "_bps"] * dt - moved) <= 0.05 * moved + 1e5, \
            "%s rate %.1f B/s over %.3f s does not match %d bytes" % (k, r[k + "_bps"], dt, moved)
# the rates integrate to the bytes: sum(rate * interval) == bytes moved in the watched window
print("PASS: %d lines, pid %d tx %d rx %d" % (len(recs), pid, recs[-1]["tx_bytes"], recs[-1]["rx_bytes"]))
PY
