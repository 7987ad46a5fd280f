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
  trials  held, and the closed loop's trials (preload/engine/iteration_samples.c, sched/trials.c) add up on
          rank 0's log: each trial plan's candidate is in force for its window (the agreements
          next_in iterations apart), each `sample` record (an iteration's GPU time, first call to
          first call) names the candidate in force for its iteration and matches the logged first
          calls' ready instants where both were logged, each judged figure is the median of the
          samples its window used (`use: window`, taken after the agreement that put the
          candidate in force and up to the judging one), and each round's choice is the lowest
          figure of a first pass (passthrough within TIE of it, then the incumbent, the plan
          kept before, within TIE of that; the incumbent timed with the blocks it was kept with)
          leads, and each round's choice comes from paired duels replayed window by window
          (sched/trials.c): the leader against the incumbent (or passthrough; passthrough against
          an incumbent that leads) in alternating windows, defender first, stopped by the same
          sequential test on the same rounded
          window figures, the runner-up near a leader that won in a second duel, a time drift's
          re-time of the incumbent against passthrough first; never a kept plan that measured
          slower than the incumbent in their pairs; the choice announced within the round bound;
          within a round a candidate's plan keeps the blocks it was timed with, in its trial
          windows and once kept.
          At least one round must have ended in a choice.
