/* The closed loop's selection (sched/trials.c): the choice from measured figures (a table of
 * cases: the lowest figure wins, passthrough on a tie within 2%, unmeasured candidates never),
 * a whole round driven like the preload drives it (the kept candidate is the one whose samples
 * were lowest, whatever the order), the window rules (too few samples: one more window, then
 * judged on what there is), the round bound, drift detection (iteration time, eBPF throughput,
 * profile) and its restart (also when the job changed with the choice), the plan cap (no planner
 * hands out a block of more than PROPHET_PLAN_BLOCK_MAX calls) and the trial fields of the plan
 * wire form. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "prophet/sched.h"

#define NONE PROPHET_CAND_NONE
#define PT PROPHET_CAND_PASSTHROUGH

/* ---- the choice, data-driven ---------------------------------------------------------------- */
static const struct {
    const char *what;
    double fig[PROPHET_CAND_COUNT]; /* < 0: not measured */
    uint32_t want;
    const double *mad; /* the samples' MAD per candidate (3 samples each); NULL: none */
} choose_cases[] = {
    {"optimal lowest", {100, 120, 110, 130, 125, 105, 108}, PROPHET_CAND_OPTIMAL, NULL},
    {"prophet lowest (the model's optimum measured slower)",
     {76.5, 80, 65.0, 90, 85, 70, 72},
     PROPHET_CAND_PROPHET,
     NULL},
    {"passthrough lowest", {110, 90, 100, 120, 115, 105, 104}, PT, NULL},
    {"passthrough within the tie margin wins", {100, 101.9, 103, 105, 106, 104, 104}, PT, NULL},
    {"passthrough just outside the margin loses",
     {100, 102.1, 103, 105, 106, 104, 104},
     PROPHET_CAND_OPTIMAL,
     NULL},
    {"equal figures: the earlier candidate",
     {-1, 130, 100, 100, 120, -1, -1},
     PROPHET_CAND_PROPHET,
     NULL},
    {"unmeasured never chosen", {-1, 130, -1, -1, 120, -1, -1}, PROPHET_CAND_BUCKETS, NULL},
    {"the last candidate lowest",
     {100, 120, 110, 130, 125, 105, 50},
     PROPHET_CAND_OPTIMAL_BW2,
     NULL},
    {"nothing measured", {-1, -1, -1, -1, -1, -1, -1}, NONE, NULL},
    /* noise (issue 12, DDP at 8 ranks on a loaded machine: 3-4 samples spread by 20%): a gain
     * the samples' spread can explain keeps passthrough; the same gain measured quietly does not;
     * a gain far beyond the noise wins however noisy */
    {"optimal 10% ahead, samples spread 20%: passthrough",
     {100, 110, 120, 130, 125, 105, 108},
     PT,
     (const double[PROPHET_CAND_COUNT]){20, 22, 24, 26, 25, 21, 21}},
    {"optimal 10% ahead, samples spread 1%: optimal",
     {100, 110, 120, 130, 125, 105, 108},
     PROPHET_CAND_OPTIMAL,
     (const double[PROPHET_CAND_COUNT]){1, 1.1, 1.2, 1.3, 1.25, 1.05, 1.08}},
    {"prophet 2x ahead, samples spread 20%: prophet",
     {100, 200, 100 * 0.5, 130, 125, 105, 108},
     PROPHET_CAND_PROPHET,
     (const double[PROPHET_CAND_COUNT]){20, 40, 10, 26, 25, 21, 21}},
    {"noise only on passthrough counts too",
     {100, 110, 120, 130, 125, 105, 108},
     PT,
     (const double[PROPHET_CAND_COUNT]){0, 30, 0, 0, 0, 0, 0}},
};

static void test_choose(void)
{
    for (size_t k = 0; k < sizeof(choose_cases) / sizeof(choose_cases[0]); k++) {
        uint32_t n[PROPHET_CAND_COUNT], got;
        for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++)
            n[c] = choose_cases[k].fig[c] >= 0 ? 3 : 0;
        got = prophet_trials_choose(choose_cases[k].fig, choose_cases[k].mad, n, PROPHET_CAND_COUNT,
                                    PROPHET_TRIAL_TIE);
        CHECKF(got == choose_cases[k].want, "case '%s': chose %s, want %s", choose_cases[k].what,
               prophet_cand_name(got), prophet_cand_name(choose_cases[k].want));
    }
}

/* ---- a round, driven like preload/closed_loop.c -----------------------------------------------
 */
/* The iteration time that candidate c measures (a fixed figure plus deterministic jitter, and
 * every fifth sample an outlier that a median must ignore). */
static double measured(const double *truth, uint32_t c, uint64_t *rng, uint32_t i)
{
    double v = truth[c] * (1 + 0.01 * (test_uniform(rng) - 0.5));
    return i % 5 == 4 ? v * 3 : v;
}

/* Runs one round over `order` with figures `truth` on a simulated agreement schedule: the plan
 * decided at agreement K is in force from K + 2; iterations K + 2 .. K + next_in - 1 are clean.
 * Returns the kept candidate; *iters receives the iterations from the first agreement to the
 * one that announced the choice. */
static uint32_t run_round(prophet_trials_t *t, const double *truth, const uint32_t *order,
                          uint32_t n, uint32_t skip_every, uint32_t *iters, uint64_t seed)
{
    prophet_plan_trial_t d;
    uint32_t in_force = NONE, next_force = NONE, it = 0, sample = 0;
    uint64_t rng = seed;

    CHECK(prophet_trials_wants_round(t));
    CHECK(prophet_trials_begin(t, order, n) == 0);
    for (;;) {
        prophet_trials_decide(t, &d);
        CHECK(d.candidate < PROPHET_CAND_COUNT && d.next_in >= 3);
        if (d.phase == PROPHET_TRIAL_CHOSEN) {
            *iters = it;
            CHECK(d.chosen_us > 0 || t->pass.fig[d.candidate] < 0);
            return d.candidate;
        }
        CHECK(it <= PROPHET_TRIAL_ROUND_BOUND);
        next_force = d.candidate;
        for (uint32_t k = 0; k < d.next_in; k++, it++) {
            if (k == 2)
                in_force = next_force;
            /* clean: not the broadcast iteration, the plan in force since its start, and not a
             * measurement iteration (every skip_every-th) */
            if (k >= 2 && !(skip_every && it % skip_every == 0))
                prophet_trials_sample(t, in_force, measured(truth, in_force, &rng, sample++), -1,
                                      1000);
        }
    }
}

