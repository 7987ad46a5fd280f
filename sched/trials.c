/* The closed loop: a plan is judged by the iteration time it measures, not only by the time it
 * predicts. A round tries each candidate for one window of agreed iterations (the plan broadcast
 * makes them the same on every rank), takes the median of its clean iteration times, and keeps
 * the best, passthrough on a near tie. Once chosen, the kept plan's iteration time, the eBPF
 * throughput and the profile's backward span are watched; a drift past the thresholds of
 * include/prophet/sched.h starts a new round at the next agreement. The iteration time and the
 * throughput are compared with a baseline taken under the kept plan (the median of its first
 * PROPHET_TRIAL_DRIFT_RECENT samples after the choice), not with its trial figure: the lowest of
 * several medians of a few samples is biased low, and a noisy machine would restart at once. Pure:
 * the caller hands in the figures (preload/closed_loop.c measures them on rank 0 and carries them
 * in the plan). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "sched_internal.h"

static const char *const cand_names[PROPHET_CAND_COUNT] = {
    "optimal", "passthrough", "prophet", "fusion", "buckets", "optimal-alpha4", "optimal-bw2",
};

const char *prophet_cand_name(uint32_t cand)
{
    return cand < PROPHET_CAND_COUNT ? cand_names[cand] : "none";
}

const char *prophet_drift_name(uint32_t sigs)
{
    static const char *const names[8] = {
        "nothing",
        "iteration time",
        "network throughput (eBPF)",
        "iteration time and network throughput (eBPF)",
        "profile",
        "iteration time and profile",
        "network throughput (eBPF) and profile",
        "iteration time, network throughput (eBPF) and profile",
    };

    return names[sigs & 7];
}

int prophet_cand_plan(uint32_t cand, const prophet_planner_opts_t *opts,
                      const prophet_profile_t *profile, const prophet_net_t *net,
                      prophet_plan_t *out)
{
    static const prophet_policy_t policy[PROPHET_CAND_COUNT] = {
        PROPHET_POLICY_OPTIMAL, PROPHET_POLICY_PASSTHROUGH, PROPHET_POLICY_PROPHET,
        PROPHET_POLICY_FUSION,  PROPHET_POLICY_BUCKETS,     PROPHET_POLICY_OPTIMAL,
        PROPHET_POLICY_OPTIMAL,
    };
    prophet_planner_opts_t o;
    prophet_net_t n;
    int err;

    if (cand >= PROPHET_CAND_COUNT || !opts || !net)
        return -EINVAL;
    o = *opts;
    o.policy = policy[cand];
    n = *net;
    if (cand == PROPHET_CAND_OPTIMAL_ALPHA4)
        n.alpha_us = 4 * (net->alpha_us > 1 ? net->alpha_us : 1);
    else if (cand == PROPHET_CAND_OPTIMAL_BW2)
        n.bandwidth_Bps = net->bandwidth_Bps / 2;
    err = prophet_plan_make(&o, profile, &n, out);
    if (err)
        return err;
    if (cand == PROPHET_CAND_OPTIMAL_ALPHA4 || cand == PROPHET_CAND_OPTIMAL_BW2) {
        /* the prediction is the fitted model's, like every other candidate's */
        prophet_sim_opts_t so = {.ranks = opts->ranks, .wait_per_layer = 0};
        prophet_sim_result_t r;
        if (prophet_sim_run(&so, profile, net, out, &r) == 0)
            out->predicted_iteration_us = r.iteration_us;
    }
    return 0;
}

int prophet_plan_same_blocks(const prophet_plan_t *a, const prophet_plan_t *b)
{
    return a->n_calls == b->n_calls && a->n_blocks == b->n_blocks &&
           memcmp(a->block_first, b->block_first, sizeof(a->block_first[0]) * a->n_blocks) == 0;
}

/* The order a round tries its candidates in: the plans that do not use the fitted model first,
 * passthrough leading (single calls of every size), so that by the time the DP optimum's plans
 * are made the fit has seen blocks of many sizes. Before that the fit has only the measurement
 * iterations' runs of PROPHET_BLOCK_MAX calls, which cannot separate alpha from bandwidth
 * (MobileNet-v2 at 8 ranks: an optimum made then measured 57 ms in its trial window, one
 * made after the other candidates' windows 43 ms). */
