#!/usr/bin/env bash
# scripts/gpu/realjobs.py --help documents every case it runs (--list), its checks and exit status,
# and runs without PyTorch (the GPU machine is not where a reader first meets it).
set -euo pipefail
script=$1
help=$(python3 "$script" --help)
cases=$(python3 "$script" --list)
[ -n "$cases" ] || { echo "FAIL: --list printed nothing"; exit 1; }
for c in $cases; do
    grep -qE "^    $c( |$)" <<<"$help" || { echo "FAIL: case $c not described in --help"; exit 1; }
done
for word in SYNOPSIS DESCRIPTION CASES OPTIONS "EXIT STATUS" "ranks" "vs none" "blocks>1"; do
    grep -q "$word" <<<"$help" || { echo "FAIL: --help lacks '$word'"; exit 1; }
done
if python3 "$script" --cases no-such-case >/dev/null 2>&1; then
    echo "FAIL: an unknown case was accepted"; exit 1
else
    [ $? -eq 2 ] || { echo "FAIL: an unknown case did not exit 2"; exit 1; }
fi
echo "realjobs help: $(wc -w <<<"$cases") cases described"