static void test_round(void)
{
    static const uint32_t all[] = {0, 1, 2, 3, 4, 5, 6};
    static const uint32_t rev[] = {6, 5, 4, 3, 2, 1, 0};
    prophet_trials_t t;
    uint64_t rng = 7;

    for (int trial = 0; trial < 200; trial++) {
        double truth[PROPHET_CAND_COUNT];
        uint32_t best = 0, got, iters;
        for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++) {
            truth[c] = 50000 + 50000 * test_uniform(&rng);
            if (truth[c] < truth[best])
                best = c;
        }
        /* a clear winner (more than the tie margin, the jitter and PROPHET_TRIAL_NEAR ahead of
         * the rest: no runner-up is timed again) */
        truth[best] *= 0.85;
        prophet_trials_init(&t);
        got = run_round(&t, truth, trial % 2 ? rev : all, PROPHET_CAND_COUNT, trial % 3 ? 8 : 0,
                        &iters, (uint64_t)trial + 1);
        CHECKF(got == best, "round %d: kept %s (%.0f us), the best measured is %s (%.0f us)", trial,
               prophet_cand_name(got), truth[got], prophet_cand_name(best), truth[best]);
        CHECKF(t.pass.fig[best] > 0 && fabs(t.pass.fig[best] - truth[best]) < 0.01 * truth[best],
               "the median of the best's window is %.0f, its figure %.0f", t.pass.fig[best],
               truth[best]);
        CHECKF(iters <= PROPHET_TRIAL_ROUND_BOUND, "round took %u iterations", iters);
        /* with no measurement iteration in the way, one window per candidate, passthrough's
         * last, and that window is the duel's first defender window */
        if (trial % 3 == 0)
            CHECKF(iters == (PROPHET_CAND_COUNT + (best != PT ? 2 * t.duel.pairs - 1 : 0)) *
                                PROPHET_TRIAL_WINDOW &&
                       (best == PT || t.duel.pairs >= PROPHET_TRIAL_PAIRS_MIN),
                   "round took %u (%u pairs)", iters, t.duel.pairs);
    }
    /* passthrough within the margin of the best: holding nothing is kept */
    {
        double truth[PROPHET_CAND_COUNT] = {100000, 101000, 120000, 130000, 125000, 110000, 115000};
        uint32_t iters;
        prophet_trials_init(&t);
        CHECK(run_round(&t, truth, all, PROPHET_CAND_COUNT, 8, &iters, 3) == PT);
    }
    /* a candidate list of two (the others' plans were duplicates) */
    {
        double truth[PROPHET_CAND_COUNT] = {90000, 100000, 1, 1, 1, 1, 1};
        uint32_t iters;
        prophet_trials_init(&t);
        CHECK(run_round(&t, truth, all, 2, 0, &iters, 4) == PROPHET_CAND_OPTIMAL);
        /* no runner-up: one duel of two pairs, the first pass's passthrough window its first
         * defender window */
        CHECK(iters == (2 + 2 * PROPHET_TRIAL_PAIRS_MIN - 1) * PROPHET_TRIAL_WINDOW);
        CHECK(t.pass.fig[PROPHET_CAND_PROPHET] < 0); /* never tried */
    }
    CHECK(prophet_trials_begin(&t, all, 0) != 0);
    {
        uint32_t bad = PROPHET_CAND_COUNT;
        CHECK(prophet_trials_begin(&t, &bad, 1) != 0);
    }
}

/* Too few samples in a window: the same candidate one more window, then judged on what it has;
 * none at all: never chosen. */
static void test_windows(void)
{
    static const uint32_t two[] = {PROPHET_CAND_OPTIMAL, PT};
    prophet_trials_t t;
    prophet_plan_trial_t d;

    prophet_trials_init(&t);
    CHECK(prophet_trials_begin(&t, two, 2) == 0);
    prophet_trials_decide(&t, &d);
    CHECK(d.phase == PROPHET_TRIAL_RUNNING && d.candidate == PROPHET_CAND_OPTIMAL &&
          d.judged == NONE && d.round == 1 && d.next_in == PROPHET_TRIAL_WINDOW);
    prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, 1000, -1, 0);
    prophet_trials_sample(&t, PT, 1, -1, 0); /* not the candidate being timed: ignored */
    prophet_trials_decide(&t, &d);
    CHECK(d.candidate == PROPHET_CAND_OPTIMAL && d.judged == NONE); /* one more window */
    prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, 3000, -1, 0);
    prophet_trials_decide(&t, &d);
    CHECK(d.candidate == PT && d.judged == PROPHET_CAND_OPTIMAL && d.judged_samples == 2 &&
          d.judged_us == 2000);
    prophet_trials_decide(&t, &d); /* passthrough measured nothing in two windows */
    CHECK(d.phase == PROPHET_TRIAL_RUNNING && d.candidate == PT);
    prophet_trials_decide(&t, &d);
    CHECK(d.phase == PROPHET_TRIAL_CHOSEN && d.candidate == PROPHET_CAND_OPTIMAL &&
          d.chosen_us == 2000 && d.next_in == PROPHET_TRIAL_CHECK_EVERY);
    CHECK(!prophet_trials_wants_round(&t));
}

/* Steady samples under the kept plan for as long as the bandwidth takes to settle, and the
 * baselines' worth after that. */
static void settle(prophet_trials_t *t, uint32_t kept, double us, double net)
{
    int n = (int)(PROPHET_TRIAL_NET_SETTLE_US / us) + PROPHET_TRIAL_DRIFT_RECENT + 1;
    for (int i = 0; i < n; i++) /* a span read at every sample (the preload: one in 32) */
        prophet_trials_sample(t, kept, us, net, 800 + i % 2);
}

/* Once chosen: samples near the figure keep it; a drift of the iteration time past its threshold
 * asks for a new round: a re-time when it drifted alone, a full one when the network's bandwidth
 * or the profile moved with it. The bandwidth or the profile moving alone, the iteration time
 * steady, starts nothing: the kept plan still runs as fast (a single iteration's backward span at
 * 8 ranks on 2 cores strays 30-40% between readings). */
static void test_drift(void)
{
    static const uint32_t two[] = {PROPHET_CAND_OPTIMAL, PT};
    static const double net_ok = 1e8;
    prophet_trials_t t;
    static const uint32_t sigs[] = {PROPHET_DRIFT_TIME,
                                    PROPHET_DRIFT_TIME | PROPHET_DRIFT_NET,
                                    PROPHET_DRIFT_TIME | PROPHET_DRIFT_PROFILE,
                                    PROPHET_DRIFT_NET,
                                    PROPHET_DRIFT_PROFILE,
                                    PROPHET_DRIFT_NET | PROPHET_DRIFT_PROFILE};
    static const char *const names[] = {"iteration time", "iteration time and network bandwidth",
                                        "iteration time and profile"};
    prophet_plan_trial_t d;

    for (int what = 0; what < 6; what++) {
        uint32_t sig = sigs[what];
        prophet_trials_init(&t);
        CHECK(prophet_trials_begin(&t, two, 2) == 0);
        prophet_trials_decide(&t, &d);
        for (int i = 0; i < 4; i++)
            prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, 1000, net_ok, 800);
        prophet_trials_decide(&t, &d);
        for (int i = 0; i < 4; i++)
            prophet_trials_sample(&t, PT, 1200, net_ok, 800);
        /* the duel: optimal, passthrough, optimal (passthrough's first-pass window, the last
         * one, is the first pair's) */
        for (int w = 0; w < 2 * PROPHET_TRIAL_PAIRS_MIN - 1; w++) {
            prophet_trials_decide(&t, &d);
            CHECK(d.phase == PROPHET_TRIAL_RUNNING);
            for (int i = 0; i < 4; i++)
                prophet_trials_sample(&t, d.candidate, d.candidate == PT ? 1200 : 1000, net_ok,
                                      800);
        }
        prophet_trials_decide(&t, &d);
        CHECK(d.phase == PROPHET_TRIAL_CHOSEN && d.candidate == PROPHET_CAND_OPTIMAL);
        settle(&t, PROPHET_CAND_OPTIMAL, 1000, net_ok); /* the baselines under it */
        CHECK(t.drift.base_us == 1000 && t.drift.base_net == net_ok);
        for (int i = 0; i < 50; i++) /* within every threshold */
            prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, i % 2 ? 1200 : 800,
                                  net_ok * (i % 2 ? 1.25 : 0.8), i % 2 ? 960 : 640);
        CHECK(!prophet_trials_wants_round(&t));
        /* a burst shorter than the persistence rule: kept */
        for (int i = 0; i < PROPHET_TRIAL_DRIFT_LASTS - 1; i++)
            prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, sig & PROPHET_DRIFT_TIME ? 1300 : 1000,
                                  sig & PROPHET_DRIFT_NET ? net_ok / 4 : net_ok,
                                  sig & PROPHET_DRIFT_PROFILE ? 1500 : 800);
        CHECKF(!prophet_trials_wants_round(&t), "drift %d: a burst restarted the trials", what);
        for (int i = 0; i < PROPHET_TRIAL_DRIFT_RECENT; i++)
            prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, 1000, net_ok, 800);
        /* a lasting drift: seen within the bound (the profile: a new span read at every sample,
         * each out of step) */
        int seen = -1;
        for (int i = 0; i < 3 * PROPHET_TRIAL_DRIFT_LASTS && seen < 0; i++) {
            prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, sig & PROPHET_DRIFT_TIME ? 1300 : 1000,
                                  sig & PROPHET_DRIFT_NET ? net_ok / 4 : net_ok,
                                  sig & PROPHET_DRIFT_PROFILE ? 1500 + i % 2 : 800);
            if (prophet_trials_wants_round(&t))
                seen = i + 1;
        }
        if (!(sig & PROPHET_DRIFT_TIME)) { /* the iteration time held: nothing starts */
            CHECKF(seen < 0, "drift %d (signals %u, the time steady) restarted after %d samples",
                   what, sig, seen);
            continue;
        }
        CHECKF(seen > 0 && seen <= PROPHET_TRIAL_DRIFT_RECENT / 2 + 1 + PROPHET_TRIAL_DRIFT_LASTS,
               "drift %d not seen (%d samples)", what, seen);
        CHECKF(t.drift.reason && strcmp(t.drift.reason, names[what]) == 0 && t.drift.sigs == sig &&
                   t.drift.time_only == (sig == PROPHET_DRIFT_TIME),
               "drift %d: reason %s", what, t.drift.reason ? t.drift.reason : "none");
        CHECK(prophet_trials_begin(&t, two, 2) == 0);
        prophet_trials_decide(&t, &d);
        /* a time drift re-times the incumbent first (its window opens the duel); otherwise the
         * first pass, the incumbent timed last */
        CHECK(d.phase == PROPHET_TRIAL_RUNNING && d.round == 2 &&
              d.candidate == (sig == PROPHET_DRIFT_TIME ? two[0] : PT));
    }
}