const uint32_t prophet_trials_order[PROPHET_CAND_COUNT] = {
    PROPHET_CAND_PASSTHROUGH, PROPHET_CAND_PROPHET, PROPHET_CAND_FUSION,
    PROPHET_CAND_BUCKETS,     PROPHET_CAND_OPTIMAL, PROPHET_CAND_OPTIMAL_ALPHA4,
    PROPHET_CAND_OPTIMAL_BW2,
};

/* The candidates of a new round, in trial order. Each plan is made now from the fit of the
 * moment, but the incumbent's (inc: the candidate kept before, PROPHET_CAND_NONE in the first
 * round) is the plan as it was agreed, plans[PROPHET_CAND_COUNT]: never made again, never left
 * out. A candidate whose plan partitions the calls like the incumbent's or an earlier one's is
 * one candidate with it (it would measure the same): *alias gets bit c for each name merged. */
uint32_t prophet_trials_candidates(const prophet_planner_opts_t *po, const prophet_profile_t *prof,
                                   const prophet_net_t *net, prophet_plan_t *plans, uint32_t inc,
                                   uint32_t *out, uint32_t *alias)
{
    uint32_t n = 0;

    *alias = 0;
    if (inc < PROPHET_CAND_COUNT)
        plans[inc] = plans[PROPHET_CAND_COUNT];
    for (uint32_t k = 0; k < PROPHET_CAND_COUNT; k++) {
        uint32_t c = prophet_trials_order[k];
        int dup = 0;
        if (c != inc) {
            if (prophet_cand_plan(c, po, prof, net, &plans[c]) != 0)
                continue;
            dup = inc < PROPHET_CAND_COUNT && prophet_plan_same_blocks(&plans[inc], &plans[c]);
            for (uint32_t i = 0; i < n && !dup; i++)
                dup = prophet_plan_same_blocks(&plans[out[i]], &plans[c]);
        }
        if (dup)
            *alias |= 1u << c;
        else
            out[n++] = c;
    }
    return n;
}

/* Standard error of a figure from its samples' MAD (a normal sigma is 1.4826 MAD). */
static double figure_se(const double *mad, const uint32_t *nfig, uint32_t c)
{
    double sigma = mad && mad[c] > 0 ? 1.4826 * mad[c] : 0;

    return nfig[c] > 0 ? sigma / sqrt((double)nfig[c]) : 0;
}

uint32_t prophet_trials_choose(const double *fig, const double *mad, const uint32_t *nfig,
                               uint32_t n, double tie)
{
    const uint32_t pt = PROPHET_CAND_PASSTHROUGH;
    uint32_t best = PROPHET_CAND_NONE;
    double se_b, se_p;

    for (uint32_t c = 0; c < n; c++)
        if (nfig[c] > 0 && fig[c] >= 0 && (best == PROPHET_CAND_NONE || fig[c] < fig[best]))
            best = c;
    if (best == PROPHET_CAND_NONE || pt >= n || nfig[pt] == 0 || fig[pt] < 0)
        return best;
    se_b = figure_se(mad, nfig, best);
    se_p = figure_se(mad, nfig, pt);
    if (fig[pt] <= fig[best] * (1 + tie) + PROPHET_TRIAL_NOISE_Z * sqrt(se_b * se_b + se_p * se_p))
        best = pt;
    return best;
}

/* The incumbent's rule on top of prophet_trials_choose(): a challenger replaces the incumbent (the
 * plan kept before this round, measured in it) only when it measured faster by more than the
 * tie and the noise, as passthrough's rule demands of any plan that holds calls. */
