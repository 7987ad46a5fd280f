#!/usr/bin/env python3
"""A link that changes speed mid-run (prophet-emu --bw-change-at), read from rank 0's schedule log.

usage: check_bw_change.py LOGDIR T_CHANGE_US BOUND
  T_CHANGE_US  the CLOCK_MONOTONIC instant at which prophet-emu changed the links' speed
  BOUND        iterations within which the plan in force must change
Finds the preload's iteration at the change (its iterations are the learner's, counted from the
first call), the iteration at which the eBPF probe's throughput (the net records) first fell below
0.7x its median before the change, and the first plan of a new trial round after the change.
Exit 0: the closed loop had made its choice before the change, the probe saw the change, and a new
round's plan was in force within BOUND iterations (prints those iterations); 3: inconclusive (a
trial round was still running at the change, so the plan changes anyway); 1: failure.
"""
import json
import os
import sys


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    with open(os.path.join(argv[1], "prophet-rank0.json")) as f:
        d = json.load(f)
    t_change, bound = int(argv[2]), int(argv[3])
    start = {}
    for x in d["records"]:
        if x["kind"] == "iteration":
            for c in x["calls"]:
                if c["index"] == 0 and c["arrival_us"]:
                    start[x["iteration"]] = c["arrival_us"]
    plans = [x for x in d["records"] if x["kind"] == "plan" and x.get("trial")]
    nets = [x for x in d["records"] if x["kind"] == "net" and x["probe_Bps"] is not None and
            x["probe_Bps"] > 0]
    if not start or not plans:
        print("FAIL: bw change: no logged iterations or no trial plan")
        return 1

    def iteration_at(t):
        before = [i for i in start if start[i] <= t]
        return max(before) if before else min(start)

    at = iteration_at(t_change)
    in_force = [p for p in plans if p["from_iteration"] <= at]
    if not in_force or in_force[-1]["trial"]["phase"] != "chosen":
        print("INCONCLUSIVE: bw change at iteration %d: a trial round was running (its plans "
              "change every few iterations anyway)" % at)
        return 3
    cur = in_force[-1]["trial"]
    pre = [n["probe_Bps"] for n in nets if n["t_us"] < t_change]
    post = [n for n in nets if n["t_us"] >= t_change]
    if not pre or not post:
        print("FAIL: bw change: no eBPF throughput in the net records around the change")
        return 1
    base = median(pre)
    seen = [n for n in post if n["probe_Bps"] < 0.7 * base]
    if not seen:
        print("FAIL: bw change: the eBPF throughput never fell below 0.7x its median %.1f MB/s "
              "after the change (%s)" % (base / 1e6, [round(n["probe_Bps"] / 1e6, 1) for n in post]))
        return 1
    seen_at = iteration_at(seen[0]["t_us"])
    new = [p for p in plans if p["from_iteration"] > at and p["trial"]["round"] > cur["round"]]
    if not new or new[0]["from_iteration"] - at > bound:
        print("FAIL: bw change at iteration %d (%s kept in round %d): no new trial round within "
              "%d iterations%s" % (at, cur["candidate"], cur["round"], bound,
                                   "" if not new else " (at %d)" % new[0]["from_iteration"]))
        return 1
    chosen = [p for p in plans if p["from_iteration"] > new[0]["from_iteration"] and
              p["trial"]["phase"] == "chosen" and p["trial"]["round"] == new[0]["trial"]["round"]]
    print("bw change: links changed at preload iteration %d while %s was kept (round %d); the eBPF "
          "probe saw it by iteration %d (%.1f -> %.1f MB/s); the plan in force changed at "
          "iteration %d (round %d begins: %s), %d iterations after the change (bound %d)%s" %
          (at, cur["candidate"], cur["round"], seen_at, base / 1e6, seen[0]["probe_Bps"] / 1e6,
           new[0]["from_iteration"], new[0]["trial"]["round"], new[0]["trial"]["candidate"],
           new[0]["from_iteration"] - at, bound,
           "; round %d kept %s from iteration %d" % (chosen[0]["trial"]["round"],
                                                      chosen[0]["trial"]["candidate"],
                                                      chosen[0]["from_iteration"])
           if chosen else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