/* Drives a round to its choice: every window of the candidate being timed gets 4 samples of its
 * figure (bandwidth and backward span steady). */
static uint32_t judge(prophet_trials_t *t, const double *truth)
{
    prophet_plan_trial_t d;

    for (int k = 0; k < 4 * PROPHET_CAND_COUNT; k++) {
        prophet_trials_decide(t, &d);
        if (d.phase == PROPHET_TRIAL_CHOSEN)
            return d.candidate;
        for (int i = 0; i < 4; i++)
            prophet_trials_sample(t, d.candidate, truth[d.candidate], 1e8, 800);
    }
    return NONE;
}

/* The profile's span is read at the measurement iterations only, one iteration each. A drift of
 * the iteration time during which one span was read out of step with it (up by 75% while the
 * iteration is up by 30%: a burst's edge on a loaded host, issue 36's soak) waits for the next
 * reading: in step, the drift is the iteration time's (a re-time); out of step again, the
 * profile changed (a full round). A span that lengthened with the iteration is in step. */
static void test_profile_readings(void)
{
    static const uint32_t two[] = {PROPHET_CAND_OPTIMAL, PT};
    static const double truth[PROPHET_CAND_COUNT] = {1000, 1200, 1500, 1500, 1500, 1500, 1500};

    for (int next_off = 0; next_off < 4; next_off++) {
        prophet_trials_t t;
        int i;

        prophet_trials_init(&t);
        CHECK(prophet_trials_begin(&t, two, 2) == 0);
        CHECK(judge(&t, truth) == PROPHET_CAND_OPTIMAL);
        settle(&t, PROPHET_CAND_OPTIMAL, 1000, 1e8); /* spans of 800 and 801 us */
        for (i = 0; i < 3 * PROPHET_TRIAL_DRIFT_LASTS && !prophet_trials_wants_round(&t); i++)
            prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, 1300, 1e8,
                                  next_off == 2 ? 1040 + i % 2 : 1400);
        if (next_off == 2) { /* every span in step with the iteration: a time drift */
            CHECKF(prophet_trials_wants_round(&t) && t.drift.time_only,
                   "spans in step: restart %d, time only %d (%s)", prophet_trials_wants_round(&t),
                   t.drift.time_only, t.drift.reason ? t.drift.reason : "none");
            continue;
        }
        CHECKF(!prophet_trials_wants_round(&t),
               "one span out of step: restarted after %d samples (%s)", i,
               t.drift.reason ? t.drift.reason : "none");
        if (next_off == 3) { /* no next reading: the drift waits a bounded time */
            for (i = 0; i < 60 && !prophet_trials_wants_round(&t); i++)
                prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, 1300, 1e8, 0);
            CHECKF(prophet_trials_wants_round(&t) && t.drift.time_only,
                   "no next span: restart %d, time only %d", prophet_trials_wants_round(&t),
                   t.drift.time_only);
            continue;
        }
        prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, 1300, 1e8, next_off ? 1401 : 1041);
        CHECKF(prophet_trials_wants_round(&t) && t.drift.time_only == !next_off &&
                   t.drift.sigs ==
                       (next_off ? PROPHET_DRIFT_TIME | PROPHET_DRIFT_PROFILE : PROPHET_DRIFT_TIME),
               "next span %s: restart %d, signals %u", next_off ? "out of step" : "in step",
               prophet_trials_wants_round(&t), t.drift.sigs);
    }
}

/* Feeds the kept candidate its baseline, then a lasting drift (iteration time x1.5, and with
 * `net` the network's bandwidth /4: a slower link) until a new round is wanted. */
static void drift_until_restart(prophet_trials_t *t, uint32_t kept, double us, int net)
{
    settle(t, kept, us, 1e8);
    for (uint32_t i = 0; i < 4 * prophet_trials_drift_lasts(t) && !prophet_trials_wants_round(t);
         i++)
        prophet_trials_sample(t, kept, 1.5 * us, net ? 2.5e7 : 1e8, 800);
    CHECK(prophet_trials_wants_round(t));
}

/* Right after the choice the network's bandwidth still carries the trial windows (the last one
 * passthrough's, slower) and climbs to the kept plan's. That climb is no network change: a host
 * that slows down once it is over re-times the incumbent (without the settle, the baseline taken
 * on the way up made it a full round: MobileNet-v2 per-tensor at 8 ranks, 45 ms iterations); a
 * link that slows once the bandwidth has settled makes a full round. */
static void test_net_settle(void)
{
    static const uint32_t two[] = {PROPHET_CAND_OPTIMAL, PT};
    static const double us = 45000, before = 4e7, kept = 1e8, tau_us = 500000;
    double truth[PROPHET_CAND_COUNT];

    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++)
        truth[c] = c == PT ? 1.5 * us : us;
    for (int link = 0; link < 2; link++) {
        prophet_trials_t t;
        double elapsed = 0;
        int seen = -1;

        prophet_trials_init(&t);
        CHECK(prophet_trials_begin(&t, two, 2) == 0);
        CHECK(judge(&t, truth) == PROPHET_CAND_OPTIMAL);
        for (int i = 0; i < 200; i++) { /* 9 s: from passthrough's bandwidth to the plan's */
            elapsed += us;
            prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, us,
                                  kept - (kept - before) * exp(-elapsed / tau_us), 800);
        }
        CHECKF(!prophet_trials_wants_round(&t), "the climb after the choice restarted (%s)",
               t.drift.reason ? t.drift.reason : "?");
        for (int i = 0; i < 3 * PROPHET_TRIAL_DRIFT_LASTS && seen < 0; i++) {
            prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, 1.5 * us, link ? kept / 4 : kept,
                                  800 * 1.5);
            if (prophet_trials_wants_round(&t))
                seen = i + 1;
        }
        CHECKF(seen > 0 && seen <= PROPHET_TRIAL_DRIFT_RECENT / 2 + 1 + PROPHET_TRIAL_DRIFT_LASTS,
               "%s: not seen (%d samples)", link ? "a slower link" : "a slower host", seen);
        CHECKF(t.drift.time_only == !link, "%s: %s", link ? "a slower link" : "a slower host",
               t.drift.reason ? t.drift.reason : "?");
    }
}

/* A link that slows right after the choice, before any baseline is taken (issue 12's
 * bandwidth-change test under a loaded machine: the kept plan's figure 28 ms, 72 ms from the
 * iteration after the choice on). The first samples' median cannot be the baseline then: the
 * kept plan's trial figure is, and the drift is seen; a first median near the figure stays the
 * baseline, noise and all. */