static uint32_t choose_inc(const prophet_trials_t *t, const uint32_t *nfig)
{
    uint32_t best = prophet_trials_choose(t->fig, t->fig_mad, nfig, PROPHET_CAND_COUNT,
                                          PROPHET_TRIAL_TIE),
             inc = t->incumbent;
    double se_b, se_i;

    if (best == PROPHET_CAND_NONE || inc >= PROPHET_CAND_COUNT || best == inc || nfig[inc] == 0 ||
        t->fig[inc] < 0)
        return best;
    se_b = figure_se(t->fig_mad, nfig, best);
    se_i = figure_se(t->fig_mad, nfig, inc);
    if (t->fig[inc] <= t->fig[best] * (1 + PROPHET_TRIAL_TIE) +
                           PROPHET_TRIAL_NOISE_Z * sqrt(se_b * se_b + se_i * se_i))
        best = inc;
    return best;
}

void prophet_trials_init(prophet_trials_t *t)
{
    memset(t, 0, sizeof(*t));
    t->phase = PROPHET_TRIAL_OFF;
    t->current = t->chosen = t->lead = t->runner = t->incumbent = PROPHET_CAND_NONE;
    t->ref_probe = -1;
    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++) {
        t->fig[c] = t->fig_probe[c] = -1;
        t->fig_mad[c] = 0;
    }
}

int prophet_trials_wants_round(const prophet_trials_t *t)
{
    return t->phase == PROPHET_TRIAL_OFF || t->restart;
}

/* Whether a round restarted by a drift of the iteration time alone tries candidate c again. */
static int worth_again(const prophet_trials_t *t, uint32_t c)
{
    double kept = t->chosen < PROPHET_CAND_COUNT ? t->fig[t->chosen] : -1;

    if (c == t->chosen || c == PROPHET_CAND_PASSTHROUGH || !(kept > 0))
        return 1;
    if (t->nfig[c] == 0 || t->fig[c] < 0) /* not measured: left out before, or never judged */
        return !(t->far_mask & (1u << c));
    return t->fig[c] <= kept * (1 + PROPHET_TRIAL_NEAR);
}

int prophet_trials_begin(prophet_trials_t *t, const uint32_t *cands, uint32_t n)
{
    uint32_t round = t->round, order[PROPHET_CAND_COUNT], m = 0, far = 0, calm = t->calm;
    uint32_t inc = t->phase == PROPHET_TRIAL_CHOSEN ? t->chosen : PROPHET_CAND_NONE;
    int narrow = t->phase == PROPHET_TRIAL_CHOSEN && t->restart && t->time_only, has_inc = 0;

    if (!cands || n == 0 || n > PROPHET_CAND_COUNT)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++) {
        if (cands[i] >= PROPHET_CAND_COUNT)
            return -EINVAL;
        has_inc |= cands[i] == inc;
        if (!narrow || worth_again(t, cands[i]))
            order[m++] = cands[i];
        else
            far |= 1u << cands[i];
    }
    if (m == 0) { /* only candidates far from the kept one: all of them */
        memcpy(order, cands, sizeof(cands[0]) * (m = n));
        far = 0;
    }
    if (inc != PROPHET_CAND_NONE && !has_inc) /* every round measures the incumbent */
        order[m++] = inc;
    prophet_trials_init(t);
    t->incumbent = inc;
    t->calm = calm;
    t->round = round + 1;
    t->phase = PROPHET_TRIAL_RUNNING;
    memcpy(t->order, order, sizeof(order[0]) * m);
    t->n_order = m;
    t->n_skipped = n + !has_inc * (inc != PROPHET_CAND_NONE) - m;
    t->far_mask = far;
    /* the first decide() of the round puts order[0] in force */
    return 0;
}

static double median_of(const double *v, uint32_t n)
{
    double tmp[PROPHET_TRIAL_SAMPLES_MAX];

    memcpy(tmp, v, sizeof(v[0]) * n);
    return prophet_median(tmp, n);
}

static void push_recent(double *ring, uint32_t *n, double v)
{
    ring[*n % PROPHET_TRIAL_DRIFT_RECENT] = v;
    (*n)++;
}

static int drifted(double now, double ref, double limit)
{
    return ref > 0 && now > 0 && fabs(now - ref) > limit * ref;
}

