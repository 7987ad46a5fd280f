#!/usr/bin/env bash
# Call graph of preload/ by file, from the object files: for each preload .o, which other preload
# .o's global symbols (functions and data) it references (nm: U in the user, T/D/B/R/C in the
# owner). Prints the edges "user -> owner" and fails (exit 1) when they form a cycle, or when a
# user does not include its owner's header itself (preload/X.c uses Y.c: X.c has #include "Y.h";
# bw_loader.c's header is include/prophet/bw.h).
#   scripts/callgraph-check.sh [OBJDIR]   (default build/preload/CMakeFiles/prophet.dir)
#   scripts/callgraph-check.sh --edges [OBJDIR]   print the edges as well
set -euo pipefail
show=0
[ "${1:-}" = "--edges" ] && { show=1; shift; }
dir=${1:-build/preload/CMakeFiles/prophet.dir}
objs=$(ls "$dir"/*.o 2>/dev/null || true)
[ -n "$objs" ] || { echo "callgraph-check: no object files in $dir (build target prophet first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for o in $objs; do
  f=$(basename "$o" .o); f=${f%.c}
  nm "$o" | awk -v f="$f" '$1 ~ /^[0-9a-f]+$/ && $2 ~ /^[TDBRCG]$/ {print $3, f}' >>"$tmp/defs"
  nm "$o" | awk -v f="$f" '$1 == "U" {print $2, f}' >>"$tmp/uses"
done
sort -u "$tmp/defs" -o "$tmp/defs"
sort -u "$tmp/uses" -o "$tmp/uses"
# user owner
join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 {print $2, $3}' | sort -u >"$tmp/edges"
[ $show -eq 1 ] && sed 's/ / -> /' "$tmp/edges"
# cycle check: tsort reports a loop on stderr
if ! tsort <"$tmp/edges" >/dev/null 2>"$tmp/err" || [ -s "$tmp/err" ]; then
  echo "callgraph-check: call cycle among preload files (each loop printed as its files):" >&2
  sed -e 's/^tsort: -: input contains a loop:$/  loop:/' -e 's/^tsort: /    /' "$tmp/err" >&2
  exit 1
fi
# each file includes the header of every file it uses (not through another header)
src=$(cd "$(dirname "$0")/../preload" && pwd)
missing=0
while read -r user owner; do
  hdr=${owner%_stub}.h # a stub file (X_stub.c) implements X.h
  [ "$owner" = bw_loader ] && hdr=prophet/bw.h
  if ! grep -q "^#include \"$hdr\"" "$src/$user.c"; then
    echo "callgraph-check: $user.c uses $owner.c but does not #include \"$hdr\"" >&2
    missing=1
  fi
done <"$tmp/edges"
[ $missing -eq 0 ] || exit 1
echo "callgraph-check: $(wc -l <"$tmp/edges") file edges, no cycle, each user includes its owner's header"