static void test_change_at_choice(void)
{
    static const uint32_t two[] = {PROPHET_CAND_OPTIMAL, PT};
    double truth[PROPHET_CAND_COUNT];
    prophet_trials_t t;

    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++)
        truth[c] = c == PT ? 50000 : 28000;
    for (int slowed = 0; slowed < 2; slowed++) {
        double after = slowed ? 72000 : 28000 * 1.2; /* 1.2: within PROPHET_TRIAL_DRIFT_TIME */
        int seen = -1;
        prophet_trials_init(&t);
        CHECK(prophet_trials_begin(&t, two, 2) == 0);
        CHECK(judge(&t, truth) == PROPHET_CAND_OPTIMAL);
        for (int i = 0; i < 3 * PROPHET_TRIAL_DRIFT_LASTS && seen < 0; i++) {
            prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, after, -1, 800);
            if (prophet_trials_wants_round(&t))
                seen = i + 1;
        }
        if (!slowed) {
            CHECKF(seen < 0 && t.drift.base_us == after,
                   "a kept plan 1.2x its figure: restart after %d samples, baseline %.0f", seen,
                   t.drift.base_us);
            continue;
        }
        CHECKF(seen > 0 && seen <= PROPHET_TRIAL_DRIFT_RECENT + PROPHET_TRIAL_DRIFT_LASTS,
               "a change at the choice not seen (%d samples, baseline %.0f)", seen,
               t.drift.base_us);
        CHECK(t.drift.reason && strcmp(t.drift.reason, "iteration time") == 0);
    }
}

/* A time drift on a bursty host moves the bandwidth fitted from NCCL's operations too, but less
 * than a link that changed: by 35% through the whole drift, or past the threshold in one burst of
 * it and back by the time it restarts (issue 36's soak: a full round of seven candidates each
 * time). Both re-time the incumbent; a link at a quarter makes a full round. */
static void test_net_dip(void)
{
    static const uint32_t two[] = {PROPHET_CAND_OPTIMAL, PT};
    static const double truth[PROPHET_CAND_COUNT] = {1000, 1200, 1500, 1500, 1500, 1500, 1500};

    for (int how = 0; how < 3; how++) { /* 0.65x all through; 0.3x, then back; 0.25x */
        prophet_trials_t t;
        int i;

        prophet_trials_init(&t);
        CHECK(prophet_trials_begin(&t, two, 2) == 0);
        CHECK(judge(&t, truth) == PROPHET_CAND_OPTIMAL);
        settle(&t, PROPHET_CAND_OPTIMAL, 1000, 1e8);
        for (i = 0; i < 4 * PROPHET_TRIAL_DRIFT_LASTS && !prophet_trials_wants_round(&t); i++)
            prophet_trials_sample(&t, PROPHET_CAND_OPTIMAL, 1400,
                                  how == 0   ? 0.65e8
                                  : how == 2 ? 0.25e8
                                  : i < 6    ? 0.3e8
                                             : 1e8,
                                  800 * 1.4);
        CHECKF(prophet_trials_wants_round(&t) && t.drift.time_only == (how < 2),
               "bandwidth %s: restart %d, %s",
               how == 0   ? "0.65x"
               : how == 1 ? "dipped"
                          : "0.25x",
               prophet_trials_wants_round(&t), t.drift.reason ? t.drift.reason : "none");
    }
}

/* Under a kept passthrough the bandwidth handed in is the eBPF throughput, which a link at a
 * quarter took from 69-77 MB/s to 29, and to more when the job was slower already (0.53x here):
 * with the iteration time, a full round; the time alone takes new baselines (e2e.bw_change_replan
 * failed with the held plans' 50% threshold here). */
static void test_net_passthrough(void)
{
    static const uint32_t two[] = {PROPHET_CAND_OPTIMAL, PT};
    static const double truth[PROPHET_CAND_COUNT] = {1300, 1000, 1500, 1500, 1500, 1500, 1500};
    prophet_trials_t t;

    prophet_trials_init(&t);
    CHECK(prophet_trials_begin(&t, two, 2) == 0);
    CHECK(judge(&t, truth) == PT);
    settle(&t, PT, 1000, 7.3e7);
    for (int i = 0; i < 4 * PROPHET_TRIAL_DRIFT_LASTS && !prophet_trials_wants_round(&t); i++)
        prophet_trials_sample(&t, PT, 1600, 3.9e7, 800 * 1.6);
    CHECKF(prophet_trials_wants_round(&t) && !t.drift.time_only && !t.drift.rebased,
           "passthrough, a link at a quarter: restart %d, rebased %d (%s)",
           prophet_trials_wants_round(&t), t.drift.rebased,
           t.drift.reason ? t.drift.reason : "none");
}

/* A re-time on a bursty host: passthrough behind the incumbent in both of the first two pairs, by
 * 15% and 40% (too far apart for the t-test to call it after two pairs). The incumbent stays after
 * those two pairs, not the cap's four (issue 36's soak: 14 iterations of passthrough saved). One
 * pair of the two at the tie: the duel goes on. */
static void test_retime_futile(void)
{
    static const uint32_t all[] = {0, 1, 2, 3, 4, 5, 6};
    static const double truth[PROPHET_CAND_COUNT] = {1000, 1300, 1050, 1500, 1400, 1080, 2000};

    for (int at_tie = 0; at_tie < 2; at_tie++) {
        const double pt[2] = {at_tie ? 1010 : 1150, 1400};
        prophet_trials_t t;
        prophet_plan_trial_t d;

        prophet_trials_init(&t);
        CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
        CHECK(judge(&t, truth) == PROPHET_CAND_OPTIMAL);
        drift_until_restart(&t, PROPHET_CAND_OPTIMAL, truth[0], 0);
        CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
        CHECK(t.duel.kind == PROPHET_DUEL_RETIME);
        for (int w = 0; w < 4; w++) { /* incumbent, passthrough, incumbent, passthrough */
            prophet_trials_decide(&t, &d);
            CHECKF(d.phase == PROPHET_TRIAL_RUNNING &&
                       d.candidate == (w % 2 ? PT : PROPHET_CAND_OPTIMAL),
                   "futile %d: window %d ran %s", at_tie, w, prophet_cand_name(d.candidate));
            for (int i = 0; i < 4; i++)
                prophet_trials_sample(&t, d.candidate, w % 2 ? pt[w / 2] : 1000, 1e8, 800);
        }
        prophet_trials_decide(&t, &d);
        if (!at_tie)
            CHECKF(d.phase == PROPHET_TRIAL_CHOSEN && d.candidate == PROPHET_CAND_OPTIMAL &&
                       t.duel.pairs == 2,
                   "passthrough behind in both pairs: phase %d, %s, %u pairs", d.phase,
                   prophet_cand_name(d.candidate), t.duel.pairs);
        else
            CHECKF(d.phase == PROPHET_TRIAL_RUNNING && d.candidate == PROPHET_CAND_OPTIMAL,
                   "a pair at the tie: the duel ended (phase %d)", d.phase);
    }
}

/* A drift of the iteration time alone (the noise of a loaded machine, a slower phase of the job)
 * first re-times the incumbent against passthrough, side by side: the incumbent still ahead is
 * kept at once, no other candidate tried; passthrough ahead goes on with every candidate. A
 * time drift with the network's bandwidth (the network changed) tries every candidate again. A kept
 * passthrough has nothing to re-time: new baselines, and the next drift must last twice as long. */
