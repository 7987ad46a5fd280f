#!/usr/bin/env python3
"""A link that changes speed mid-run (prophet-emu --bw-change-at), read from rank 0's schedule log.

usage: check_bw_change.py LOGDIR EMU_JSON JOB_ITER T_CHANGE_US BOUND
  EMU_JSON     prophet-emu's --json summary (its rank 0's iteration times)
  JOB_ITER     the job iteration at whose start prophet-emu changed the links' speed
  T_CHANGE_US  the CLOCK_MONOTONIC instant at which it did
  BOUND        iterations within which the plan in force must change
Finds the preload's iteration at the change (its iterations are the learner's, counted from the
first call; the one before the job iteration that starts at the change), the iteration at which
the eBPF probe's throughput (the net records) first fell below 0.7x its median before the change,
and the first plan of a new trial round after the change. The preload logs every iteration only
while it holds calls: under a passthrough plan, one in 32. So the preload's iteration at the change
is found from the job's: the job's iteration starts are rebuilt from the change instant and
prophet-emu's iteration times, each logged preload iteration's first call falls in one of them,
and their difference is the offset between the two counts.
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


def job_starts(emu, job_iter, t_change):
    """CLOCK_MONOTONIC start of each job iteration (warm-up ones included), rebuilt from the start
    of job_iter (the change) and rank 0's iteration times (measured iterations, back to back)."""
    d, w = emu["iteration_us"], emu["warmup"]
    start = {job_iter: float(t_change)}
    for j in range(job_iter, w + len(d) - 1):
        start[j + 1] = start[j] + d[j - w]
    for j in range(job_iter - 1, w - 1, -1):
        start[j] = start[j + 1] - d[j - w]
    return start


def preload_offset(first_call, jobs):
    """The preload's iteration minus the job's, from the logged iterations whose first call falls
    in a rebuilt job iteration (the most common difference; None when none does)."""
    order = sorted(jobs)
    seen = {}
    for i, t in first_call.items():
        inside = [j for j in order if jobs[j] <= t]
        if inside and inside[-1] != order[-1]:
            k = i - inside[-1]
            seen[k] = seen.get(k, 0) + 1
    return max(seen, key=seen.get) if seen else None


def main(argv):
    if len(argv) != 6:
        print(__doc__)
        return 2
    with open(os.path.join(argv[1], "prophet-rank0.json")) as f:
        d = json.load(f)
    with open(argv[2]) as f:
        emu = json.load(f)
    job_iter, t_change, bound = int(argv[3]), int(argv[4]), int(argv[5])
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
    jobs = job_starts(emu, job_iter, t_change)
    offset = preload_offset(start, jobs)
    if offset is None:
        print("FAIL: bw change: no logged preload iteration falls in the job's iterations")
        return 1

    def iteration_at(t):
        """the preload's iteration running at instant t"""
        return max([j for j in jobs if jobs[j] <= t] or [min(jobs)]) + offset

    at = job_iter - 1 + offset  # the last iteration whose calls all came before the change
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
