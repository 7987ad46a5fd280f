#!/usr/bin/env bash
# The layering of preload/, checked from the object files and the sources.
#
# preload/ is in wings (preload/README.md), one folder per layer. The layers, top to bottom, are
# preload/WINGS (one line per level; wings on one line are siblings). From each preload .o this
# script takes which other preload .o's global symbols (functions and data) it references (nm: U in
# the user, T/D/B/R/C in the owner) and fails (exit 1) when:
#   - an edge runs from a wing to one on its own level or above it (an arrow back up);
#   - a source includes a header of a wing on its own level or above it ("wing/x.h");
#   - the file edges form a cycle (inside a wing too);
#   - a user does not include its owner's header itself ("wing/owner.h"; bw_loader.c's header is
#     include/prophet/bw.h; a stub X_stub.c implements X.h), or the wing's own header
#     ("wing/wing.h", the interface of a wing split in files, e.g. holding/holding.h) where that
#     declares every symbol the user takes from the owner;
#   - a wing has no section in preload/README.md ("### `wing/`"), a source file no row there, or a
#     folder of preload/ is in no level.
#
#   scripts/callgraph-check.sh [--edges] [--wings] [--extra-edge 'USER OWNER'] [OBJDIR]
#     OBJDIR       default build/preload/CMakeFiles/prophet.dir
#     --edges      print the file edges (wing/file -> wing/file)
#     --wings      print the wing edges with their counts
#     --extra-edge add one edge, as "engine/schedule real_libs/cuda_driver", before the checks (a
#                  self-test: an edge that runs back up must make the check fail)
set -euo pipefail
show=0
showw=0
extra=""
while [ $# -gt 0 ]; do
  case "$1" in
  --edges) show=1 ;;
  --wings) showw=1 ;;
  --extra-edge) extra=$2; shift ;;
  -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "callgraph-check: unknown option $1" >&2; exit 2 ;;
  *) break ;;
  esac
  shift
