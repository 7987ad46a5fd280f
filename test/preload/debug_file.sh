#!/bin/sh
# PROPHET_DEBUG_FILE (preload/debug_lines/log_line.c): with "%h" and "%p" every process writes its lines to its
# own file, named after its host and pid, and nothing to stderr; each line names that host and pid
# and the process's rank. A file that cannot be opened gives one WARN per process on stderr naming
# it, and the lines go to stderr.
# usage: debug_file.sh [VAR=VALUE ...] -- CMD...   (VARs: LD_PRELOAD and the like)
set -u
envs=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs="$envs $1"; shift; done
shift
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/out "$tmp"/p-*; do [ -f "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }; done; exit 1; }
host=$(hostname | cut -d. -f1)

# shellcheck disable=SC2086
env $envs PROPHET_DEBUG=INFO "PROPHET_DEBUG_FILE=$tmp/p-%h-%p.log" "$@" >"$tmp/out" 2>&1 ||
    fail "exit status $?"
grep -q "prophet:" "$tmp/out" && fail "prophet: lines on stdout/stderr"
n=$(find "$tmp" -name "p-$host-*.log" | wc -l)
[ "$n" -eq 2 ] || fail "$n files p-$host-PID.log, want 2 (one per rank's process)"
for r in 0 1; do
    f=$(grep -l "INFO summary comm 0 rank $r/2:" "$tmp"/p-*.log) || fail "no file with rank $r's summary"
    [ "$(echo "$f" | wc -l)" -eq 1 ] || fail "rank $r's summary in several files"
    pid=${f##*-}; pid=${pid%.log}
    # every line of the file is this process's; from its first comm on, with rank r
    grep -v "^prophet: $host:$pid " "$f" | grep -q . && fail "$f: a line of another sender"
    grep -q "^prophet: $host:$pid \[$r\] INFO summary comm 0 rank $r/2:" "$f" ||
        fail "$f: the summary does not name $host:$pid [$r]"
done
echo "files: ok ($(cat "$tmp"/p-*.log | wc -l) lines in 2 files)"

# a file that cannot be opened: one WARN per process on stderr, and the lines there
# shellcheck disable=SC2086
env $envs PROPHET_DEBUG=INFO "PROPHET_DEBUG_FILE=$tmp/none/p-%p.log" "$@" >"$tmp/out" 2>&1 ||
    fail "exit status $? (unopenable file)"
w=$(grep -Ec "^prophet: $host:[0-9]+ (\[[0-9]\] )?WARN \[log_line.c:[0-9]+\] cannot open PROPHET_DEBUG_FILE $tmp/none/p-[0-9]+.log \(No such file or directory\); writing to stderr" "$tmp/out")
[ "$w" -eq 2 ] || fail "$w WARN lines for the unopenable file, want 2"
s=$(grep -c "^prophet: $host:[0-9]* \[[01]\] INFO summary comm 0" "$tmp/out")
[ "$s" -eq 2 ] || fail "$s summary lines on stderr, want 2"
echo "unopenable: ok"
echo PASS
