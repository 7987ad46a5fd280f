#!/usr/bin/env python3
"""The plan check shared by every end-to-end test (run_emu.sh): reads the preload's JSON schedule
logs (PROPHET_LOG, one per rank, docs/log-schema.json) of one prophet-emu run.

usage: check_plan.py LOGDIR NRANKS MODE
  agreed  every rank agreed at least one plan, the same plans on every rank (version, first
          iteration, signature hash, partition into blocks)
  held    agreed, and after the first plan every iteration's calls were held and released as the
          plan in force says: in an ordinary iteration the blocks are exactly the plan's blocks
          (same first and last call; a plan block of more than BLOCK_MAX calls in runs of
          BLOCK_MAX, the preload's cap); a measurement iteration (every MEASURE_EVERY-th, the
          preload's own timing of the job, preload/prophet_preload.h) releases runs of at most
          BLOCK_MAX consecutive calls. At least one ordinary iteration must have been checked.
Prints one line of figures; exit 1 with the first violation otherwise.
(The summary line's plans>=1 and plan_rejects=0 on every rank are checked by run_emu.sh.)
"""
import json
import os
import sys

MEASURE_EVERY = 8  # PROPHET_MEASURE_EVERY
BLOCK_MAX = 64  # PROPHET_BLOCK_MAX


def fail(msg):
    print("FAIL: plan check: " + msg)
    sys.exit(1)


def plan_key(p):
    return (p["version"], p["from_iteration"], p["sig_hash"], p["n_calls"],
            tuple((b["first"], b["last"]) for b in p["blocks"]))


def released_blocks(calls):
    """[(first, last, n, all_held)] in release order; a block's calls must be consecutive."""
    by = {}
    order = []
    for c in calls:
        if c["index"] is None:
            return None
        if c["block"] not in by:
            by[c["block"]] = []
            order.append(c["block"])
        by[c["block"]].append(c)
    out = []
    for b in order:
        idx = sorted(c["index"] for c in by[b])
        if idx != list(range(idx[0], idx[-1] + 1)):
            fail("block %d holds calls %s: not consecutive" % (b, idx))
        out.append((idx[0], idx[-1], len(idx), all(c["deferred"] for c in by[b])))
    return out


def main(argv):
    if len(argv) != 4 or argv[3] not in ("agreed", "held"):
        print(__doc__)
        return 2
    logdir, nranks, mode = argv[1], int(argv[2]), argv[3]
    logs = []
    for r in range(nranks):
        path = os.path.join(logdir, "prophet-rank%d.json" % r)
        try:
            with open(path) as f:
                logs.append(json.load(f))
        except (OSError, ValueError) as e:
            fail("rank %d: no readable log %s (%s)" % (r, path, e))
    plans = []
    for r, d in enumerate(logs):
        p = [x for x in d["records"] if x["kind"] == "plan"]
        if not p:
            fail("rank %d agreed no plan" % r)
        plans.append([plan_key(x) for x in p])
    for r in range(1, nranks):
        if plans[r] != plans[0]:
            fail("rank %d's plans differ from rank 0's: %s vs %s" % (r, plans[r][:1], plans[0][:1]))
    first = plans[0][0]
    line = "plan check: %d plan(s) agreed alike on %d ranks, v%d from iteration %d: %d calls in " \
        "%d blocks" % (len(plans[0]), nranks, first[0], first[1], first[3], len(first[4]))
    if mode == "agreed":
        print(line)
        return 0
    ordinary = measured = 0
    for r, d in enumerate(logs):
        rank_plans = [x for x in d["records"] if x["kind"] == "plan"]
        # calls that reached the writer after their iteration's record went out come in a later
        # record of the same iteration (the log's late_records): one iteration, all its records
        calls_of = {}
        for x in d["records"]:
            if x["kind"] == "iteration":
                calls_of.setdefault(x["iteration"], []).extend(x["calls"])
        if d["counters"].get("calls_dropped"):
            fail("rank %d: the log dropped %d calls: iterations cannot be checked whole" %
                 (r, d["counters"]["calls_dropped"]))
        for n in sorted(calls_of):
            calls = calls_of[n]
            in_force = [p for p in rank_plans if p["from_iteration"] <= n]
            if not in_force or not calls:
                continue
            p = in_force[-1]
            blocks = released_blocks(calls)
            if blocks is None:
                fail("rank %d iteration %d: a call outside the learned iteration" % (r, n))
            if len(calls) != p["n_calls"]:
                fail("rank %d iteration %d: %d calls, plan v%d has %d" %
                     (r, n, len(calls), p["version"], p["n_calls"]))
            if not all(b[3] for b in blocks):
                fail("rank %d iteration %d: calls passed through under plan v%d" %
                     (r, n, p["version"]))
            got = sorted((b[0], b[1]) for b in blocks)
            if n % MEASURE_EVERY == 0:
                if max(b[2] for b in blocks) > BLOCK_MAX:
                    fail("rank %d measurement iteration %d: a block of more than %d calls" %
                         (r, n, BLOCK_MAX))
                measured += 1
                continue
            # a block never has more than BLOCK_MAX members: a longer plan block is released in
            # runs of BLOCK_MAX from its first call (preload/schedule.c, prophet_closes_block)
            want = [(f, min(f + BLOCK_MAX - 1, b["last"]))
                    for b in p["blocks"] for f in range(b["first"], b["last"] + 1, BLOCK_MAX)]
            if got != want:
                fail("rank %d iteration %d: released blocks %s, plan v%d says %s" %
                     (r, n, got, p["version"], want))
            ordinary += 1
    if ordinary == 0:
        fail("no iteration ran under an agreed plan")
    capped = sum(b["last"] - b["first"] + 1 > BLOCK_MAX for b in
                 (x for d in logs[:1] for p in d["records"] if p["kind"] == "plan" for x in p["blocks"]))
    if capped:
        line += " (%d plan block(s) over %d calls, released in runs of %d)" % (capped, BLOCK_MAX,
                                                                                BLOCK_MAX)
    print(line + "; released exactly as planned in %d rank-iterations (+%d measurement "
          "iterations, runs of <= %d)" % (ordinary, measured, BLOCK_MAX))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