done
dir=${1:-build/preload/CMakeFiles/prophet.dir}
src=$(cd "$(dirname "$0")/../preload" && pwd)
objs=$(find "$dir" -name '*.o' 2>/dev/null | sort || true)
[ -n "$objs" ] || { echo "callgraph-check: no object files in $dir (build target prophet first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# wing -> level (0 is the top)
awk '!/^#/ && NF { for (i = 1; i <= NF; i++) print $i, lvl + 0; lvl++ }' "$src/WINGS" >"$tmp/levels"
level() { awk -v w="$1" '$1 == w { print $2; f = 1 } END { if (!f) print -1 }' "$tmp/levels"; }
bad=0
for o in $objs; do
  rel=${o#"$dir"/}
  f=${rel%.o}; f=${f%.c} # wing/file
  # an object whose source is gone (a build folder from before a file moved) is not the library's
  [ -f "$src/$f.c" ] || continue
  case "$f" in */*) ;; *)
    echo "callgraph-check: $f.c is in no wing (preload/WINGS)" >&2; bad=1; continue ;; esac
  [ "$(level "${f%%/*}")" -ge 0 ] || { echo "callgraph-check: wing ${f%%/*} is not in preload/WINGS" >&2; bad=1; }
  nm "$o" | awk -v f="$f" '$1 ~ /^[0-9a-f]+$/ && $2 ~ /^[TDBRCG]$/ {print $3, f}' >>"$tmp/defs"
  nm "$o" | awk -v f="$f" '$1 == "U" {print $2, f}' >>"$tmp/uses"
done
[ $bad -eq 0 ] || exit 1
# every wing is a folder with its README section, every source file a row in it
for w in $(awk '{print $1}' "$tmp/levels"); do
  [ -d "$src/$w" ] || { echo "callgraph-check: wing $w (preload/WINGS) is no folder" >&2; bad=1; continue; }
  grep -q "^### \`$w/\`" "$src/README.md" ||
    { echo "callgraph-check: wing $w/ has no section in preload/README.md" >&2; bad=1; }
  for c in "$src/$w"/*.c; do
    grep -q "^| \`$(basename "$c")\` |" "$src/README.md" ||
      { echo "callgraph-check: preload/$w/$(basename "$c") has no row in preload/README.md" >&2; bad=1; }
  done
done
for d in "$src"/*/; do
  d=$(basename "$d")
  [ "$d" = include ] || [ "$(level "$d")" -ge 0 ] ||
    { echo "callgraph-check: preload/$d/ is in no level of preload/WINGS" >&2; bad=1; }
done
[ $bad -eq 0 ] || exit 1
sort -u "$tmp/defs" -o "$tmp/defs"
sort -u "$tmp/uses" -o "$tmp/uses"
# user owner symbol
join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 {print $2, $3, $1}' | sort -u >"$tmp/syms"
awk '{print $1, $2}' "$tmp/syms" >"$tmp/edges"
[ -n "$extra" ] && echo "$extra" >>"$tmp/edges"
sort -u "$tmp/edges" -o "$tmp/edges"
[ $show -eq 1 ] && sed 's/ / -> /' "$tmp/edges"

# wing edges: each must run down at least one level
awk 'NR == FNR { lvl[$1] = $2; next }
     { split($1, u, "/"); split($2, o, "/"); if (u[1] != o[1]) print u[1], lvl[u[1]], o[1], lvl[o[1]], $1, $2 }' \
  "$tmp/levels" "$tmp/edges" >"$tmp/wedges"
[ $showw -eq 1 ] && awk '{print $1 " -> " $3}' "$tmp/wedges" | sort | uniq -c | sort -k2
while read -r uw ul ow ol user owner; do
  if [ "$ol" -le "$ul" ]; then
    echo "callgraph-check: arrow back up: $user.c ($uw) uses $owner.c ($ow, not below $uw in preload/WINGS)" >&2
    bad=1
  fi
done <"$tmp/wedges"
# includes of a wing's headers: only from wings above it
for f in $(cd "$src" && ls ./*/*.[ch] | sed 's|^\./||'); do
  w=${f%%/*}
  [ "$w" = include ] && continue
  wl=$(level "$w")
  for inc in $(sed -n 's/^#include "\([a-z_]*\)\/[a-z_]*\.h"$/\1/p' "$src/$f" | sort -u); do
    [ "$inc" = "$w" ] && continue
    il=$(level "$inc")
    [ "$il" -ge 0 ] || continue # not a wing (e.g. prophet/ in the top-level include/)
    if [ "$il" -le "$wl" ]; then
      echo "callgraph-check: include back up: preload/$f ($w) includes a header of $inc" >&2
      bad=1
    fi
  done
done
[ $bad -eq 0 ] || exit 1

# cycle check: tsort reports a loop on stderr
if ! tsort <"$tmp/edges" >/dev/null 2>"$tmp/err" || [ -s "$tmp/err" ]; then
  echo "callgraph-check: call cycle among preload files (each loop printed as its files):" >&2
  sed -e 's/^tsort: -: input contains a loop:$/  loop:/' -e 's/^tsort: /    /' "$tmp/err" >&2
  exit 1
fi
# each file includes the header of every file it uses (not through another header), or the wing's
# own header when that declares every symbol it uses from the file
while read -r user owner; do
  hdr=${owner%_stub}.h # a stub file (X_stub.c) implements X.h
  [ "${owner##*/}" = bw_loader ] && hdr=prophet/bw.h
  [ -f "$src/$user.c" ] || continue # an --extra-edge of a file that does not exist
  grep -q "^#include \"$hdr\"" "$src/$user.c" && continue
  front=${owner%%/*}/${owner%%/*}.h
  if [ -f "$src/$front" ] && grep -q "^#include \"$front\"" "$src/$user.c"; then
    undeclared=$(awk -v u="$user" -v o="$owner" '$1 == u && $2 == o {print $3}' "$tmp/syms" |
      while read -r sym; do grep -qw -- "$sym" "$src/$front" || echo "$sym"; done)
    [ -z "$undeclared" ] && continue
  fi
  echo "callgraph-check: $user.c uses $owner.c but does not #include \"$hdr\"" >&2
  missing=1
done <"$tmp/edges"
[ "${missing:-0}" -eq 0 ] || exit 1
echo "callgraph-check: $(wc -l <"$tmp/edges") file edges in $(wc -l <"$tmp/levels") wings," \
  "$(wc -l <"$tmp/wedges") between wings, all downward; no cycle; each user includes its owner's header"