static void test_retime(void)
{
    static const uint32_t all[] = {0, 1, 2, 3, 4, 5, 6};
    static const double truth[PROPHET_CAND_COUNT] = {1000, 1300, 1050, 1500, 1400, 1080, 2000};
    prophet_trials_t t;
    prophet_plan_trial_t d;

    prophet_trials_init(&t);
    CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
    CHECK(judge(&t, truth) == PROPHET_CAND_OPTIMAL);
    for (int again = 0; again < 2; again++) {
        uint32_t calm = t.drift.calm;
        drift_until_restart(&t, PROPHET_CAND_OPTIMAL, truth[0], 0);
        CHECK(t.drift.time_only);
        CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
        CHECK(t.duel.kind == PROPHET_DUEL_RETIME && t.duel.c == PT &&
              t.duel.d == PROPHET_CAND_OPTIMAL);
        prophet_trials_decide(&t, &d);
        CHECKF(d.candidate == PROPHET_CAND_OPTIMAL, "re-time %d: first window %s", again,
               prophet_cand_name(d.candidate));
        CHECK(judge(&t, truth) == PROPHET_CAND_OPTIMAL);
        /* 30% ahead in one pair: kept at once, nothing else tried */
        CHECKF(t.duel.pairs == 1 && t.pass.fig[PROPHET_CAND_FUSION] < 0 && t.drift.calm == calm + 1,
               "re-time %d: %u pairs, fusion %.0f", again, t.duel.pairs,
               t.pass.fig[PROPHET_CAND_FUSION]);
    }
    /* the incumbent lost its edge: passthrough wins the re-time, every candidate again */
    {
        static const double now[PROPHET_CAND_COUNT] = {1000, 800, 1050, 1500, 1400, 700, 2000};
        drift_until_restart(&t, PROPHET_CAND_OPTIMAL, truth[0], 0);
        CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
        CHECK(judge(&t, now) == PROPHET_CAND_OPTIMAL_ALPHA4);
        CHECK(t.pass.fig[PROPHET_CAND_FUSION] > 0 && t.drift.calm == 0);
    }
    /* the network changed: every candidate again */
    drift_until_restart(&t, PROPHET_CAND_OPTIMAL_ALPHA4, 700, 1);
    CHECK(!t.drift.time_only);
    CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
    CHECK(t.duel.kind == PROPHET_DUEL_NONE && t.pass.n_order == PROPHET_CAND_COUNT);
    CHECK(judge(&t, truth) == PROPHET_CAND_OPTIMAL);
    /* passthrough kept: a time drift starts no round */
    {
        static const double pt_best[PROPHET_CAND_COUNT] = {1300, 1000, 1500, 1500,
                                                           1400, 1080, 2000};
        uint32_t lasts;
        prophet_trials_init(&t);
        CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
        CHECK(judge(&t, pt_best) == PT);
        lasts = prophet_trials_drift_lasts(&t);
        settle(&t, PT, 1000, 1e8);
        for (uint32_t i = 0; i < 4 * lasts; i++)
            prophet_trials_sample(&t, PT, 1500, 1e8, 800);
        CHECKF(!prophet_trials_wants_round(&t) && t.drift.reason && t.drift.rebased &&
                   prophet_trials_drift_lasts(&t) == 2 * lasts,
               "passthrough kept, time drift: round %d, rebased %d, lasts %u",
               prophet_trials_wants_round(&t), t.drift.rebased, prophet_trials_drift_lasts(&t));
    }
    /* a kept passthrough's agreements back off (10, 20, 40, 40 iterations apart) and come back to
     * every 10 while a drift of the network builds up (a time drift starts no round under
     * passthrough) */
    {
        static const double pt_best[PROPHET_CAND_COUNT] = {1300, 1000, 1500, 1500,
                                                           1400, 1080, 2000};
        static const uint32_t want[] = {20, 40, 40, 40};
        prophet_trials_init(&t);
        CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
        CHECK(judge(&t, pt_best) == PT); /* its announcement: 10 */
        settle(&t, PT, 1000, 1e8);
        for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
            prophet_trials_decide(&t, &d);
            CHECKF(d.phase == PROPHET_TRIAL_CHOSEN && d.next_in == want[k],
                   "kept passthrough, agreement %zu: next in %u, want %u", k, d.next_in, want[k]);
        }
        for (int i = 0; i < PROPHET_TRIAL_DRIFT_RECENT / 2 + 1; i++) /* the time alone drifts */
            prophet_trials_sample(&t, PT, 1500, 1e8, 800);
        CHECK(t.drift.run > 0);
        prophet_trials_decide(&t, &d);
        CHECKF(d.next_in == PROPHET_TRIAL_CHECK_MAX, "a time drift: next in %u", d.next_in);
        for (int i = 0; i < PROPHET_TRIAL_DRIFT_RECENT / 2 + 1; i++) /* the network drifts */
            prophet_trials_sample(&t, PT, 1500, 2e7, 800);
        CHECK(t.drift.run > 0 && !prophet_trials_wants_round(&t));
        prophet_trials_decide(&t, &d);
        CHECKF(d.next_in == PROPHET_TRIAL_CHECK_EVERY, "a drift building: next in %u", d.next_in);
        prophet_trials_init(&t); /* a kept plan that holds calls: every 10 */
        CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
        CHECK(judge(&t, truth) == PROPHET_CAND_OPTIMAL);
        for (int k = 0; k < 3; k++) {
            prophet_trials_decide(&t, &d);
            CHECK(d.next_in == PROPHET_TRIAL_CHECK_EVERY);
        }
    }
}

/* An incumbent that leads the first pass of a full round stays unless passthrough beats it in
 * their duel: issue 36's soak on a loaded host, round 3 (restarted by the eBPF throughput) as rank
 * 0 logged it. Each candidate's windows in turn; before, the incumbent `prophet` led as the
 * challenger of passthrough, its pairs (94.0/118.0, 121.0/114.0, 132.9/257.4, 106.7/122.5 ms)
 * 19% ahead on average but too noisy for the sequential test, and at the cap passthrough, the
 * defender, was kept. */
static void test_incumbent_leads(void)
{
    static const uint32_t four[] = {PT, PROPHET_CAND_PROPHET, PROPHET_CAND_FUSION,
                                    PROPHET_CAND_BUCKETS};
    static const double r1[PROPHET_CAND_COUNT] = {-1, 139000, 100000, 130000, 125000, -1, -1};
    /* round 3's windows, in the order each candidate had them (the first pass's first) */
    static const double pt_w[] = {139418, 118024, 114028, 257406, 122534};
    static const double prophet_w[] = {104754, 94026, 120950, 132855, 106680};
    static const double fusion_w[] = {130927}, buckets_w[] = {125583};
    const double *w[PROPHET_CAND_COUNT] = {NULL, pt_w, prophet_w, fusion_w, buckets_w, NULL, NULL};
    const uint32_t n_w[PROPHET_CAND_COUNT] = {0, 5, 5, 1, 1, 0, 0};
    uint32_t used[PROPHET_CAND_COUNT] = {0};
    prophet_trials_t t;
    prophet_plan_trial_t d;

    prophet_trials_init(&t);
    CHECK(prophet_trials_begin(&t, four, 4) == 0);
    CHECK(judge(&t, r1) == PROPHET_CAND_PROPHET);
    drift_until_restart(&t, PROPHET_CAND_PROPHET, r1[PROPHET_CAND_PROPHET], 1);
    CHECK(!t.drift.time_only);
    CHECK(prophet_trials_begin(&t, four, 4) == 0);
    for (int k = 0; k < 4 * PROPHET_CAND_COUNT; k++) {
        uint32_t c;
        prophet_trials_decide(&t, &d);
        if (d.phase == PROPHET_TRIAL_CHOSEN)
            break;
        c = d.candidate;
        CHECKF(c < PROPHET_CAND_COUNT && used[c] < n_w[c], "window %d: %s has no window left", k,
               prophet_cand_name(c));
        for (int i = 0; i < 4; i++)
            prophet_trials_sample(&t, c, w[c][used[c]], 1e8, 800);
        used[c]++;
    }
    CHECKF(d.phase == PROPHET_TRIAL_CHOSEN && d.candidate == PROPHET_CAND_PROPHET,
           "the incumbent led the first pass: kept %s", prophet_cand_name(d.candidate));
}

/* The incumbent (issue: a drift restart threw the kept plan away). Round 1 keeps optimal-alpha4
 * (87 ms; passthrough 371 ms). A drift restarts the trials; the caller's new candidate list lacks
 * optimal-alpha4 (its plan, made again, equalled optimal's): the round still measures it, and
 * keeps it unless a challenger measured faster by more than the tie and the noise. A round never
 * ends on a plan slower than the incumbent. A restart that kept the incumbent doubles the drift
 * length the next restart needs. */
