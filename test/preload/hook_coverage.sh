#!/bin/sh
# The hook table cannot miss an entry point (scripts/gen-cuda-hook-table.py):
#   hook_coverage.sh check SCRIPT CUDA_INCLUDE  the real cuda.h passes the coverage check and
#       generates; a copy with one more stream-taking declaration (cuFooAsync) fails both, naming it,
#       and leaves no table behind.
#   hook_coverage.sh doc SCRIPT DOC  the handling table in DOC (between the hook-coverage markers)
#       is the one the script's lists give.
set -u
mode=$1 script=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

if [ "$mode" = doc ]; then
    doc=$3
    sed -n '/<!-- hook-coverage:begin/,/<!-- hook-coverage:end/p' "$doc" | sed '1d;$d' >"$tmp/doc"
    [ -s "$tmp/doc" ] || fail "no hook-coverage section in $doc"
    python3 "$script" --doc >"$tmp/want" || fail "$script --doc"
    if ! diff -u "$tmp/want" "$tmp/doc"; then
        fail "$doc's entry point table differs from the script's lists; regenerate it with $script --doc"
    fi
    echo "PASS: $doc lists $(grep -c '^| `' "$tmp/doc") entry points as the script does"
    exit 0
fi

inc=$3
python3 "$script" --check "$inc/cuda.h" 2>"$tmp/err" || { cat "$tmp/err"; fail "the real cuda.h fails"; }
python3 "$script" "$inc/cuda.h" "$tmp/real.h" || fail "no table from the real cuda.h"
grep -q '^ *H(cuEventRecord,' "$tmp/real.h" || fail "the generated table lacks cuEventRecord"

mkdir "$tmp/inc" && cp "$inc/cuda.h" "$tmp/inc/cuda.h" || exit 1
[ -r "$inc/cudaTypedefs.h" ] && cp "$inc/cudaTypedefs.h" "$tmp/inc/"
printf '%s\n' 'CUresult CUDAAPI cuFooAsync(CUdeviceptr p, CUstream hStream);' >>"$tmp/inc/cuda.h"
for how in --check generate; do
    if [ "$how" = generate ]; then
        python3 "$script" "$tmp/inc/cuda.h" "$tmp/doctored.h" 2>"$tmp/err"
    else
        python3 "$script" --check "$tmp/inc/cuda.h" 2>"$tmp/err"
    fi
    rc=$?
    [ $rc -ne 0 ] || fail "$how passed a cuda.h with an unreviewed cuFooAsync"
    grep -q 'cuFooAsync takes CUstream' "$tmp/err" || { cat "$tmp/err"; fail "$how did not name cuFooAsync"; }
    [ "$(grep -c 'neither wrapped nor reviewed' "$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "$how named more than cuFooAsync"; }
done
[ ! -e "$tmp/doctored.h" ] || fail "a table was written from the doctored cuda.h"
echo "PASS: the real cuda.h is covered; the doctored one fails: $(cat "$tmp/err")"