/* The iteration time's baseline, from the first PROPHET_TRIAL_DRIFT_RECENT samples under the
 * kept plan: their median, unless it is already off the kept plan's own trial figure by a drift.
 * Then the job changed with the choice (a link that slowed in the iterations right after it:
 * issue 12's bandwidth-change test, 28 ms iterations at the choice, 72 ms from the next one on),
 * and the figure, measured before, is the baseline: a median taken after the change would hide
 * it for good, and the probe's own baseline waits PROPHET_TRIAL_PROBE_SETTLE_US. */
static double time_baseline(const prophet_trials_t *t)
{
    double m = median_of(t->recent, PROPHET_TRIAL_DRIFT_RECENT);

    return drifted(m, t->chosen_us, PROPHET_TRIAL_DRIFT_TIME) ? t->chosen_us : m;
}

/* Which signals are off their baselines now (PROPHET_DRIFT_* bits; 0: none). Baselines are taken
 * from the first PROPHET_TRIAL_DRIFT_RECENT samples under the kept plan. */
static uint32_t drift_now(prophet_trials_t *t, double backward_us)
{
    uint32_t k = PROPHET_TRIAL_DRIFT_RECENT, sigs = 0;

    if (t->n_recent == k && !(t->base_us > 0))
        t->base_us = time_baseline(t);
    else if (t->n_recent > k &&
             drifted(median_of(t->recent, k), t->base_us, PROPHET_TRIAL_DRIFT_TIME))
        sigs |= PROPHET_DRIFT_TIME;
    if (t->n_recent_probe == k && !(t->ref_probe > 0))
        t->ref_probe = median_of(t->recent_probe, k);
    else if (t->n_recent_probe > k &&
             drifted(median_of(t->recent_probe, k), t->ref_probe, PROPHET_TRIAL_DRIFT_PROBE))
        sigs |= PROPHET_DRIFT_PROBE;
    if (backward_us > 0 && !(t->ref_backward > 0))
        t->ref_backward = backward_us;
    else if (drifted(backward_us, t->ref_backward, PROPHET_TRIAL_DRIFT_PROFILE))
        sigs |= PROPHET_DRIFT_PROFILE;
    return sigs;
}

uint32_t prophet_trials_drift_lasts(const prophet_trials_t *t)
{
    uint32_t calm = t->calm < PROPHET_TRIAL_CALM_MAX ? t->calm : PROPHET_TRIAL_CALM_MAX;

    return PROPHET_TRIAL_DRIFT_LASTS << calm;
}

/* A drift must last PROPHET_TRIAL_DRIFT_LASTS consecutive samples, twice that after each
 * restart in a row that kept the incumbent (prophet_trials_drift_lasts) (a loaded machine's bursts
 * do not restart the trials; a link that changed speed does). */
static void drift_check(prophet_trials_t *t, double backward_us)
{
    uint32_t sigs = drift_now(t, backward_us);

    /* every signal off during the run: one sample off by the throughput or the profile makes the
     * whole run's restart a full one */
    t->drift_sigs = sigs ? (t->drift_run ? t->drift_sigs : 0) | sigs : 0;
    t->drift_run = sigs ? t->drift_run + 1 : 0;
    if (sigs && t->drift_run >= prophet_trials_drift_lasts(t)) {
        t->restart = 1;
        t->time_only = t->drift_sigs == PROPHET_DRIFT_TIME;
        t->reason = prophet_drift_name(t->drift_sigs);
    }
}

int prophet_trials_sample(prophet_trials_t *t, uint32_t in_force, double iter_us, double probe_Bps,
                          double backward_us)
{
    if (!t || !(iter_us > 0) || in_force != t->current)
        return PROPHET_TRIAL_SAMPLE_IGNORED;
    if (t->phase == PROPHET_TRIAL_RUNNING) {
        if (t->n_win >= PROPHET_TRIAL_SAMPLES_MAX)
            return PROPHET_TRIAL_SAMPLE_IGNORED;
        t->win[t->n_win++] = iter_us;
        if (probe_Bps > 0 && t->n_win_probe < PROPHET_TRIAL_SAMPLES_MAX)
            t->win_probe[t->n_win_probe++] = probe_Bps;
        return PROPHET_TRIAL_SAMPLE_WINDOW;
    }
    if (t->phase != PROPHET_TRIAL_CHOSEN || t->restart)
        return PROPHET_TRIAL_SAMPLE_IGNORED;
    push_recent(t->recent, &t->n_recent, iter_us);
    t->kept_for_us += iter_us;
    if (probe_Bps > 0 && t->kept_for_us >= PROPHET_TRIAL_PROBE_SETTLE_US)
        push_recent(t->recent_probe, &t->n_recent_probe, probe_Bps);
    drift_check(t, backward_us);
    return PROPHET_TRIAL_SAMPLE_DRIFT;
}

