#!/usr/bin/env python3
"""bench.versus: scripts/bench_versus.py runs a job and its variant interleaved, on prophet-emu.

A tiny job (MobileNet-v2 per-tensor, 2 ranks, a few iterations, 2 rounds) against the same job
with a loss all-reduce every 2 steps: every one of the four columns ran once per round, the
variant's runs had the extra calls (the preload's summary counted more calls), the JSON's share is
the ratio of the two speed-ups of the cell medians, the table says the variant's arguments, and
--check-share above the measured share exits 1 (the check can fail).

  check_versus.py BUILD
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "bench_versus.py")


def main():
    build = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "v.json")
        args = [sys.executable, SCRIPT, "--versus", "--loss-every 2", "--json", js, "--build", build,
                "--profiles", "mobilenet_v2", "--ranks", "2", "--bandwidths", "10Gbit",
                "--modes", "per-tensor", "--iters", "12", "--warmup", "4", "--repeat", "2",
                "--emu-args", "--scale 0.05 --elements-scale 0.01"]
        p = subprocess.run(args, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            sys.exit(f"FAIL: bench_versus exited {p.returncode}:\n{p.stderr[-3000:]}")
        r = json.load(open(js))
        for k in ("none", "default", "none+", "default+"):
            if len(r["runs_us"].get(k, [])) != 2:
                sys.exit(f"FAIL: column {k}: {r['runs_us'].get(k)} (want 2 runs)")
        med = {k: statistics.median(v) for k, v in r["runs_us"].items()}
        want = (med["none+"] / med["default+"]) / (med["none"] / med["default"])
        if abs(r["share"] - want) > 1e-9:
            sys.exit(f"FAIL: share {r['share']} is not the speed-ups' ratio {want}")
        if r["versus"] != "--loss-every 2" or "plus `--loss-every 2`" not in p.stdout:
            sys.exit(f"FAIL: the variant is not named in the table:\n{p.stdout}")
        if len(r["paired_share"]) != 2:
            sys.exit(f"FAIL: paired shares {r['paired_share']}")
        # the variant ran with its extra calls: the preload counted more calls on its comm
        calls = {k: {x["calls"] for x in r["loop"] if x["column"] == k} for k in ("default", "default+")}
        if len(calls["default"]) != 1 or len(calls["default+"]) != 1 or \
                not min(calls["default+"]) > max(calls["default"]):
            sys.exit(f"FAIL: calls counted by the preload: {calls} (the variant's loss calls?)")
        q = subprocess.run(args + ["--check-share", f"{r['share'] * 2 + 1:.3f}"],
                           capture_output=True, text=True, timeout=600)
        if q.returncode != 1 or "below" not in q.stderr:
            sys.exit(f"FAIL: --check-share above the share exited {q.returncode}:\n{q.stderr[-2000:]}")
    print(f"bench.versus: 4 columns x 2 rounds; share {100 * r['share']:.0f}%; "
          f"--check-share above it exits 1")


if __name__ == "__main__":
    main()
