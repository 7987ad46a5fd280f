#!/bin/sh
# log.report_predicted: the risk-free first step. An emulated 2-rank per-tensor job run with
# `prophet-run --observe --log DIR` (nothing held, nothing regrouped), then `prophet-report DIR`:
# its per-policy predictions (text and --json) must equal what prophet-sim predicts for the job's
# profile (--profile-out) over the same network and ranks, policy by policy, and the text must
# put them beside the measured iteration time. The log must say gate observe and hold nothing.
# usage: report_predicted.sh PROPHET_RUN PROPHET_EMU EMU_LIBDIR PROPHET_REPORT PROPHET_SIM PROFILE OUTDIR [PYTHON3]
set -eu
run=$1 emu=$2 emulib=$3 report=$4 sim=$5 profile=$6 out=$7 py=${8:-python3}
rm -rf "$out"
mkdir -p "$out"
EMU_NCCL_BW=1Gbit LD_LIBRARY_PATH="$emulib" "$run" --observe --log "$out/logs" \
    "$emu" --ranks 2 --mode per-tensor --profile "$profile" --iters 40 --scale 0.05 \
    --elements-scale 0.01 --timeout 120 --quiet
"$report" "$out/logs" >"$out/report.txt"
"$report" --json --profile-out "$out/job-profile.json" "$out/logs" >"$out/report.json"
exec "$py" - "$out" "$sim" <<'PY'
import json, subprocess, sys
out, sim = sys.argv[1], sys.argv[2]
fail = []
rep = json.load(open(f"{out}/report.json"))
job = rep["job"]
if job.get("gate") not in (None, "observe"):
    fail.append(f"gate {job.get('gate')!r}, not observe")
adv = job["advice"]
if not adv.get("available"):
    sys.exit(f"FAIL: no advice: {adv.get('why')}")
pred = adv["predicted_by_policy_us"]
cmd = [sim, "--profile", f"{out}/job-profile.json", "--ranks", str(pred["ranks"]),
       "--bandwidth", repr(pred["link_Bps"]), "--alpha", repr(pred["alpha_us"]), "--json"]
simd = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
pols = simd["policies"]
if set(pols) != {"passthrough", "fusion", "buckets", "prophet", "optimal"}:
    fail.append(f"prophet-sim's policies {sorted(pols)}")
for name, v in pols.items():
    got = pred.get(name)
    if not isinstance(got, (int, float)) or abs(got - v["iteration_us"]) > 1e-6 * v["iteration_us"] + 0.01:
        fail.append(f"{name}: prophet-report {got} us, prophet-sim {v['iteration_us']} us")
text = open(f"{out}/report.txt").read()
line = [l for l in text.splitlines() if l.lstrip().startswith("predicted ")]
if not line:
    fail.append("the text report has no 'predicted' line")
else:
    for name, v in pols.items():
        want = f"{name} {v['iteration_us'] / 1000:.3f} ms"
        if want not in line[0]:
            fail.append(f"text: '{want}' not in {line[0]!r}")
    if "measured" not in text.split(line[0], 1)[1].splitlines()[1]:
        fail.append("text: no measured iteration time beside the predictions")
for f in fail:
    print("FAIL: " + f)
print("report_predicted: " + ("FAIL" if fail else "PASS") +
      f" ({len(pols)} policies, {pred['ranks']} ranks, alpha {pred['alpha_us']:.1f} us)")
sys.exit(1 if fail else 0)
PY
