#!/usr/bin/env bash
# README.md's knob table is generated from the one knob table (PROPHET_KNOBS in
# include/prophet/config.h) by build/bin/prophet-knob-table; it stands between the two marker
# lines below in README.md.
#   scripts/knob-table.sh [--build DIR]           rewrite README.md's table
#   scripts/knob-table.sh --check [--build DIR]   exit 1 (with a diff) if README.md's table differs
set -euo pipefail
cd "$(dirname "$0")/.."
check=0 build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1 ;;
    --build) build=$2; shift ;;
    *) echo "knob-table.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
begin='<!-- knob-table: generated from include/prophet/config.h by scripts/knob-table.sh -->'
end='<!-- /knob-table -->'
bin=$build/bin/prophet-knob-table
[ -x "$bin" ] || { echo "knob-table.sh: $bin missing (build first)" >&2; exit 2; }
grep -qxF "$begin" README.md && grep -qxF "$end" README.md ||
  { echo "knob-table.sh: README.md lacks the marker lines" >&2; exit 1; }
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.new"' EXIT
"$bin" >"$tmp"
if [ $check -eq 1 ]; then
  awk -v b="$begin" -v e="$end" '$0 == e {on = 0} on {print} $0 == b {on = 1}' README.md |
    diff -u - "$tmp" >&2 || { echo "knob-table.sh: README.md's knob table is out of date; run scripts/knob-table.sh" >&2; exit 1; }
  echo "knob-table.sh: README.md's knob table matches include/prophet/config.h"
  exit 0
fi
awk -v b="$begin" -v e="$end" -v t="$tmp" '
  $0 == b {print; while ((getline l < t) > 0) print l; skip = 1; next}
  $0 == e {skip = 0}
  !skip {print}' README.md >"$tmp.new"
mv "$tmp.new" README.md
echo "knob-table.sh: README.md's knob table rewritten"
