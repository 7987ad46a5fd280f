#!/bin/sh
# The manual pages (cmake/packaging.cmake, scripts/help2man.py): built for every program of the
# build tree, installed by `cmake --install` to share/man/man1 for every program it installs to
# bin/, saying what the program's --help says (word for word), and readable: `man -l` (else
# groff) renders each without a warning, with its NAME line, its SYNOPSIS, every option its
# --help names, and the project's version.
# usage: man_pages.sh BUILD VERSION
set -u
build=$1 version=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -s "$tmp/out" ] && { echo "---- output (head)"; head -n 40 "$tmp/out"; }; exit 1; }
export LD_LIBRARY_PATH="$build/lib/emu"
if command -v man >/dev/null; then render="man"; elif command -v groff >/dev/null; then render="groff"
else echo "SKIP: neither man (apt-get install man-db) nor groff is installed"; exit 77; fi

cmake --install "$build" --prefix "$tmp/p" >"$tmp/out" 2>&1 || fail "cmake --install failed"
n=0
for prog in "$tmp"/p/bin/*; do
    p=$(basename "$prog")
    page=$tmp/p/share/man/man1/$p.1
    [ -f "$build/man/man1/$p.1" ] || fail "no $build/man/man1/$p.1 built"
    [ -f "$page" ] || fail "bin/$p installed without share/man/man1/$p.1"
    # warnings of the roff itself (groff -ww: all of them)
    if command -v groff >/dev/null; then
        groff -man -Tutf8 -ww -z "$page" >"$tmp/out" 2>&1 || fail "groff failed on $p.1"
        [ ! -s "$tmp/out" ] || fail "groff warns about $p.1"
    fi
    if [ $render = man ]; then
        MANWIDTH=200 MAN_KEEP_FORMATTING=0 man -l "$page" >"$tmp/out" 2>"$tmp/err" ||
            fail "man -l $p.1 failed: $(cat "$tmp/err")"
    else
        groff -man -Tascii -rLL=200n "$page" >"$tmp/out" 2>&1 || fail "groff $p.1 failed"
    fi
    sed -i 's/.\x08//g' "$tmp/out" # overstrike (bold, underline) of a terminal rendering
    grep -Eq "^ +$p - [a-z]" "$tmp/out" || fail "$p.1 has no NAME line '$p - ...'"
    grep -q "^SYNOPSIS" "$tmp/out" || fail "$p.1 has no SYNOPSIS"
    grep -q "Prophet for NCCL $version" "$tmp/out" || fail "$p.1 does not name version $version"
    # the page says what --help says: the same words in the same order (its roff source, less
    # the macros and escapes), and every option --help names is in the rendering
    "$build/bin/$p" --help >"$tmp/help"
    python3 - "$tmp/help" "$page" <<'PY' || fail "$p.1 does not say what $p --help says"
import re, sys
help_words = open(sys.argv[1]).read().split()
words = []
for line in open(sys.argv[2]).read().splitlines():
    if line.startswith(('.\\"', ".TH")):
        continue
    if line.startswith(".SH"):
        line = line[3:].replace('"', "")
    elif line.startswith("."):
        continue
    line = re.sub(r"\\f[BIRP]", "", line)
    line = line.replace("\\&", "").replace("\\-", "-").replace("\\e", "\\")
    words += line.split()
if words != help_words:
    n = next((i for i, (a, b) in enumerate(zip(words, help_words)) if a != b),
             min(len(words), len(help_words)))
    print("from word %d: page %r, --help %r" % (n, words[n:n + 8], help_words[n:n + 8]))
    sys.exit(1)
PY
    "$build/bin/$p" --help | grep -Eo -- "--[a-z][a-z0-9-]+" | sort -u >"$tmp/opts"
    [ -s "$tmp/opts" ] || fail "$p --help names no option"
    while read -r o; do
        grep -q -- "$o" "$tmp/out" || fail "$p.1 lacks $o, which $p --help names"
    done <"$tmp/opts"
    n=$((n + 1))
done
[ $n -ge 4 ] || fail "only $n programs installed"
echo "$n manual pages built, installed and rendered with $render"
echo "PASS"
