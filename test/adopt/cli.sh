#!/bin/sh
# The programs' command lines (tools/prophet_cli.h), each checked against its real output:
#   --version   "PROG (Prophet for NCCL) VERSION" on stdout, exit 0, VERSION the project's
#   usage       an unknown option, a value that is not a number (naming the option), a missing
#               value: "PROG: ..." then "Try 'PROG --help'." on stderr, nothing on stdout, exit 2
#   prophet-run COMMAND not found (127) or not executable (126), said in its own words;
#               --print shell-quotes a value with a space and a quote (eval gives it back)
#   prophet-bwmon  --pid of no process: exit 1, "no such process" (no privilege needed)
# usage: cli.sh BUILD VERSION
set -u
build=$1 version=$2
bin=$build/bin
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in out err; do [ -s "$tmp/$f" ] && { echo "---- $f"; cat "$tmp/$f"; }; done; exit 1; }
export LD_LIBRARY_PATH="$build/lib/emu"
progs="prophet-run prophet-doctor prophet-report prophet-sim"
for p in prophet-bwmon prophet-emu; do [ -x "$bin/$p" ] && progs="$progs $p"; done

run() { # WANT-STATUS PROG ARGS...
    want=$1 p=$2; shift 2
    "$bin/$p" "$@" >"$tmp/out" 2>"$tmp/err"
    st=$?
    [ $st -eq "$want" ] || fail "$p $*: exit $st, expected $want"
}
usage_error() { # PROG LINE ARGS...: a usage error whose first line is exactly "PROG: LINE"
    p=$1 line=$2; shift 2
    run 2 "$p" "$@"
    [ ! -s "$tmp/out" ] || fail "$p $*: a usage error wrote to stdout"
    [ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "$p $*: $(wc -l <"$tmp/err") lines on stderr, expected 2"
    [ "$(head -n 1 "$tmp/err")" = "$p: $line" ] || fail "$p $*: expected '$p: $line'"
    [ "$(tail -n 1 "$tmp/err")" = "Try '$p --help'." ] || fail "$p $*: no pointer to --help"
}

for p in $progs; do
    run 0 "$p" --version
    [ "$(cat "$tmp/out")" = "$p (Prophet for NCCL) $version" ] ||
        fail "$p --version: expected '$p (Prophet for NCCL) $version'"
    [ ! -s "$tmp/err" ] || fail "$p --version wrote to stderr"
    "$bin/$p" --help | grep -q -- "--version" || fail "$p --help does not document --version"
    usage_error "$p" "unknown option '--no-such-option'" --no-such-option
    usage_error "$p" "unknown option '--no-such-option'" --no-such-option=3
done
echo "--version and unknown options: ok ($progs)"

# a value that is not a number names its option; a missing value
usage_error prophet-sim "--ranks: 'abc' is not an integer 1..1048576" --profile x --ranks abc
usage_error prophet-sim "option '--ranks' needs a value" --profile x --ranks
usage_error prophet-report "--iteration: 'abc' is not a non-negative integer" --svg o --iteration abc x
usage_error prophet-doctor "--pid: 'abc' is not a process id" --pid abc
usage_error prophet-doctor "option '--pid' needs a value" --pid
usage_error prophet-run "option '--log' needs a value" --log
usage_error prophet-run "no COMMAND given"
if [ -x "$bin/prophet-bwmon" ]; then
    usage_error prophet-bwmon "--interval-ms: 'abc' is not a number" --watch --interval-ms abc
    usage_error prophet-bwmon "--interval-ms: '0' is out of range 1..1000000000" --watch --interval-ms 0
    usage_error prophet-bwmon "option '--pid' needs a value" --pid
    usage_error prophet-bwmon "give exactly one of --daemon or --watch"
    # a pid that is no process: refused before anything is loaded
    pid=999999
    while kill -0 $pid 2>/dev/null; do pid=$((pid + 1)); done
    run 1 prophet-bwmon --pid $pid
    [ "$(cat "$tmp/err")" = "prophet-bwmon: --pid $pid: no such process" ] ||
        fail "prophet-bwmon --pid $pid: expected 'no such process'"
fi
if [ -x "$bin/prophet-emu" ]; then
    usage_error prophet-emu "--ranks: 'abc' is not an integer 1..64" --ranks abc
fi
echo "values and missing values: ok"

# prophet-run: COMMAND's errors in its own words
run 127 prophet-run no-such-command-$$
[ "$(cat "$tmp/err")" = "prophet-run: no-such-command-$$: command not found (not in PATH)" ] ||
    fail "prophet-run no-such-command: not in its own words"
run 127 prophet-run "$tmp/missing"
grep -qx "prophet-run: $tmp/missing: no such file" "$tmp/err" || fail "prophet-run MISSING-FILE"
: >"$tmp/plain"
run 126 prophet-run "$tmp/plain"
grep -qx "prophet-run: $tmp/plain: not an executable file" "$tmp/err" || fail "prophet-run NOT-EXECUTABLE"
run 3 prophet-run sh -c 'exit 3' # COMMAND's own status
# --print: a value with a space and a quote comes back whole through eval
dir="$tmp/a dir's logs"
run 0 prophet-run --log "$dir" --print
grep -q "^export PROPHET_LOG='" "$tmp/out" || fail "--print did not quote PROPHET_LOG"
(eval "$(cat "$tmp/out")" && [ "$PROPHET_LOG" = "$(cd "$dir" && pwd -P)" ] &&
    case ":$LD_PRELOAD:" in *"/libprophet.so:"*) ;; *) exit 1 ;; esac) ||
    fail "eval of --print does not give back the log folder and LD_PRELOAD"
run 0 prophet-run --observe --print
grep -q "^export PROPHET_GATE=observe$" "$tmp/out" || fail "--print quoted a plain value"
echo "prophet-run: ok"
echo "PASS"