/* Closes the window of the candidate being timed: 1 when it is judged (figure set or given up). */
static int close_window(prophet_trials_t *t, prophet_plan_trial_t *out)
{
    uint32_t c = t->current;

    t->windows++;
    if (t->n_win < PROPHET_TRIAL_MIN_SAMPLES && t->windows < PROPHET_TRIAL_MAX_WINDOWS)
        return 0; /* one more window, samples kept */
    if (t->n_win > 0) {
        double tmp[PROPHET_TRIAL_SAMPLES_MAX];
        t->fig[c] = median_of(t->win, t->n_win);
        t->nfig[c] = t->n_win;
        memcpy(tmp, t->win, sizeof(tmp[0]) * t->n_win);
        t->fig_mad[c] = prophet_mad(tmp, t->n_win, t->fig[c]);
        out->judged = c;
        out->judged_samples = t->n_win;
        out->judged_us = (uint32_t)(t->fig[c] + 0.5);
    }
    if (t->n_win_probe > 0)
        t->fig_probe[c] = median_of(t->win_probe, t->n_win_probe);
    t->n_win = t->n_win_probe = 0;
    t->windows = 0;
    return 1;
}

/* The first pass's runner-up to t->lead: the lowest other figure but passthrough's and the
 * incumbent's (timed again anyway), if within
 * PROPHET_TRIAL_NEAR of the leader's (PROPHET_CAND_NONE otherwise). */
static uint32_t runner_up(const prophet_trials_t *t)
{
    uint32_t r = PROPHET_CAND_NONE;

    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++)
        if (c != t->lead && c != PROPHET_CAND_PASSTHROUGH && c != t->incumbent && t->nfig[c] > 0 &&
            t->fig[c] >= 0 && (r == PROPHET_CAND_NONE || t->fig[c] < t->fig[r]))
            r = c;
    if (r != PROPHET_CAND_NONE && t->fig[r] > t->lead_us * (1 + PROPHET_TRIAL_NEAR))
        r = PROPHET_CAND_NONE;
    return r;
}

/* After the first pass: 1 when its leader is not passthrough and both were measured, so that
 * both are timed again (passthrough first) in fresh windows whose figures alone decide (with the
 * runner-up's, runner_begin). */
static int confirm_begin(prophet_trials_t *t)
{
    const uint32_t pt = PROPHET_CAND_PASSTHROUGH;
    uint32_t lead;

    uint32_t inc = t->incumbent;

    if (t->lead != PROPHET_CAND_NONE)
        return 0; /* confirmed already */
    lead = choose_inc(t, t->nfig);
    if (lead == PROPHET_CAND_NONE || lead == pt || t->nfig[pt] == 0)
        return 0;
    t->lead = lead;
    t->lead_us = t->fig[lead];
    t->runner = runner_up(t);
    if (t->runner != PROPHET_CAND_NONE)
        t->runner_us = t->fig[t->runner];
    t->confirm_begun = 1;
    t->order[t->n_order++] = pt;
    if (inc < PROPHET_CAND_COUNT && inc != lead && inc != pt && t->nfig[inc] > 0) {
        /* a challenger leads: the incumbent is timed again beside it */
        t->inc_timed = 1;
        t->order[t->n_order++] = inc;
        t->fig[inc] = -1;
        t->nfig[inc] = 0;
        t->fig_mad[inc] = 0;
    }
    t->order[t->n_order++] = lead;
    t->fig[pt] = t->fig[lead] = -1; /* the fresh windows' figures replace these */
    t->nfig[pt] = t->nfig[lead] = 0;
    t->fig_mad[pt] = t->fig_mad[lead] = 0;
    return 1;
}