Prints one line of figures; exit 1 with the first violation otherwise.
(The summary line's plans>=1 and plan_rejects=0 on every rank are checked by run_emu.sh.)
"""
import json
import os
import sys

MEASURE_EVERY = 8  # PROPHET_MEASURE_EVERY
SAMPLE_EVERY = 32  # PROPHET_SAMPLE_EVERY (preload/engine/iteration_samples.h): measurement under passthrough
BLOCK_MAX = 64  # PROPHET_BLOCK_MAX
TIE = 0.02  # PROPHET_TRIAL_TIE (include/prophet/sched.h)
NOISE_Z = 2.0  # PROPHET_TRIAL_NOISE_Z
CANDIDATES = ["optimal", "passthrough", "prophet", "fusion", "buckets", "optimal-alpha4",
              "optimal-bw2"]  # PROPHET_CAND_* in order
# the loop's mark and the first call's ready event are two records in a row on one stream: their
# GPU instants differ by the time the stream takes between them. On the emulated driver that is
# the stream thread's, and nothing bounds how long a host thread is descheduled between two
# records: with 4 ranks' threads on 2 cores (the test alone on the host), 3.8 ms of a 66 ms
# iteration were seen. The bound is a few of the scheduler's time slices (CFS: 3-4 ms each at
# 2 CPUs), under what the check is for: a mark recorded at another point of the iteration (after
# a held block, on another stream) moves by that block's time, tens of ms here
MARK_TOL_US = 10000
MARK_TOL = 0.05
NEAR = 0.10  # PROPHET_TRIAL_NEAR: a runner-up this near the leader duels it too
PAIRS_MIN, PAIRS_MAX = 2, 4  # PROPHET_TRIAL_PAIRS_MIN, _MAX
PAIR_CLEAR = 0.25  # PROPHET_TRIAL_PAIR_CLEAR
PAIR_T = [0, 0, 6.314, 2.920, 2.353]  # prophet_trials_pair_t
DUEL_SLOTS = 2 * PAIRS_MAX
# PROPHET_TRIAL_ROUND_BOUND (7: PROPHET_TRIAL_WINDOW, 2: PROPHET_TRIAL_MAX_WINDOWS)
ROUND_BOUND = (len(CANDIDATES) + 2 * DUEL_SLOTS + 2 * PAIRS_MIN) * 2 * 7 + 2
EPS = 1e-6  # a verdict this near its boundary may go either way (float rounding)


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


def lowest(figs):
    """The first pass's leader (sched/trials.c, pass_done): the lowest figure, the lower index on
    an equal one, passthrough on an equal one."""
    best = min(figs, key=lambda c: (figs[c], CANDIDATES.index(c)))
    return "passthrough" if figs.get("passthrough", float("inf")) <= figs[best] else best


def verdict(pairs, pair1_se):
    """sched/trials.c, prophet_trials_duel_verdict: a set of possible answers ("c", "d", "on")
    from the pairs [(challenger, defender)] of rounded window figures (two answers only at a
    boundary, or where the log cannot show the first pair's noise)."""
    n = len(pairs)
    rel = [c / d - 1 for c, d in pairs]
    mean = sum(rel) / n
    tie = -TIE
    if n < PAIRS_MIN:
        if mean - tie <= PAIR_CLEAR + EPS:
            return {"d", "on"} if mean - tie > PAIR_CLEAR - EPS else {"on"}
        if pair1_se is None:
            return {"d", "on"}
        lim = NOISE_Z * pair1_se
        return {"d"} if mean - tie > lim * 1.1 else {"on"} if mean - tie < lim * 0.9 else {"d", "on"}
    var = sum((r - mean) ** 2 for r in rel)
    se = (var / (n - 1) / n) ** 0.5
    q = PAIR_T[n]
    out = set()
    for e in (-EPS, EPS):
        if mean + q * se + e < tie:
            out.add("c")
        elif mean - q * se + e > tie:
            out.add("d")
        else:
            out.add("on")
    return out


class Round:
    """One round replayed from rank 0's judged windows (sched/trials.c: the first pass, then the
    duels). feed() takes each window in turn; chosen() checks the choice."""

    def __init__(self, rnd, inc, retime):
        self.rnd, self.inc, self.kept_before = rnd, inc, inc
        self.ended = None
        self.figs = {}
        self.duel = None
        self.runner = None
        self.last = None  # (winner, its duel figure) of the last duel ended
        self.verdicts = {}  # the incumbent's duels: challenger -> mean relative difference
        self.unsure = False  # a window without a figure in a duel: the replay stops judging
        self.last_pass = None  # the first pass's last window: (candidate, us, se)
        if retime:
            self.begin("retime", "passthrough", inc)

    def begin(self, kind, ch, de):
        self.duel = {"kind": kind, "c": ch, "d": de, "pairs": [], "d_us": None, "d_se": None,
                     "pair1_se": None, "slots": 0, "next": de}

    def pass_end(self):
        """(leaders, defenders) after the first pass, or None when it ends on a choice."""
        if not self.figs:
            return None
        leads = (lowest(self.figs),)
        if self.inc and self.inc != "passthrough" and leads[0] == self.inc and \
                "passthrough" in self.figs:
            # an incumbent that leads is the defender, passthrough its challenger (pass_done)
            return ("passthrough",), {self.inc}
        defs = set()
        for l in leads:
            defs.add(self.inc if self.inc and self.inc != l and self.inc in self.figs
                     else "passthrough")
        return leads, defs

    def start_duel(self, cand):
        """The first pass ended and cand's window begins the leader's duel: the defender's, or
        the leader's when the first pass's last window was the defender's (sched/trials.c,
        pass_done: that window is the first pair's defender window)."""
        leads, defs = self.pass_end()
        last = self.last_pass
        if cand in leads and last and last[0] in defs and last[0] != cand:
            lead, de = cand, last[0]
            self.begin("leader", lead, de)
            self.duel.update(d_us=last[1], d_se=last[2], next=lead)
        else:
            lead = [l for l in leads if l != cand]
            if len(lead) != 1 and not self.unsure:
                fail("rank 0: round %d: the first pass %s leads %s; %s's window cannot begin a "
                     "duel" % (self.rnd, self.figs, leads, cand))
            lead, de = lead[0], cand
            self.begin("leader", lead, de)
        rest = [c for c in self.figs if c not in (lead, "passthrough", de)]
        r = min(rest, key=lambda c: (self.figs[c], CANDIDATES.index(c))) if rest else None
        self.runner = r if r and lead != "passthrough" and \
            self.figs[r] <= self.figs[lead] * (1 + NEAR) else None

    def feed(self, cand, us, se):
        """A judged window: cand measured us (rounded, from the log; None: no figure)."""
        d = self.duel
        if d is None and us is None and cand not in self.figs:
            self.last_pass = None
            return  # a first-pass window with no figure: not measured
        if d is None and cand in self.figs:
            self.start_duel(cand)
            d = self.duel
        if d is None:
            self.figs[cand] = us
            self.last_pass = (cand, us, se) if us is not None else None
            return
        if cand != d["next"] and not self.unsure:
            fail("rank 0: round %d: %s's window in the %s duel of %s against %s, where %s's was "
                 "due" % (self.rnd, cand, d["kind"], d["c"], d["d"], d["next"]))
        d["slots"] += 1
        if us is None:
            self.unsure = True
        if cand == d["d"]:
            d["d_us"], d["d_se"], d["next"] = us, se, d["c"]
            return
        d["next"] = d["d"]
        d["c_se"] = se
        answers = {"on"}
        if us is not None and d["d_us"] is not None:
            if not d["pairs"]:
                d["pair1_se"] = None if se is None or d["d_se"] is None else \
                    (se ** 2 + d["d_se"] ** 2) ** 0.5 / d["d_us"]
            d["pairs"].append((us, d["d_us"]))
            answers = verdict(d["pairs"], d["pair1_se"])
        d["d_us"] = None
        cap = PAIRS_MIN if d["kind"] == "runner" else PAIRS_MAX  # sched/trials.c, duel_cap
        # sched/trials.c, retime_futile: passthrough behind by more than the tie in every pair
        futile = d["kind"] == "retime" and len(d["pairs"]) >= PAIRS_MIN and \
            all(c / de - 1 > TIE + EPS for c, de in d["pairs"])
        unsure = d["kind"] == "retime" and len(d["pairs"]) >= PAIRS_MIN and not futile and \
            all(c / de - 1 > TIE - EPS for c, de in d["pairs"])
        if "on" in answers and (len(d["pairs"]) >= cap or d["slots"] >= 2 * cap or futile):
            answers = (answers - {"on"}) | {"d"}
        elif "on" in answers and unsure:  # a pair at the tie's boundary: either way
            answers = answers | {"d"}
        d["answers"] = answers

    def duel_over(self, next_cand):
        """Called before a window or a choice: whether the duel that was running ended (per the
        verdict replayed), checking that the log went on as the verdict allows."""
        d = self.duel
        if not d or "answers" not in d:
            return
        answers = d.pop("answers")
        going_on = next_cand is not None and next_cand == d["d"]
        if going_on and ("on" in answers or self.unsure):
            return
        if going_on or (not self.unsure and answers == {"on"}):
            fail("rank 0: round %d: the %s duel of %s against %s after pairs %s: the sequential "
                 "test says %s, the log %s" % (self.rnd, d["kind"], d["c"], d["d"], d["pairs"],
                                               sorted(answers), "went on" if going_on else
                                               "stopped"))
        won = answers - {"on"}
        # which side won shows in what follows
        ch = d["c"]
        if d["kind"] == "retime":
            winner = ch if next_cand is not None else d["d"]
            if winner == ch:
                self.inc = "passthrough"
        elif d["kind"] == "leader" and next_cand is not None:
            winner = ch  # a second duel follows only when the leader won
            if next_cand != self.runner or self.runner is None:
                fail("rank 0: round %d: after the leader %s's duel against %s, %s's window "
                     "(runner-up %s)" % (self.rnd, ch, d["d"], next_cand, self.runner))
        else:
            winner = None  # the choice tells
        side = None if winner is None else ("c" if winner == ch else "d")
        if side and side not in won and not self.unsure:
            fail("rank 0: round %d: the %s duel of %s against %s after pairs %s: %s won, the "
                 "test says %s" % (self.rnd, d["kind"], ch, d["d"], d["pairs"], winner,
                                   sorted(won)))
        rel = [c / dd - 1 for c, dd in d["pairs"]]
        if self.kept_before in (ch, d["d"]) and rel:
            other = d["d"] if self.kept_before == ch else ch
            sign = -1 if self.kept_before == ch else 1
            self.verdicts[other] = sign * sum(rel) / len(rel)
        d["won"] = won
        self.ended = d
        self.duel = None
        if d["kind"] == "retime" and winner == ch:
            self.figs = {}  # every candidate again
            self.last_pass = None
        elif d["kind"] == "leader" and next_cand is not None:
            # the leader's last window is the runner-up duel's first defender window
            self.begin("runner", self.runner, ch)
            self.duel.update(d_us=d["pairs"][-1][0], d_se=d["c_se"], next=self.runner)
            self.runner = None

    def chosen(self, cand, chosen_us):
        """The round's choice: cand kept at chosen_us."""
        d = self.ended
        if d is None:  # no duel: the first pass's leader, passthrough or nothing to duel
            if not self.figs:
                return
            leads = (lowest(self.figs),)
            if cand not in leads:
                fail("rank 0: round %d chose %s without a duel, the first pass %s makes it %s" %
                     (self.rnd, cand, self.figs, leads))
            if chosen_us != self.figs[cand]:
                fail("rank 0: round %d kept %s at %s us, its figure was %s us" %
                     (self.rnd, cand, chosen_us, self.figs[cand]))
            return
        if cand not in (d["c"], d["d"]):
            fail("rank 0: round %d kept %s after the duel of %s against %s" %
                 (self.rnd, cand, d["c"], d["d"]))
        side = "c" if cand == d["c"] else "d"
        if side not in d["won"] and not self.unsure:
            fail("rank 0: round %d: the %s duel of %s against %s after pairs %s: %s kept, the "
                 "test says %s" % (self.rnd, d["kind"], d["c"], d["d"], d["pairs"], cand,
                                   sorted(d["won"])))
        figs = [p[0] if side == "c" else p[1] for p in d["pairs"]]
        if figs and chosen_us != round(median(figs)) and abs(chosen_us - median(figs)) > 1:
            fail("rank 0: round %d kept %s at %s us, its duel figures %s" %
                 (self.rnd, cand, chosen_us, figs))
        if self.kept_before and cand != self.kept_before and \
                self.verdicts.get(cand, -1) >= 0 and not self.unsure:
            fail("rank 0: round %d kept %s, slower than the incumbent %s in their pairs "
                 "(mean relative difference %+.3f)" % (self.rnd, cand, self.kept_before,
                                                       self.verdicts[cand]))


def every_of(plan):
    """Measurement iterations: one in SAMPLE_EVERY under passthrough and under the plan the trials
    kept (preload/engine/schedule.c, prophet_measure_step), else one in MEASURE_EVERY."""
    chosen = (plan.get("trial") or {}).get("phase") == "chosen"
    return SAMPLE_EVERY if plan["policy"] == "passthrough" or chosen else MEASURE_EVERY


def check_trials(d):
    """Rank 0's trials, replayed from its own log; returns (rounds chosen, figures checked)."""
    plans = [x for x in d["records"] if x["kind"] == "plan"]
    loop = [p for p in plans if p.get("trial")]
    if not loop:
        fail("rank 0: no plan carries a trial part (the closed loop did not run)")
    # iteration -> the GPU instant its first call was ready: the closed loop's mark is recorded
    # on the same stream right before that call's ready event (preload/engine/iteration_samples.c)
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
    current, rounds, checked, round_start = None, 0, 0, None
    win_start = None  # the agreement whose decision put `current` in force
    kept, inc, rp = None, None, None  # the last kept (candidate, blocks, n_calls); incumbent; Round
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
        new_round = t["phase"] == "trial" and (j == 0 or loop[j - 1]["trial"]["round"] != t["round"])
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
            if rp:
                rp.feed(current, jd["median_us"], figure_se(samples) if samples else None)
        elif rp and j > 0 and loop[j - 1]["trial"]["phase"] == "trial" and not new_round and \
                (t["candidate"] != current or t["phase"] == "chosen"):
            rp.feed(current, None, None)  # its window closed with no figure
        if new_round:
            round_start = k
            # a restarted round measures the kept plan as it was agreed (unless the profile changed)
            inc = kept[0] if kept and p["n_calls"] == kept[2] else None
            # a round restarted by a time drift re-times the incumbent first (its window first)
            retime = bool(inc and inc != "passthrough" and t["candidate"] == inc)
            rp = Round(t["round"], inc, retime)
        elif rp and t["phase"] == "trial":
            rp.duel_over(t["candidate"])
        if inc and t["candidate"] == inc and t["phase"] == "trial" and blocks != kept[1]:
            fail("rank 0: round %d: the incumbent %s is timed with other blocks (%d) than it was "
                 "kept with (%d): a restart must measure the plan in force" %
                 (t["round"], inc, len(blocks), len(kept[1])))
        if t["phase"] == "chosen" and j > 0 and loop[j - 1]["trial"]["phase"] == "trial" and rp:
            rp.duel_over(None)
            rp.chosen(t["candidate"], t["chosen_us"])
            if round_start is not None and k - round_start > ROUND_BOUND:
                fail("rank 0: round %d took %d iterations (bound %d)" %
                     (t["round"], k - round_start, ROUND_BOUND))
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
            # runs of BLOCK_MAX from its first call (preload/engine/schedule.c, prophet_closes_block)
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
