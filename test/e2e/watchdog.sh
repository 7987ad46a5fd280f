#!/bin/sh
# A watchdog thread that queries the work end events every 100 us must leave the blocks unchanged
# (a query of a held event answers "not ready" and releases nothing): the same job, with a
# bytes-only plan (blocks a function of program order), is run without and with the watchdog, and
# every rank's summary (calls, scheduled, blocks, blocks>1, mean members) must be the same; the
# watchdog must have seen held events ("not ready" answers) and the results must be exact.
# usage: watchdog.sh BUILD PROFILE
set -u
build=$1 prof=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
run() { # out, extra args...
    out=$1
    shift
    env LD_LIBRARY_PATH="$build/lib/emu" LD_PRELOAD="$build/lib/libprophet.so" PROPHET_DEBUG=INFO \
        PROPHET_POLICY=buckets PROPHET_BUCKET_BYTES=2MiB \
        "$build/bin/prophet-emu" --timeout 120 --quiet --ranks 2 --profile "$prof" \
        --mode per-tensor --iters 32 --scale 0.05 --elements-scale 0.01 "$@" >"$out" 2>&1
}
fail() { echo "FAIL: $*"; for f in "$tmp"/*.out; do echo "---- $f (tail)"; tail -n 15 "$f"; done; exit 1; }
run "$tmp/plain.out" || fail "the run without the watchdog failed"
run "$tmp/watchdog.out" --watchdog-us 100 || fail "the run with the watchdog failed"
summary() { # the block counts per rank, sorted by rank
    grep "prophet: .*INFO summary comm" "$1" |
        sed -n 's/.*rank \([0-9]*\)\/[0-9]*: calls=\([0-9]*\) scheduled=\([0-9]*\) .* blocks=\([0-9]*\) blocks>1=\([0-9]*\) mean_members=\([0-9.]*\) .*/rank \1 calls=\2 scheduled=\3 blocks=\4 blocks>1=\5 mean=\6/p' |
        sort
}
summary "$tmp/plain.out" >"$tmp/plain.s"
summary "$tmp/watchdog.out" >"$tmp/watchdog.s"
[ "$(wc -l <"$tmp/plain.s")" -eq 2 ] || fail "expected 2 summary lines"
grep -q "blocks>1=[1-9]" "$tmp/plain.s" || fail "no block of more than one call was formed"
cmp -s "$tmp/plain.s" "$tmp/watchdog.s" || {
    echo "without:"; cat "$tmp/plain.s"; echo "with the watchdog:"; cat "$tmp/watchdog.s"
    fail "the watchdog changed the blocks"
}
grep -Eq "watchdog: [0-9]+ queries, [1-9][0-9]* not ready" "$tmp/watchdog.out" ||
    fail "the watchdog never saw a held (not ready) event"
cat "$tmp/plain.s"
grep "watchdog:" "$tmp/watchdog.out"
echo "PASS"