static void test_incumbent(void)
{
    static const uint32_t all[] = {PT, 2, 3, 4, 0, 5, 6};
    static const uint32_t no_a4[] = {PT, 2, 3, 4, 0, 6};
    static const double r1[PROPHET_CAND_COUNT] = {127000, 371000, 200000, 150000,
                                                  140000, 87000,  130000};
    static const struct {
        const char *what;
        double opt, a4; /* optimal's and the incumbent's figures in the restarted round */
        uint32_t want;
    } cases[] = {
        {"challenger within the tie: incumbent kept", 90000, 91000, PROPHET_CAND_OPTIMAL_ALPHA4},
        {"challenger slower: incumbent kept", 127000, 93000, PROPHET_CAND_OPTIMAL_ALPHA4},
        {"challenger clearly faster: it replaces the incumbent", 70000, 93000,
         PROPHET_CAND_OPTIMAL},
    };

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        double r2[PROPHET_CAND_COUNT];
        prophet_trials_t t;
        uint32_t lasts0;

        memcpy(r2, r1, sizeof(r2));
        r2[PT] = 393000;
        r2[PROPHET_CAND_OPTIMAL] = cases[k].opt;
        r2[PROPHET_CAND_OPTIMAL_ALPHA4] = cases[k].a4;
        prophet_trials_init(&t);
        CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
        CHECK(t.kept.incumbent == NONE);
        CHECK(judge(&t, r1) == PROPHET_CAND_OPTIMAL_ALPHA4);
        lasts0 = prophet_trials_drift_lasts(&t);
        drift_until_restart(&t, PROPHET_CAND_OPTIMAL_ALPHA4, r1[PROPHET_CAND_OPTIMAL_ALPHA4], 1);
        CHECK(prophet_trials_begin(&t, no_a4, 6) == 0);
        CHECKF(t.kept.incumbent == PROPHET_CAND_OPTIMAL_ALPHA4 &&
                   t.pass.order[t.pass.n_order - 1] == PROPHET_CAND_OPTIMAL_ALPHA4,
               "case '%s': the incumbent is not in the round", cases[k].what);
        uint32_t kept = judge(&t, r2);
        CHECKF(kept == cases[k].want, "case '%s': kept %s, want %s", cases[k].what,
               prophet_cand_name(kept), prophet_cand_name(cases[k].want));
        CHECKF(t.pass.fig[kept] <= r2[PROPHET_CAND_OPTIMAL_ALPHA4] + 1,
               "case '%s': kept a plan slower than the incumbent", cases[k].what);
        CHECKF(prophet_trials_drift_lasts(&t) ==
                   (kept == PROPHET_CAND_OPTIMAL_ALPHA4 ? 2 : 1) * lasts0,
               "case '%s': a drift must last %u samples", cases[k].what,
               prophet_trials_drift_lasts(&t));
    }
    /* restarts that keep the incumbent, one after another: the wait doubles up to the cap */
    {
        prophet_trials_t t;

        prophet_trials_init(&t);
        CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
        CHECK(judge(&t, r1) == PROPHET_CAND_OPTIMAL_ALPHA4);
        for (uint32_t r = 1; r <= PROPHET_TRIAL_CALM_MAX + 2; r++) {
            drift_until_restart(&t, PROPHET_CAND_OPTIMAL_ALPHA4, r1[PROPHET_CAND_OPTIMAL_ALPHA4],
                                1);
            CHECK(prophet_trials_begin(&t, all, PROPHET_CAND_COUNT) == 0);
            CHECK(judge(&t, r1) == PROPHET_CAND_OPTIMAL_ALPHA4);
            uint32_t want = PROPHET_TRIAL_DRIFT_LASTS
                            << (r < PROPHET_TRIAL_CALM_MAX ? r : PROPHET_TRIAL_CALM_MAX);
            CHECKF(prophet_trials_drift_lasts(&t) == want, "restart %u: %u samples, want %u", r,
                   prophet_trials_drift_lasts(&t), want);
        }
    }
}

/* A round's candidates (prophet_trials_candidates): in trial order, a plan that partitions the
 * calls like an earlier one's merged into it; the incumbent's plan is the one it was agreed with,
 * never made again, never left out, and a candidate whose new plan equals it is merged into it.
 * The case: the kept optimal-alpha4, made again, came out as optimal's plan; it was
 * dropped as optimal's duplicate, and the round lost the plan it had kept. */
static void test_candidates(void)
{
    static prophet_profile_t prof;
    static prophet_plan_t plans[PROPHET_CAND_COUNT + 1], agreed;
    prophet_planner_opts_t po = {.fusion_bytes = 64u << 20,
                                 .cycle_us = 1000,
                                 .bucket_bytes = 25u << 20,
                                 .credit_bytes = 0,
                                 .ranks = 4};
    prophet_net_t net = {.alpha_us = 100, .bandwidth_Bps = 1.25e8, .source = PROPHET_NET_FIXED};
    uint32_t out[PROPHET_CAND_COUNT], alias, n;
    double t = 0;

    prof.n_calls = 60;
    for (uint32_t i = 0; i < prof.n_calls; i++) {
        prof.sig[i].bytes = 4096u << (i % 9);
        prof.sig[i].count = prof.sig[i].bytes / 4;
        t += i % 10 == 9 ? 3000 : 40;
        prof.ready_us[i] = t;
        prof.priority[i] = prof.n_calls - 1 - i;
    }
    prof.backward_us = t;
    CHECK(prophet_steps_detect_robust(prof.ready_us, prof.n_calls, 2.0, prof.steps,
                                      &prof.n_steps) == 0);
    /* first round: every distinct partition once, in trial order, the merged names in alias */
    n = prophet_trials_candidates(&po, &prof, &net, plans, NONE, out, &alias);
    CHECK(n >= 2 && out[0] == PT);
    for (uint32_t i = 0, k = 0; i < n; i++) {
        while (k < PROPHET_CAND_COUNT && prophet_trials_order[k] != out[i])
            k++;
        CHECKF(k < PROPHET_CAND_COUNT, "candidate %s out of trial order",
               prophet_cand_name(out[i]));
        for (uint32_t j = 0; j < i; j++)
            CHECK(!prophet_plan_same_blocks(&plans[out[i]], &plans[out[j]]));
    }
    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++) {
        int same = 0;

        if (!(alias & (1u << c)))
            continue;
        for (uint32_t i = 0; i < n; i++)
            same |= prophet_plan_same_blocks(&plans[c], &plans[out[i]]);
        CHECKF(same, "%s merged into no candidate", prophet_cand_name(c));
    }
    CHECK(n + (uint32_t)__builtin_popcount(alias) == PROPHET_CAND_COUNT);
    /* a restart: optimal-alpha4 was kept with optimal's blocks of now */
    CHECK(prophet_cand_plan(PROPHET_CAND_OPTIMAL, &po, &prof, &net, &agreed) == 0);
    plans[PROPHET_CAND_COUNT] = agreed;
    n = prophet_trials_candidates(&po, &prof, &net, plans, PROPHET_CAND_OPTIMAL_ALPHA4, out,
                                  &alias);
    {
        int has_inc = 0, has_opt = 0;

        for (uint32_t i = 0; i < n; i++) {
            has_inc |= out[i] == PROPHET_CAND_OPTIMAL_ALPHA4;
            has_opt |= out[i] == PROPHET_CAND_OPTIMAL;
        }
        CHECKF(has_inc && !has_opt && (alias & (1u << PROPHET_CAND_OPTIMAL)),
               "restart: incumbent %s, optimal %s (alias 0x%x)", has_inc ? "in" : "left out",
               has_opt ? "in" : "merged", alias);
        CHECK(prophet_plan_same_blocks(&plans[PROPHET_CAND_OPTIMAL_ALPHA4], &agreed));
    }
    /* the incumbent's agreed plan is used even when no planner would make it now */
    agreed.n_blocks = 2;
    agreed.block_first[0] = 0;
    agreed.block_first[1] = prof.n_calls / 2;
    plans[PROPHET_CAND_COUNT] = agreed;
    n = prophet_trials_candidates(&po, &prof, &net, plans, PROPHET_CAND_BUCKETS, out, &alias);
    CHECK(prophet_plan_same_blocks(&plans[PROPHET_CAND_BUCKETS], &agreed));
    {
        int has_inc = 0;

        for (uint32_t i = 0; i < n; i++)
            has_inc |= out[i] == PROPHET_CAND_BUCKETS;
        CHECK(has_inc);
    }
}

