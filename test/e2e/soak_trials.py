#!/usr/bin/env python3
"""A long job on a host whose load comes and goes: the closed loop must not keep paying for trials.

usage: soak_trials.py BUILD PROFILE [ITERS] [--load N] [--period S] [--keep DIR]
Runs a per-tensor job of 4 ranks under the preload (default knobs) for ITERS iterations (default
2000) while N busy loops (default 2) run S seconds on and S off (default 3: scripts/bench.py's
--load-mode bursty), then reads what the preload said and logged:
  - every rank's summary: trial_iters (iterations run under a trial plan other than the kept one)
    at most 5% of iters;
  - rank 0's schedule log (check_plan.py trials): every round's figures recomputed from its
    samples, and no round kept a plan that measured slower than the incumbent (the plan kept
    before it) in that round.
Prints the rounds, their choices and the drifts that started them (--keep DIR: the job's output
and the ranks' logs copied there). Exit 0, or 1 with the violation.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from bench import HostLoad  # noqa: E402  (the benchmark's busy loops, always stopped)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("profile")
    ap.add_argument("iters", nargs="?", type=int, default=2000)
    ap.add_argument("--load", type=int, default=2)
    ap.add_argument("--period", type=float, default=3.0)
    ap.add_argument("--max-trial-share", type=float, default=0.05)
    ap.add_argument("--keep", help="copy the job's output and rank 0's logs to this folder")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as logs:
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(a.build, "lib", "emu"),
                   LD_PRELOAD=os.path.join(a.build, "lib", "libprophet.so"), PROPHET_LOG=logs,
                   PROPHET_LOG_ITERS="0:300", PROPHET_DEBUG="INFO", EMU_NCCL_BW="1Gbit")
        cmd = [os.path.join(a.build, "bin", "prophet-emu"), "--quiet", "--timeout", "3000",
               "--ranks", "4", "--profile", a.profile, "--mode", "per-tensor", "--iters",
               str(a.iters), "--scale", "0.5", "--elements-scale", "0.05"]
        with HostLoad(a.load, "bursty" if a.load else "constant", a.period, 0.0):
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
        out = p.stdout + p.stderr
        if p.returncode != 0:
            print("FAIL: prophet-emu exited %d" % p.returncode)
            print("\n".join(out.splitlines()[-30:]))
            return 1
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            with open(os.path.join(a.keep, "emu.out"), "w") as f:
                f.write(out)
            subprocess.run(["cp", "-r", logs, os.path.join(a.keep, "logs")], check=False)
        rounds = [l.split(" INFO ", 1)[1] for l in out.splitlines()
                  if re.search(r"trial round \d+: (.* kept|candidates)|drifted since", l) and
                  "rank" not in l]
        seen = set()
        for l in rounds:  # a round's lines come from every rank, a drift's from rank 0 only
            if "drifted since" in l or l not in seen:
                print("  " + l)
            seen.add(l)
        sums = re.findall(r"summary comm 0 rank (\d+)/\d+: .* iters=(\d+) trial_iters=(\d+)", out)
        if len(sums) != 4:
            print("FAIL: %d summary lines" % len(sums))
            return 1
        worst = max(int(t) / max(int(i), 1) for _, i, t in sums)
        print("trial_iters: %s (of iters), worst %.1f%%" %
              (", ".join("%s/%s" % (t, i) for _, i, t in sums), 100 * worst))
        chk = subprocess.run([sys.executable, os.path.join(HERE, "check_plan.py"), logs, "4",
                              "trials"], capture_output=True, text=True)
        print((chk.stdout + chk.stderr).strip())
        if chk.returncode != 0:
            return 1
        if worst > a.max_trial_share:
            print("FAIL: trial iterations %.1f%% of the run (bound %.0f%%)" %
                  (100 * worst, 100 * a.max_trial_share))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
