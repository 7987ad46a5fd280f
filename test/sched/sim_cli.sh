#!/usr/bin/env bash
# prophet-sim's command line: --help documents every option, bad arguments give one line and
# the pointer to --help (tools/prophet_cli.h) and exit 2, --json prints exactly one object with every policy; sim-table.sh --check fails on a
# simulator that reports a default policy far from the optimum.
set -u
sim="$1"; profiles="$2"; table="$3"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

"$sim" --help >"$tmp/help" || fail "--help exit status"
for opt in --profile --ranks --bandwidth --alpha --wait --fusion-bytes --cycle-us --bucket-bytes \
           --credit-bytes --jitter --trials --seed --compute-scale --json --help --version; do
  grep -q -- "$opt" "$tmp/help" || fail "--help does not document $opt"
done
p="$profiles/resnet50.json"
check_bad() {
  "$sim" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
  [ $rc -eq 2 ] || fail "'$*' exited $rc, want 2"
  [ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "'$*' wrote $(wc -l <"$tmp/err") lines to stderr"
  grep -q "^prophet-sim: " "$tmp/err" || fail "'$*': no 'prophet-sim: ' line"
  [ "$(tail -n 1 "$tmp/err")" = "Try 'prophet-sim --help'." ] || fail "'$*': no pointer to --help"
  [ ! -s "$tmp/out" ] || fail "'$*' wrote to stdout"
}
check_bad
check_bad --profile "$p" --ranks 0
check_bad --profile "$p" --ranks x
check_bad --profile "$p" --bandwidth 10Gfoo
check_bad --profile "$p" --bandwidth -5Gbit
check_bad --profile "$p" --alpha 3parsecs
check_bad --profile "$p" --wait sometimes
check_bad --profile "$p" --jitter 2
check_bad --profile "$p" --compute-scale 0
check_bad --profile "$p" --compute-scale fast
check_bad --profile "$p" --no-such-option
check_bad --profile "$p" extra
check_bad --profile
"$sim" --profile "$tmp/missing.json" >/dev/null 2>&1; [ $? -eq 1 ] || fail "missing file: want exit 1"

"$sim" --profile "$p" --ranks 8 --bandwidth 25Gbit --alpha 300us --json >"$tmp/json" ||
  fail "--json exit status"
python3 - "$tmp/json" <<'PY' || fail "--json output"
import json, sys
text = open(sys.argv[1]).read()
d = json.loads(text)
assert set(d) == {"default", "policies"}, d.keys()
assert set(d["policies"]) == {"passthrough", "fusion", "buckets", "prophet", "optimal"}
assert d["default"] in d["policies"]
for v in d["policies"].values():
    assert v["iteration_us"] > 0 and v["ratio_to_optimum"] >= 1 - 1e-9
assert abs(d["policies"]["optimal"]["ratio_to_optimum"] - 1) < 1e-9
PY
# --compute-scale: 1 is the profile as given; 0.25 shortens every compute interval to a quarter,
# so passthrough (which waits for nothing but compute and its own calls) can only get faster, and
# on a compute-bound link (100 Gbit/s, 10 us) its iteration is close to a quarter.
for f in 1 0.25; do
  "$sim" --profile "$p" --ranks 16 --bandwidth 100Gbit --alpha 10us --compute-scale $f --json \
    >"$tmp/cs$f" || fail "--compute-scale $f exit status"
done
"$sim" --profile "$p" --ranks 16 --bandwidth 100Gbit --alpha 10us --json >"$tmp/cs"
python3 - "$tmp/cs" "$tmp/cs1" "$tmp/cs0.25" <<'PY' || fail "--compute-scale does not scale the compute"
import json, sys
d0, d1, dq = (json.load(open(f))["policies"] for f in sys.argv[1:])
t0, t1, tq = (d["passthrough"]["iteration_us"] for d in (d0, d1, dq))
assert t0 == t1, (t0, t1)
assert tq < t1 and abs(tq / t1 - 0.25) < 0.1, (t1, tq)
PY
# The table's text mode names every policy and marks the default.
"$sim" --profile "$p" | grep -q "(default)" || fail "table does not mark the default"

# sim-table.sh --check must be able to fail.
cat >"$tmp/fake-sim" <<'SH'
#!/bin/sh
echo '{"default": "prophet", "policies": {"passthrough": {"iteration_us": 1, "ratio_to_optimum": 1.0}, "fusion": {"iteration_us": 1, "ratio_to_optimum": 1.0}, "buckets": {"iteration_us": 1, "ratio_to_optimum": 1.0}, "prophet": {"iteration_us": 1, "ratio_to_optimum": 1.05}, "optimal": {"iteration_us": 1, "ratio_to_optimum": 1.0}}}'
SH
chmod +x "$tmp/fake-sim"
"$table" --sim "$tmp/fake-sim" --profiles "$profiles" --check >/dev/null 2>&1 &&
  fail "sim-table.sh --check accepted a default 5% from the optimum"
echo "sim_cli: ok"
