#!/usr/bin/env bash
# Sweeps prophet-sim over every profile at 8 ranks, link bandwidths 10/25/100 Gbit/s and alpha
# 60/300 us, and prints Markdown tables of each policy's iteration time as a ratio to the optimum
# (a column that is 1.000 by definition, the DP over itself, is left out):
# first on the profiles as given, then with --jitter 0.3 (plans made on the profile, run on 30
# copies whose gaps are each scaled by U[0.7, 1.3], compared with each copy's own optimum).
#
# usage: scripts/sim-table.sh [--sim PATH] [--profiles DIR] [--ranks N] [--wait all|per-layer]
#                             [--check]
#   --sim PATH      prophet-sim binary (default: build/bin/prophet-sim)
#   --profiles DIR  folder of prophet-profile/1 files (default: profiles)
#   --ranks N       ring size (default 8)
#   --wait MODE     passed to prophet-sim (default all)
#   --check         exit 1 (listing the cells on stderr) if any policy beats the DP optimum on a
#                   profile as given, or if, with jitter, the default policy is more than 3% from
#                   each copy's own optimum or more than 1% behind passthrough, fusion or buckets
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sim="$here/build/bin/prophet-sim"
profiles="$here/profiles"
ranks=8
wait_mode=all
check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --sim) sim="$2"; shift 2 ;;
    --profiles) profiles="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --wait) wait_mode="$2"; shift 2 ;;
    --check) check=1; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "sim-table.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$sim" ] || { echo "sim-table.sh: $sim is not executable (build prophet-sim first)" >&2; exit 2; }
shopt -s nullglob
files=("$profiles"/*.json)
[ ${#files[@]} -gt 0 ] || { echo "sim-table.sh: no profiles in $profiles" >&2; exit 2; }

results="$(mktemp)"
trap 'rm -f "$results"' EXIT
for jitter in 0 0.3; do
  for f in "${files[@]}"; do
    for bw in 10 25 100; do
      for alpha in 60 300; do
        printf '%s\t%s\t%s\t%s\t' "$jitter" "$(basename "$f" .json)" "$bw" "$alpha" >>"$results"
        "$sim" --profile "$f" --ranks "$ranks" --bandwidth "${bw}Gbit" --alpha "${alpha}us" \
          --wait "$wait_mode" --jitter "$jitter" --trials 30 --json >>"$results"
      done
    done
  done
done

python3 - "$results" "$check" "$ranks" "$wait_mode" <<'PY'
import json, sys
path, check, ranks, wait = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4]
tables, bad = {}, []
for line in open(path):
    jitter, name, bw, alpha, js = line.rstrip("\n").split("\t", 4)
    tables.setdefault(jitter, []).append((name, bw, alpha, json.loads(js)))
for jitter, rows in tables.items():
    default = rows[0][3]["default"]
    given = jitter == "0"
    # On the profiles as given the optimum's own cell is 1.000 by definition (the DP's time over
    # itself), and so is the default's when the default is the DP: such columns are left out, and
    # what is measured is every other policy's distance from the DP (and that none beats it).
    cols = ["prophet", "passthrough", "fusion", "buckets"]
    if given:
        shown_default = default != "optimal"
        print(f"### Profiles as given\n\n{ranks} ranks, ring all-reduce, --wait {wait}. Cells: "
              f"iteration time / the DP optimum's (none may be below 1.000). Default policy: "
              f"`{default}`" + ("" if shown_default else " (the DP itself: no column)") + ".\n")
    else:
        shown_default = True
        print(f"### With jitter {jitter}\n\nPlans made on the profile, run on 30 copies whose "
              f"gaps are each scaled by U[{1 - float(jitter):g}, {1 + float(jitter):g}]; "
              f"cells: mean iteration time / mean of each copy's own optimum.\n")
    head = ["profile", "link Gbit/s", "alpha us", "optimum ms"]
    if shown_default:
        head.append(f"default ({default})")
    head += cols
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for name, bw, alpha, d in rows:
        p = d["policies"]
        r = {k: v["ratio_to_optimum"] for k, v in p.items()}
        dflt = r[d["default"]]
        opt_ms = p["optimal"]["iteration_us"] / r["optimal"] / 1000
        cells = [name, bw, alpha, f"{opt_ms:.2f}"]
        if shown_default:
            cells.append(f"**{dflt:.3f}**")
        cells += [f"{r[k]:.3f}" for k in cols]
        print("| " + " | ".join(cells) + " |")
        where = f"{name} {bw}Gbit {alpha}us jitter {jitter}"
        if given:
            for k, v in r.items():  # the DP against every other policy, by the cost model
                if v < 1 - 1e-9:
                    bad.append(f"{where}: {k} {v:.6f} beats the DP optimum")
        else:
            if dflt > 1.03:
                bad.append(f"{where}: default {dflt:.4f} > 1.03 x each copy's optimum")
            for k in ("passthrough", "fusion", "buckets"):
                if dflt > r[k] * 1.01:
                    bad.append(f"{where}: default {dflt:.4f} > 1.01 x {k} {r[k]:.4f}")
    wp = max(r[3]["policies"]["prophet"]["ratio_to_optimum"] for r in rows)
    if shown_default:
        worst = max(r[3]["policies"][r[3]["default"]]["ratio_to_optimum"] for r in rows)
        print(f"\nWorst cell: default {worst:.3f}, prophet {wp:.3f}.\n")
    else:
        print(f"\nWorst cell: prophet {wp:.3f}.\n")
if check and bad:
    for b in bad:
        print("sim-table: FAIL " + b, file=sys.stderr)
    sys.exit(1)
PY
