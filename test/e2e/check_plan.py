#!/usr/bin/env python3
"""The plan check shared by every end-to-end test (run_emu.sh): reads the preload's JSON schedule
logs (PROPHET_LOG, one per rank, docs/log-schema.json) of one prophet-emu run.

usage: check_plan.py LOGDIR NRANKS MODE
  agreed  every rank agreed at least one plan, the same plans on every rank (version, first
          iteration, signature hash, partition into blocks, and the closed loop's trial part:
          candidate, round, figures, choice)
  held    agreed, and after the first plan every iteration's calls were held and released as the
          plan in force says: in an ordinary iteration the blocks are exactly the plan's blocks
          (same first and last call; a plan block of more than BLOCK_MAX calls in runs of
          BLOCK_MAX, the preload's cap); a measurement iteration (every MEASURE_EVERY-th, the
          preload's own timing of the job, preload/prophet_preload.h) releases runs of at most
          BLOCK_MAX consecutive calls. Under a passthrough plan (the closed loop's candidate or its
          choice) calls go straight to NCCL: only its sampled iterations (every SAMPLE_EVERY-th)
          may appear in the log, as measurement iterations. At least one ordinary iteration (or
          one straight to NCCL under passthrough) must have been checked.
  trials  held, and the closed loop's trials (preload/closed_loop.c, sched/trials.c) add up on
          rank 0's log: each trial plan's candidate is in force for its window (the agreements
          next_in iterations apart), each `sample` record (an iteration's GPU time, first call to
          first call) names the candidate in force for its iteration and matches the logged first
          calls' ready instants where both were logged, each judged figure is the median of the
          samples its window used (`use: window`, taken after the agreement that put the
          candidate in force and up to the judging one), and each round's choice is the lowest
          figure (passthrough within TIE of it, then the incumbent, the plan kept before, within TIE of
          that; the incumbent timed with the blocks it was kept with; never a kept plan slower
          than the incumbent), a leader other than passthrough kept only after it and
          passthrough were timed again and only on those fresh figures (and on the runner-up's,
          timed again when the leader won and its first figure was within NEAR of the leader's:
          the lowest other figure but passthrough's), the choice announced
          within the round bound; within a round a candidate's plan keeps the blocks it was
          timed with, in its trial windows and once kept.
          At least one round must have ended in a choice.
Prints one line of figures; exit 1 with the first violation otherwise.
(The summary line's plans>=1 and plan_rejects=0 on every rank are checked by run_emu.sh.)
"""
import json
import os
import sys

MEASURE_EVERY = 8  # PROPHET_MEASURE_EVERY
SAMPLE_EVERY = 32  # PROPHET_SAMPLE_EVERY (preload/closed_loop.h): measurement under passthrough
BLOCK_MAX = 64  # PROPHET_BLOCK_MAX
TIE = 0.02  # PROPHET_TRIAL_TIE (include/prophet/sched.h)
NOISE_Z = 2.0  # PROPHET_TRIAL_NOISE_Z
CANDIDATES = ["optimal", "passthrough", "prophet", "fusion", "buckets", "optimal-alpha4",
              "optimal-bw2"]  # PROPHET_CAND_* in order
# the loop's mark and the first call's ready event are two records in a row on one stream: their
# GPU instants differ by the time the stream takes between them (on the emulated driver, a
# stream thread descheduled between the two on a loaded 2-core host: up to 1.5% seen)
MARK_TOL_US = 500
MARK_TOL = 0.05
NEAR = 0.10  # PROPHET_TRIAL_NEAR: a runner-up this near the leader is timed again too
# PROPHET_TRIAL_ROUND_BOUND (+4: the confirmation's windows; 7: PROPHET_TRIAL_WINDOW)
ROUND_BOUND = (len(CANDIDATES) + 4) * 2 * 7 + 2


def fail(msg):
    print("FAIL: plan check: " + msg)
    sys.exit(1)


def plan_key(p):
    return (p["version"], p["from_iteration"], p["sig_hash"], p["n_calls"],
            tuple((b["first"], b["last"]) for b in p["blocks"]),
            json.dumps(p.get("trial"), sort_keys=True))


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def figure_se(samples):
    """A figure's standard error from its samples: 1.4826 x MAD / sqrt(n) (sched/trials.c)."""
    m = median(samples)
    return 1.4826 * median([abs(x - m) for x in samples]) / len(samples) ** 0.5