#define MAX_WINDOWS (PROPHET_CAND_COUNT + 3 * PROPHET_TRIAL_DUEL_SLOTS)

/* Drives a whole round over the preload's candidate order: a candidate's first window measures
 * first[c], each later one again[c] scaled by (1 + drift) per window before it (4 samples, 0.1%
 * apart). seen[] receives the candidate of every window (*n of them); *d the decision that
 * announced the choice. */
static void drive_round(prophet_trials_t *t, const double *first, const double *again, double drift,
                        uint32_t *seen, uint32_t *n, prophet_plan_trial_t *d)
{
    static const uint32_t loop_order[] = {PT, 2, 3, 4, 0, 5, 6}; /* the preload's */
    uint32_t visits[PROPHET_CAND_COUNT] = {0};

    *n = 0;
    prophet_trials_init(t);
    CHECK(prophet_trials_begin(t, loop_order, PROPHET_CAND_COUNT) == 0);
    for (;;) {
        prophet_trials_decide(t, d);
        if (d->phase == PROPHET_TRIAL_CHOSEN)
            return;
        CHECK(*n < MAX_WINDOWS);
        /* the host slows through the duel, which begins with the first pass's last window */
        double v = (visits[d->candidate]++ == 0 ? first[d->candidate] : again[d->candidate]) *
                   (*n + 1 >= PROPHET_CAND_COUNT ? 1 + drift * *n : 1);
        seen[(*n)++] = d->candidate;
        for (int i = 0; i < 4; i++)
            prophet_trials_sample(t, d->candidate, v * (1 + 0.001 * (i - 1.5)), 1e8, 800);
    }
}

/* The windows after the first pass alternate defender, challenger, from seen[from]. */
static int alternates(const uint32_t *seen, uint32_t from, uint32_t n, uint32_t def, uint32_t ch)
{
    for (uint32_t i = from; i < n; i++)
        if (seen[i] != ((i - from) % 2 ? ch : def))
            return 0;
    return 1;
}

/* The paired duel (issue 36, item 4). The winner's curse (issue 12, DDP bucket view, ResNet-50 at
 * 4 ranks and 2.5 Gbit/s): the lowest of seven medians of a few samples is biased low. A leader
 * whose first window was lucky is timed again in windows alternating with passthrough's; slower
 * there, passthrough is kept. A leader faster in every pair is kept, with its duel figure. A host
 * that slows down through the duel (each window 3% slower than the one before) cancels out of the
 * paired differences. Pairs that disagree go on to the cap, where the defender stays. */
static void test_duel(void)
{
    /* first windows: optimal-bw2 lucky at 62.5 ms, passthrough 68.4 ms, the rest 69-90 ms */
    static const double first[PROPHET_CAND_COUNT] = {69000, 68400, 90000, 69000,
                                                     80000, 69500, 62500};
    static const struct {
        const char *what;
        double bw2_again; /* optimal-bw2's later windows (passthrough's: 68.4 ms) */
        double drift;     /* per window */
        uint32_t want, pairs;
    } cases[] = {
        {"lucky leader, slower when timed again: passthrough", 72000, 0, PT, 2},
        {"leader faster again: kept", 60000, 0, PROPHET_CAND_OPTIMAL_BW2, 2},
        {"leader again within the tie margin: passthrough", 67500, 0, PT, 2},
        {"leader faster on a host slowing 3% a window: kept", 60000, 0.03, PROPHET_CAND_OPTIMAL_BW2,
         2},
        {"leader 30% slower: passthrough after one pair", 90000, 0, PT, 1},
    };

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const double again[PROPHET_CAND_COUNT] = {1, 68400, 1, 1, 1, 1, cases[k].bw2_again};
        prophet_trials_t t;
        prophet_plan_trial_t d;
        uint32_t seen[MAX_WINDOWS], n;

        drive_round(&t, first, again, cases[k].drift, seen, &n, &d);
        /* passthrough's first-pass window, the last, is the first pair's defender window */
        CHECKF(n == PROPHET_CAND_COUNT + 2 * cases[k].pairs - 1 &&
                   alternates(seen, PROPHET_CAND_COUNT - 1, n, PT, PROPHET_CAND_OPTIMAL_BW2),
               "case '%s': %u windows, want %u, alternating passthrough and the leader",
               cases[k].what, n, PROPHET_CAND_COUNT + 2 * cases[k].pairs - 1);
        CHECKF(d.candidate == cases[k].want, "case '%s': kept %s, want %s", cases[k].what,
               prophet_cand_name(d.candidate), prophet_cand_name(cases[k].want));
        double pt_us = 68400; /* passthrough's every window, the first pair's its first pass's */
        if (cases[k].drift == 0)
            CHECKF(fabs(d.chosen_us - (d.candidate == PT ? pt_us : cases[k].bw2_again)) < 100,
                   "case '%s': kept on %u us, not the duel's figure", cases[k].what, d.chosen_us);
    }
    /* the same drift, unpaired (first pass against one window each, 6 windows apart) would read
     * 60000 x 1.03^8 = 76 ms against 68 ms x 1.03^7 = 83.6 ms: still kept, but only by luck of
     * the order; the paired figures are 0.88 in every pair */
    /* pairs that disagree: the cap, and the defender stays */
    {
        static const double pattern[] = {0.90, 1.05, 0.90, 1.05};
        prophet_trials_t t;
        prophet_plan_trial_t d;
        uint32_t n = 0, p = 0;

        prophet_trials_init(&t);
        {
            static const uint32_t loop_order[] = {PT, 2, 3, 4, 0, 5, 6};
            CHECK(prophet_trials_begin(&t, loop_order, PROPHET_CAND_COUNT) == 0);
        }
        for (;;) {
            prophet_trials_decide(&t, &d);
            if (d.phase == PROPHET_TRIAL_CHOSEN)
                break;
            CHECK(n++ < MAX_WINDOWS);
            double v = d.candidate == PT ? 68000 /* its first-pass window: the first pair's */
                       : n <= PROPHET_CAND_COUNT ? first[d.candidate]
                                                 : 68000 * pattern[p++ % 4];
            for (int i = 0; i < 4; i++)
                prophet_trials_sample(&t, d.candidate, v, 1e8, 800);
        }
        CHECKF(d.candidate == PT && t.duel.pairs == PROPHET_TRIAL_PAIRS_MAX &&
                   n == PROPHET_CAND_COUNT + 2 * PROPHET_TRIAL_PAIRS_MAX - 1,
               "disagreeing pairs: kept %s after %u pairs, %u windows",
               prophet_cand_name(d.candidate), t.duel.pairs, n);
    }
    /* passthrough leads the first pass: nothing to duel, the round ends there */
    {
        static const uint32_t loop_order[] = {PT, 2, 3, 4, 0, 5, 6};
        static const double pt_first[PROPHET_CAND_COUNT] = {69000, 60000, 90000, 69000,
                                                            80000, 69500, 62500};
        prophet_trials_t t;
        prophet_trials_init(&t);
        CHECK(prophet_trials_begin(&t, loop_order, PROPHET_CAND_COUNT) == 0);
        CHECK(judge(&t, pt_first) == PT && t.duel.pairs == 0);
    }
}