/* Only the confirmation's fresh figures count (all of them once t->lead is set). */
static void confirmed_only(const prophet_trials_t *t, uint32_t *nfig)
{
    memcpy(nfig, t->nfig, sizeof(nfig[0]) * PROPHET_CAND_COUNT);
    if (t->lead == PROPHET_CAND_NONE)
        return;
    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++)
        if (c != t->lead && c != PROPHET_CAND_PASSTHROUGH && !(t->runner_timed && c == t->runner) &&
            !(t->inc_timed && c == t->incumbent))
            nfig[c] = 0;
}

/* After the confirmation's two windows: 1 when the leader won them again and the first pass had a
 * runner-up near it, which is then timed again in a fresh window of its own (last). */
static int runner_begin(prophet_trials_t *t)
{
    uint32_t nfig[PROPHET_CAND_COUNT];
    uint32_t r = t->runner;

    if (t->lead == PROPHET_CAND_NONE || r == PROPHET_CAND_NONE || t->runner_timed)
        return 0;
    confirmed_only(t, nfig);
    if (choose_inc(t, nfig) != t->lead)
        return 0; /* passthrough or the incumbent kept: the runner-up could only lose too */
    t->runner_timed = t->runner_begun = 1;
    t->order[t->n_order++] = r;
    t->fig[r] = -1; /* the fresh window's figure replaces it */
    t->nfig[r] = 0;
    t->fig_mad[r] = 0;
    return 1;
}

/* Ends the round: the kept candidate, from the confirmation's fresh figures when there was one,
 * else from every figure; passthrough when nothing was measured. */
static void choose_kept(prophet_trials_t *t)
{
    uint32_t nfig[PROPHET_CAND_COUNT];

    confirmed_only(t, nfig);
    t->chosen = choose_inc(t, nfig);
    if (t->chosen == PROPHET_CAND_NONE)
        t->chosen = t->incumbent < PROPHET_CAND_COUNT ? t->incumbent : PROPHET_CAND_PASSTHROUGH;
    /* a restart that kept the incumbent changed nothing: the next one waits twice as long */
    if (t->incumbent < PROPHET_CAND_COUNT)
        t->calm = t->chosen == t->incumbent ? t->calm + 1 : 0;
    t->chosen_us = t->fig[t->chosen];
    t->base_us = t->ref_probe = t->ref_backward = -1; /* baselines: from now on */
    t->kept_for_us = 0;
    t->drift_run = 0;
    t->phase = PROPHET_TRIAL_CHOSEN;
    t->current = t->chosen;
    t->n_recent = t->n_recent_probe = 0;
}

void prophet_trials_decide(prophet_trials_t *t, prophet_plan_trial_t *out)
{
    memset(out, 0, sizeof(*out));
    out->judged = PROPHET_CAND_NONE;
    out->candidate = PROPHET_CAND_NONE;
    if (!t || t->phase == PROPHET_TRIAL_OFF)
        return;
    out->round = t->round;
    if (t->phase == PROPHET_TRIAL_RUNNING) {
        if (t->current == PROPHET_CAND_NONE) {
            t->pos = 0;
            t->current = t->order[0];
        } else if (close_window(t, out) && ++t->pos < t->n_order) {
            t->current = t->order[t->pos];
        } else if (t->pos >= t->n_order && (confirm_begin(t) || runner_begin(t))) {
            t->current = t->order[t->pos];
        } else if (t->pos >= t->n_order) {
            choose_kept(t);
        }
    }
    out->phase = t->phase;
    out->candidate = t->current;
    out->next_in =
        t->phase == PROPHET_TRIAL_RUNNING ? PROPHET_TRIAL_WINDOW : PROPHET_TRIAL_CHECK_EVERY;
    if (t->phase == PROPHET_TRIAL_CHOSEN && t->chosen_us > 0)
        out->chosen_us = (uint32_t)(t->chosen_us + 0.5);
}