def prefer(figs, spread, best, keeper):
    """best, or keeper when its figure is within TIE plus NOISE_Z standard errors of the
    difference of best's (a tuple of both where the log cannot show the noise)."""
    if keeper not in figs or best == keeper:
        return best
    se_b, se_k = spread.get(best), spread.get(keeper)
    noise = NOISE_Z * ((se_b or 0) ** 2 + (se_k or 0) ** 2) ** 0.5
    if figs[keeper] <= figs[best] * (1 + TIE) + noise:
        return keeper
    if se_b is None or se_k is None:
        return (best, keeper)  # either, by noise the log cannot show
    return best


def choose(figs, spread, inc=None):
    """The kept candidate from {candidate: figure} (sched/trials.c, choose_inc): the lowest,
    passthrough within TIE plus NOISE_Z standard errors of the difference (spread: {candidate:
    standard error}, None where the log does not show every sample); then the incumbent (inc,
    the candidate kept before the round) over that, by the same rule."""
    best = min(figs, key=lambda c: (figs[c], CANDIDATES.index(c)))
    out = set()
    for b in (lambda x: x if isinstance(x, tuple) else (x,))(prefer(figs, spread, best,
                                                                  "passthrough")):
        w = prefer(figs, spread, b, inc) if inc else b
        out.update(w if isinstance(w, tuple) else (w,))
    return out.pop() if len(out) == 1 else tuple(sorted(out))


def check_confirmation(rnd, figs, conf, conf_spread, leads, inc):
    """The windows timed again in a round (conf: {candidate: fresh figure}) against the first
    pass's figures: passthrough and the leader, the incumbent when it is neither, and the
    runner-up near the leader exactly when the leader won those again (sched/trials.c,
    confirm_begin and runner_begin)."""
    lead = [c for c in conf if c != "passthrough" and c in leads]
    if len(lead) > 1 and inc in lead:
        lead = [c for c in lead if c != inc]  # the incumbent timed beside a challenger
    if "passthrough" not in conf or len(lead) != 1 or not 2 <= len(conf) <= 4:
        fail("rank 0: round %d timed %s again, the first pass's figures %s lead %s" %
             (rnd, sorted(conf), figs, leads))
    lead = lead[0]
    base = {"passthrough", lead} | ({inc} if inc in figs else set())
    rest = [c for c in figs if c not in ("passthrough", lead, inc)]
    runner = min(rest, key=lambda c: (figs[c], CANDIDATES.index(c))) if rest else None
    if runner is not None and figs[runner] > figs[lead] * (1 + NEAR):
        runner = None
    if base - set(conf):
        fail("rank 0: round %d timed %s again; %s (passthrough, the leader, the incumbent) must "
             "all be" % (rnd, sorted(conf), sorted(base)))
    pair = {c: conf[c] for c in base}
    won = choose(pair, {c: conf_spread.get(c) for c in pair}, inc)
    won = won if isinstance(won, tuple) else (won,)
    timed = set(conf) - base
    if timed and (timed != {runner} or lead not in won):
        fail("rank 0: round %d timed %s again beside %s and passthrough (first pass %s, fresh %s): "
             "the runner-up is %s, timed only when the leader wins again" %
             (rnd, sorted(timed), lead, figs, pair, runner))
    if not timed and runner is not None and "passthrough" not in won:
        fail("rank 0: round %d: %s won again (%s) but the runner-up %s (first pass %s) was not "
             "timed again" % (rnd, lead, pair, runner, figs))


def every_of(plan):
    """Measurement iterations: one in SAMPLE_EVERY under passthrough and under the plan the trials
    kept (preload/schedule.c, prophet_measure_step), else one in MEASURE_EVERY."""
    chosen = (plan.get("trial") or {}).get("phase") == "chosen"
    return SAMPLE_EVERY if plan["policy"] == "passthrough" or chosen else MEASURE_EVERY