/* The verdict alone, data-driven: pairs (challenger, defender) -> the answer. */
static void test_verdict(void)
{
    static const struct {
        const char *what;
        double cf[PROPHET_TRIAL_PAIRS_MAX], df[PROPHET_TRIAL_PAIRS_MAX];
        uint32_t n;
        double pair1_se;
        int want;
    } cases[] = {
        {"one pair, challenger 40% faster: not yet", {60}, {100}, 1, 0.01, PROPHET_DUEL_GO_ON},
        {"one pair, challenger 40% slower: defender", {140}, {100}, 1, 0.01, PROPHET_DUEL_DEFENDER},
        {"one pair, 40% slower but noisy windows: not yet",
         {140},
         {100},
         1,
         0.3,
         PROPHET_DUEL_GO_ON},
        {"two pairs 10% faster, agreeing: challenger",
         {90, 90.5},
         {100, 100},
         2,
         0,
         PROPHET_DUEL_CHALLENGER},
        {"two pairs 10% faster, disagreeing: not yet",
         {90, 99},
         {100, 100},
         2,
         0,
         PROPHET_DUEL_GO_ON},
        {"two pairs 1% faster: defender (within the tie)",
         {99, 99},
         {100, 100},
         2,
         0,
         PROPHET_DUEL_DEFENDER},
        {"three pairs on a drifting host, 10% faster each",
         {99, 110, 121},
         {110, 122, 134},
         3,
         0,
         PROPHET_DUEL_CHALLENGER},
        {"four pairs 3% faster, noisy: not clear",
         {95, 99, 96, 98},
         {100, 100, 100, 100},
         4,
         0,
         PROPHET_DUEL_GO_ON},
    };

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        int got =
            prophet_trials_duel_verdict(cases[k].cf, cases[k].df, cases[k].n, cases[k].pair1_se);
        CHECKF(got == cases[k].want, "verdict '%s': %d, want %d", cases[k].what, got,
               cases[k].want);
    }
}

/* Among plans that all beat passthrough, which one led a pass of 3-4 samples each is noise
 * (issue 12, ResNet-50 per-tensor at 8 ranks, 1 Gbit/s: buckets led optimal by 2 ms, was
 * confirmed at 153 ms, and optimal ran at 128 ms). Once the leader wins its duel, the runner-up,
 * if its first figure came within PROPHET_TRIAL_NEAR of the leader's, challenges the leader in a
 * second duel, whose first defender window is the leader's last of the first duel (runner-up,
 * leader, runner-up: three windows). */
static void test_runner_up(void)
{
    static const struct {
        const char *what;
        double opt_first;  /* optimal's first window (buckets leads at 80 ms) */
        double lead_again; /* buckets' later windows (passthrough's: 100 ms again) */
        double opt_again;  /* optimal's, if timed */
        uint32_t want, windows;
    } cases[] = {
        {"runner-up faster in its duel: kept", 82000, 84000, 79000, PROPHET_CAND_OPTIMAL,
         PROPHET_CAND_COUNT + 6},
        {"runner-up slower in its duel: the leader kept", 82000, 80000, 86000, PROPHET_CAND_BUCKETS,
         PROPHET_CAND_COUNT + 6},
        {"leader loses to passthrough: no second duel, passthrough", 82000, 99500, 70000, PT,
         PROPHET_CAND_COUNT + 3},
        {"runner-up more than PROPHET_TRIAL_NEAR behind: no second duel", 90000, 80000, 70000,
         PROPHET_CAND_BUCKETS, PROPHET_CAND_COUNT + 3},
    };

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const double first[PROPHET_CAND_COUNT] = {
            cases[k].opt_first, 100000, 95000, 96000, 80000, 97000, 98000};
        const double again[PROPHET_CAND_COUNT] = {cases[k].opt_again,  100000, 1, 1,
                                                  cases[k].lead_again, 1,      1};
        uint32_t seen[MAX_WINDOWS], n;
        prophet_trials_t t;
        prophet_plan_trial_t d;

        drive_round(&t, first, again, 0, seen, &n, &d);
        CHECKF(n == cases[k].windows &&
                   alternates(seen, PROPHET_CAND_COUNT - 1, PROPHET_CAND_COUNT + 3, PT,
                              PROPHET_CAND_BUCKETS) &&
                   (n == PROPHET_CAND_COUNT + 3 ||
                    alternates(seen, PROPHET_CAND_COUNT + 3, n, PROPHET_CAND_OPTIMAL,
                               PROPHET_CAND_BUCKETS)),
               "case '%s': %u windows, want %u, the last %s", cases[k].what, n, cases[k].windows,
               prophet_cand_name(seen[n - 1]));
        CHECKF(d.candidate == cases[k].want, "case '%s': kept %s, want %s", cases[k].what,
               prophet_cand_name(d.candidate), prophet_cand_name(cases[k].want));
        double want_us = d.candidate == PT                     ? 100000
                         : d.candidate == PROPHET_CAND_BUCKETS ? cases[k].lead_again
                                                               : cases[k].opt_again;
        CHECKF(fabs(d.chosen_us - want_us) < 100, "case '%s': kept on %u us, not the duel's figure",
               cases[k].what, d.chosen_us);
    }
}

/* ---- the cap and the wire ----------------------------------------------------------------- */
static prophet_profile_t prof;
static prophet_plan_t plan, back;

static void test_cap(void)
{
    prophet_planner_opts_t o = {.ranks = 4, .fusion_bytes = 1ull << 40, .bucket_bytes = 1ull << 40};
    prophet_net_t net = {.alpha_us = 1e6, .bandwidth_Bps = 1e9}; /* a launch dearer than all */

    memset(&prof, 0, sizeof(prof));
    prof.n_calls = 200;
    for (uint32_t i = 0; i < prof.n_calls; i++) {
        prof.sig[i].bytes = prof.sig[i].count = 4;
        prof.ready_us[i] = 0; /* all ready at once: every planner wants one block */
        prof.priority[i] = prof.n_calls - 1 - i;
    }
    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++) {
        CHECK(prophet_cand_plan(c, &o, &prof, &net, &plan) == 0);
        for (uint32_t b = 0; b < plan.n_blocks; b++) {
            uint32_t end = b + 1 < plan.n_blocks ? plan.block_first[b + 1] : plan.n_calls;
            CHECKF(end - plan.block_first[b] <= PROPHET_PLAN_BLOCK_MAX,
                   "%s: block %u holds %u calls (cap %d)", prophet_cand_name(c), b,
                   end - plan.block_first[b], PROPHET_PLAN_BLOCK_MAX);
        }
        if (c != PT && c != PROPHET_CAND_PROPHET)
            CHECKF(plan.n_blocks ==
                       (prof.n_calls + PROPHET_PLAN_BLOCK_MAX - 1) / PROPHET_PLAN_BLOCK_MAX,
                   "%s: %u blocks", prophet_cand_name(c), plan.n_blocks);
    }
    CHECK(prophet_cand_plan(PROPHET_CAND_COUNT, &o, &prof, &net, &plan) != 0);
}

static void test_wire(void)
{
    static uint8_t buf[PROPHET_PLAN_WIRE_BYTES];
    prophet_planner_opts_t o = {.ranks = 4, .policy = PROPHET_POLICY_OPTIMAL};
    prophet_net_t net = {.alpha_us = 10, .bandwidth_Bps = 1e9};

    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0);
    CHECK(plan.trial.phase == PROPHET_TRIAL_OFF);
    plan.trial = (prophet_plan_trial_t){.phase = PROPHET_TRIAL_CHOSEN,
                                        .candidate = PROPHET_CAND_PROPHET,
                                        .round = 3,
                                        .next_in = 10,
                                        .judged = PROPHET_CAND_FUSION,
                                        .judged_samples = 4,
                                        .judged_us = 76500,
                                        .chosen_us = 65000};
    CHECK(prophet_plan_pack(&plan, buf, sizeof(buf)) == PROPHET_PLAN_WIRE_BYTES);
    CHECK(prophet_plan_unpack(&back, buf, sizeof(buf)) == 0);
    CHECK(memcmp(&back.trial, &plan.trial, sizeof(plan.trial)) == 0);
    CHECK(prophet_plan_same_blocks(&back, &plan));
    plan.trial.phase = 7;
    CHECK(prophet_plan_pack(&plan, buf, sizeof(buf)) < 0);
}

int main(void)
{
    test_choose();
    test_round();
    test_windows();
    test_drift();
    test_profile_readings();
    test_net_settle();
    test_net_dip();
    test_net_passthrough();
    test_change_at_choice();
    test_retime();
    test_retime_futile();
    test_incumbent();
    test_incumbent_leads();
    test_candidates();
    test_duel();
    test_verdict();
    test_runner_up();
    test_cap();
    test_wire();
    printf("trials: ok\n");
    return 0;
}
