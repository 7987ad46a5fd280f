#!/bin/sh
# Runs a command and checks its exit status and output.
# usage: run_check.sh [VAR=VALUE ...] [+REGEX ...] [-REGEX ...] [=N:REGEX ...] [>A>>B ...] -- CMD...
#   +REGEX  must appear in stdout+stderr      -REGEX  must not appear
#   =N:REGEX  must appear exactly N times     the command must exit 0
#   >A>>B   a line matching A is immediately followed by one matching B (what the background
#           thread writes once, at any moment, when it opens the eBPF probe is not a line between
#           them: its notice, "eBPF throughput from ..." or "no eBPF throughput ...", and at
#           PROPHET_DEBUG=TRACE libbpf's own lines, "libbpf: ...")
set -u
envs="" checks=""
nl='
'
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case $1 in
    [+=\>-]*) checks="$checks$1$nl" ;;
    *) envs="$envs $1" ;;
    esac
    shift
done
shift
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
# shellcheck disable=SC2086
env $envs "$@" >"$out" 2>&1
rc=$?
fail() { echo "FAIL: $*"; echo "---- output (tail)"; tail -n 30 "$out"; exit 1; }
[ $rc -eq 0 ] || fail "exit status $rc"
echo "$checks" | while IFS= read -r c; do
    [ -n "$c" ] || continue
    case $c in
    +*) grep -Eq -- "${c#+}" "$out" || { echo "missing: ${c#+}"; exit 1; } ;;
    -*) ! grep -Eq -- "${c#-}" "$out" || { echo "unexpected: ${c#-}"; exit 1; } ;;
    =*) n=${c#=}; re=${n#*:}; n=${n%%:*}
        got=$(grep -Ec -- "$re" "$out")
        [ "$got" -eq "$n" ] || { echo "expected $n lines matching '$re', got $got"; exit 1; } ;;
    \>*) ab=${c#>}; a=${ab%%>>*}; b=${ab#*>>}
        awk -v a="$a" -v b="$b" '/^prophet: .*INFO (no )?eBPF throughput|^libbpf: / { next }
            p && $0 ~ b { f = 1 } { p = ($0 ~ a) } END { exit !f }' "$out" ||
            { echo "no line matching '$a' followed by one matching '$b'"; exit 1; } ;;
    esac
done || fail "output check"
tail -n 3 "$out"
echo PASS