def check_trials(d):
    """Rank 0's trials, replayed from its own log; returns (rounds chosen, figures checked)."""
    plans = [x for x in d["records"] if x["kind"] == "plan"]
    loop = [p for p in plans if p.get("trial")]
    if not loop:
        fail("rank 0: no plan carries a trial part (the closed loop did not run)")
    # iteration -> the GPU instant its first call was ready: the closed loop's mark is recorded
    # on the same stream right before that call's ready event (preload/closed_loop.c)
    start = {}
    for x in d["records"]:
        if x["kind"] == "iteration":
            for c in x["calls"]:
                if c["index"] == 0 and c.get("ready_us"):
                    start[x["iteration"]] = c["ready_us"]

    def in_force(i):
        f = [p for p in plans if p["from_iteration"] <= i]
        return f[-1] if f else None

    recs = [x for x in d["records"] if x["kind"] == "sample"]
    for x in recs:  # each sample: the candidate in force, the GPU time the log shows
        f = in_force(x["iteration"])
        if not f or not f.get("trial") or f["trial"]["candidate"] != x["candidate"]:
            fail("rank 0: iteration %d timed as %s, but %s was in force" %
                 (x["iteration"], x["candidate"], f and f.get("trial", {}).get("candidate")))
        i = x["iteration"]
        if x["clock"] == "gpu" and i in start and i + 1 in start:
            span = start[i + 1] - start[i]
            if abs(span - x["us"]) > max(MARK_TOL_US, MARK_TOL * span):
                fail("rank 0: iteration %d timed %.0f us, the log's first calls %.0f us apart on "
                     "the GPU" % (i, x["us"], span))
    samples, current, figs, rounds, checked, round_start = [], None, {}, 0, 0, None
    win_start = None  # the agreement whose decision put `current` in force
    spread, conf, conf_spread = {}, {}, {}
    kept, inc = None, None  # (candidate, blocks) of the last kept plan; this round's incumbent
    timed = {}  # (round, candidate) -> the blocks of its first plan in that round
    for j, p in enumerate(loop):
        t = p["trial"]
        k = p["from_iteration"] - 2  # the agreement that made it
        blocks = tuple((b["first"], b["last"]) for b in p["blocks"])
        first = timed.setdefault((t["round"], t["candidate"]), (p["version"], blocks))
        if first[1] != blocks:
            fail("rank 0: round %d: plan v%d (%s, %s) has other blocks than plan v%d, the plan "
                 "of that candidate timed in the round (%d against %d blocks): a kept plan must "
                 "be the plan its figure was measured with" %
                 (t["round"], p["version"], t["candidate"], t["phase"], first[0], len(blocks),
                  len(first[1])))
        if j + 1 < len(loop) and loop[j + 1]["from_iteration"] - p["from_iteration"] != t["next_in"]:
            fail("rank 0: plan v%d says the next agreement comes in %d iterations, it came in %d" %
                 (p["version"], t["next_in"], loop[j + 1]["from_iteration"] - p["from_iteration"]))
        want = {"optimal": "optimal", "optimal-alpha4": "optimal", "optimal-bw2": "optimal"}
        if p["policy"] != want.get(t["candidate"], t["candidate"]):
            fail("rank 0: plan v%d is %s but its candidate is %s" %
                 (p["version"], p["policy"], t["candidate"]))
        if t["judged"] is not None:
            jd = t["judged"]
            if jd["candidate"] != current:
                fail("rank 0: plan v%d judges %s, the candidate timed was %s" %
                     (p["version"], jd["candidate"], current))
            # the window's samples: those of the candidate taken after the agreement that put it
            # in force and up to this one (taken at an iteration's first call, before its
            # agreement step)
            samples = [x["us"] for x in recs if x["use"] == "window" and
                       x["candidate"] == current and win_start < x["taken_at"] <= k]
            if len(samples) != jd["samples"]:
                fail("rank 0: plan v%d: %s's window has %d samples in the log, the preload "
                     "counted %d" % (p["version"], current, len(samples), jd["samples"]))
            if samples:
                m = median(samples)
                if abs(m - jd["median_us"]) > 1:
                    fail("rank 0: plan v%d: %s measured %d us, its samples give %.1f us (%s)" %
                         (p["version"], current, jd["median_us"], m, samples))
                checked += 1
            se = figure_se(samples) if samples else None
            if current in figs:  # its second window of the round: the confirmation's
                conf[current], conf_spread[current] = jd["median_us"], se
            else:
                figs[current], spread[current] = jd["median_us"], se
        if t["phase"] == "trial" and (j == 0 or loop[j - 1]["trial"]["round"] != t["round"]):
            figs, spread, conf, conf_spread, round_start = {}, {}, {}, {}, k
            # a restarted round measures the kept plan as it was agreed (unless the profile changed)
            inc = kept[0] if kept and p["n_calls"] == kept[2] else None
        if inc and t["candidate"] == inc and t["phase"] == "trial" and blocks != kept[1]:
            fail("rank 0: round %d: the incumbent %s is timed with other blocks (%d) than it was "
                 "kept with (%d): a restart must measure the plan in force" %
                 (t["round"], inc, len(blocks), len(kept[1])))
        if t["phase"] == "chosen" and (j == 0 or loop[j - 1]["trial"]["phase"] == "trial"):
            if not figs:
                fail("rank 0: plan v%d chose %s with no figure" % (p["version"], t["candidate"]))
            lead = choose(figs, spread, inc)
            leads = lead if isinstance(lead, tuple) else (lead,)
            if conf:  # the first pass's leader and passthrough, timed again: their fresh figures
                check_confirmation(t["round"], figs, conf, conf_spread, leads, inc)
                figs, spread = conf, conf_spread
            elif t["candidate"] != "passthrough" and "passthrough" in figs:
                fail("rank 0: round %d kept %s without timing it again against passthrough "
                     "(the figures %s)" % (t["round"], t["candidate"], figs))
            want = choose(figs, spread, inc)
            if t["candidate"] not in (want if isinstance(want, tuple) else (want,)):
                fail("rank 0: round %d chose %s, the figures %s (standard errors %s) make it %s"
                     % (t["round"], t["candidate"], figs, spread, want))
            if t["chosen_us"] != figs[t["candidate"]]:
                fail("rank 0: round %d kept %s at %s us, its figure was %d us" %
                     (t["round"], t["candidate"], t["chosen_us"], figs[t["candidate"]]))
            if round_start is not None and k - round_start > ROUND_BOUND:
                fail("rank 0: round %d took %d iterations (bound %d)" %
                     (t["round"], k - round_start, ROUND_BOUND))
            if inc and inc in figs and figs[t["candidate"]] > figs[inc]:
                fail("rank 0: round %d kept %s at %d us, slower than the incumbent %s (%d us)" %
                     (t["round"], t["candidate"], figs[t["candidate"]], inc, figs[inc]))
            rounds += 1
        if t["phase"] == "chosen":
            kept = (t["candidate"], blocks, p["n_calls"])
        if t["candidate"] != current or t["phase"] == "chosen" or t["judged"] is not None:
            win_start = k  # a window (re)begins: samples taken after this agreement
        current = t["candidate"]
    return rounds, checked


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
    if len(argv) != 4 or argv[3] not in ("agreed", "held", "trials"):
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
    ordinary = measured = direct = 0
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
            if p["policy"] == "passthrough" and n % SAMPLE_EVERY != 0:
                fail("rank %d iteration %d: calls observed under passthrough plan v%d outside its "
                     "sampled iterations (1 in %d)" % (r, n, p["version"], SAMPLE_EVERY))
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
            if n % every_of(p) == 0:
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
        for p in rank_plans:
            if p["policy"] == "passthrough":
                nxt = [x["from_iteration"] for x in rank_plans
                       if x["from_iteration"] > p["from_iteration"]]
                end = min(nxt) if nxt else (max(calls_of) + 1 if calls_of else 0)
                direct += sum(1 for n in range(p["from_iteration"], end) if n not in calls_of)
    if ordinary + direct == 0:
        fail("no iteration ran under an agreed plan")
    capped = sum(b["last"] - b["first"] + 1 > BLOCK_MAX for b in
                 (x for d in logs[:1] for p in d["records"] if p["kind"] == "plan" for x in p["blocks"]))
    if capped:
        line += " (%d plan block(s) over %d calls, released in runs of %d)" % (capped, BLOCK_MAX,
                                                                                BLOCK_MAX)
    line += "; released exactly as planned in %d rank-iterations (+%d measurement " \
        "iterations, runs of <= %d; %d rank-iterations straight to NCCL under passthrough)" % (
            ordinary, measured, BLOCK_MAX, direct)
    if mode == "trials":
        rounds, checked = check_trials(logs[0])
        line += "; trials: %d round(s) chosen, %d figure(s) recomputed from the log" % (rounds,
                                                                                       checked)
        if rounds == 0:
            fail("no trial round ended in a choice")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
