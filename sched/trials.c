/* The closed loop: a plan is judged by the iteration time it measures, not only by the time it
 * predicts. A round tries each candidate for one window of agreed iterations (the plan broadcast
 * makes them the same on every rank), takes the median of its clean iteration times, and keeps
 * the best, passthrough on a near tie. Once chosen, the kept plan's iteration time, the network's
 * bandwidth (as the plans see it) and the profile's backward span are watched; a drift of the
 * iteration time past its threshold (include/prophet/sched.h) starts a new round at the next
 * agreement, and the other two say which round: a re-time of the incumbent, or a full one. The
 * iteration time and the bandwidth are compared with a baseline taken under the kept plan (the
 * median of its first PROPHET_TRIAL_DRIFT_RECENT samples after the choice), not with its trial
 * figure: the lowest of several medians of a few samples is biased low, and a noisy machine would
 * restart at once. Pure: the caller hands in the figures (the preload's
 * engine/iteration_samples.c measures them on rank 0 and carries them in the plan). */
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
        "network bandwidth",
        "iteration time and network bandwidth",
        "profile",
        "iteration time and profile",
        "network bandwidth and profile",
        "iteration time, network bandwidth and profile",
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

void prophet_trials_init(prophet_trials_t *t)
{
    memset(t, 0, sizeof(*t));
    t->phase = PROPHET_TRIAL_OFF;
    t->current = t->kept.chosen = t->pass.runner = t->kept.incumbent = t->kept.before =
        PROPHET_CAND_NONE;
    t->pass.last = PROPHET_CAND_NONE;
    t->duel.c = t->duel.d = PROPHET_CAND_NONE;
    t->duel.d_us = -1;
    t->drift.base_net = -1;
    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++) {
        t->pass.fig[c] = -1;
    }
}

int prophet_trials_wants_round(const prophet_trials_t *t)
{
    return t->phase == PROPHET_TRIAL_OFF || t->drift.restart;
}

/* A duel of challenger against defender begins: the defender's window first. */
static void duel_begin(prophet_trials_t *t, uint32_t kind, uint32_t challenger, uint32_t defender)
{
    t->duel.kind = kind;
    t->duel.c = challenger;
    t->duel.d = defender;
    t->duel.pairs = t->duel.slots = 0;
    t->duel.d_us = -1;
    t->duel.d_se = t->duel.pair1_se = 0;
    t->duel.begun = 1;
    t->current = defender;
}

int prophet_trials_begin(prophet_trials_t *t, const uint32_t *cands, uint32_t n)
{
    uint32_t round = t->round, order[PROPHET_CAND_COUNT], m = 0, calm = t->drift.calm;
    uint32_t inc = t->phase == PROPHET_TRIAL_CHOSEN ? t->kept.chosen : PROPHET_CAND_NONE;
    int retime = inc < PROPHET_CAND_COUNT && inc != PROPHET_CAND_PASSTHROUGH && t->drift.restart &&
                 t->drift.time_only,
        has_inc = 0;

    if (!cands || n == 0 || n > PROPHET_CAND_COUNT)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++) {
        if (cands[i] >= PROPHET_CAND_COUNT)
            return -EINVAL;
        for (uint32_t j = 0; j < i; j++)
            if (cands[j] == cands[i])
                return -EINVAL;
        has_inc |= cands[i] == inc;
        order[m++] = cands[i];
    }
    if (inc != PROPHET_CAND_NONE && !has_inc) { /* every round measures the incumbent */
        if (m == PROPHET_CAND_COUNT)
            return -EINVAL;
        order[m++] = inc;
    }
    /* The defender-to-be (the incumbent, else passthrough) is timed last: when another candidate
     * leads, the duel's first pair takes that window as its defender's, adjacent in time to the
     * leader's next one, and the round spends one window less (pass_done). */
    for (uint32_t i = 0; i + 1 < m; i++)
        if (order[i] == (inc != PROPHET_CAND_NONE ? inc : PROPHET_CAND_PASSTHROUGH)) {
            uint32_t d = order[i];
            memmove(order + i, order + i + 1, sizeof(order[0]) * (m - 1 - i));
            order[m - 1] = d;
            break;
        }
    prophet_trials_init(t);
    t->kept.incumbent = t->kept.before = inc;
    t->drift.calm = calm;
    t->round = round + 1;
    t->phase = PROPHET_TRIAL_RUNNING;
    memcpy(t->pass.order, order, sizeof(order[0]) * m);
    t->pass.n_order = m;
    /* the first decide() of the round puts the re-time's defender or order[0] in force */
    if (retime) {
        duel_begin(t, PROPHET_DUEL_RETIME, PROPHET_CAND_PASSTHROUGH, inc);
        t->current = PROPHET_CAND_NONE;
    }
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
 * the bandwidth-change test, 28 ms iterations at the choice, 72 ms from the next one on), and
 * the figure, measured before, is the baseline: a median taken once the job changed would hide
 * it for good, and the bandwidth's own baseline waits PROPHET_TRIAL_NET_SETTLE_US. */
static double time_baseline(const prophet_trials_t *t)
{
    double m = median_of(t->drift.recent, PROPHET_TRIAL_DRIFT_RECENT);

    return drifted(m, t->drift.base_ref_us, PROPHET_TRIAL_DRIFT_TIME) ? t->drift.base_ref_us : m;
}

/* The profile's backward span against its baseline. The span is learned at the measurement
 * iterations only (one in 32 under a kept plan), from one iteration each, and the loop sees each
 * reading for the few samples after it; a reading's share of the iteration time is taken at its
 * latest sample, by when the median of the iteration times has caught up with the iteration it
 * was read in. The baseline is the median span and the median share of the first
 * PROPHET_TRIAL_PROFILE_BASE readings. A reading is out of step when its span moved past
 * PROPHET_TRIAL_DRIFT_PROFILE and its share as far (m: the median of the last samples now): a span
 * that lengthened with the iteration is the host's (or the job's compute, slower all through), and
 * the drift is the iteration time's, for a re-time. In the soak (test/e2e/soak_trials.py) the
 * emulated GPU's compute is CPU time, so a span read in a burst of load was 25-50% longer, as was
 * the iteration, and a full round of four candidates kept the incumbent (6.7% of 2,000 iterations
 * on trials). A slower link leaves the span as it was; a job whose shape changed moves it out of
 * step with its iteration. The profile drifted when two readings in a row are out of step (one
 * alone: pending): on a loaded host one reading is off by 25% now and then (read at the edge of a
 * burst, or beside other jobs), the next one not. */
static void profile_read(prophet_trials_profile_t *p, double backward_us, double m)
{
    const uint32_t nb = PROPHET_TRIAL_PROFILE_BASE;

    if (!(backward_us > 0) || !(m > 0))
        return;
    if (backward_us != p->last) { /* a new reading: the one before it is complete */
        if (p->last > 0 && p->n_base < nb) {
            p->base[p->n_base] = p->last;
            p->base_share[p->n_base++] = p->cur_share;
            if (p->n_base == nb) {
                p->ref_backward = median_of(p->base, nb);
                p->ref_share = median_of(p->base_share, nb);
            }
        }
        p->off_before = p->cur_off ? p->off_before + 1 : 0;
        p->last = backward_us;
    }
    p->cur_share = backward_us / m;
    p->cur_off = p->n_base == nb &&
                 drifted(backward_us, p->ref_backward, PROPHET_TRIAL_DRIFT_PROFILE) &&
                 drifted(p->cur_share, p->ref_share, PROPHET_TRIAL_DRIFT_PROFILE);
}

/* Samples a drift that lasted waits at most for the span's next reading (the caller reads one
 * in PROPHET_TRIAL_SAMPLE_EVERY iterations under a kept plan; a few of them are no samples). */
#define PROFILE_WAIT_MAX (PROPHET_TRIAL_SAMPLE_EVERY * 3 / 2)

/* The profile drifted: its reading and the one before it out of step. */
static int profile_drifted(const prophet_trials_profile_t *p)
{
    return p->cur_off && p->off_before > 0;
}

/* One reading out of step, the one before it not: whether the profile drifted is the next
 * reading's to say. */
static int profile_pending(const prophet_trials_profile_t *p)
{
    return p->cur_off && p->off_before == 0;
}

static void profile_forget(prophet_trials_profile_t *p)
{
    p->ref_backward = p->ref_share = p->last = -1;
    p->n_base = p->off_before = 0;
    p->cur_off = 0;
}

/* Which signals are off their baselines now (PROPHET_DRIFT_* bits; 0: none). Baselines are taken
 * from the first PROPHET_TRIAL_DRIFT_RECENT samples under the kept plan. */
static uint32_t drift_now(prophet_trials_t *t, double backward_us)
{
    uint32_t k = PROPHET_TRIAL_DRIFT_RECENT, sigs = 0;
    double m = t->drift.n_recent >= k ? median_of(t->drift.recent, k) : -1;

    if (t->drift.n_recent == k && !(t->drift.base_us > 0))
        t->drift.base_us = time_baseline(t);
    else if (t->drift.n_recent > k && drifted(m, t->drift.base_us, PROPHET_TRIAL_DRIFT_TIME))
        sigs |= PROPHET_DRIFT_TIME;
    if (t->drift.n_recent_net == k && !(t->drift.base_net > 0))
        t->drift.base_net = median_of(t->drift.recent_net, k);
    else if (t->drift.n_recent_net > k &&
             drifted(median_of(t->drift.recent_net, k), t->drift.base_net,
                     t->kept.chosen == PROPHET_CAND_PASSTHROUGH ? PROPHET_TRIAL_DRIFT_NET_DIRECT
                                                                : PROPHET_TRIAL_DRIFT_NET))
        sigs |= PROPHET_DRIFT_NET;
    profile_read(&t->prof, backward_us, m);
    if (profile_drifted(&t->prof))
        sigs |= PROPHET_DRIFT_PROFILE;
    return sigs;
}

uint32_t prophet_trials_drift_lasts(const prophet_trials_t *t)
{
    uint32_t calm = t->drift.calm < PROPHET_TRIAL_CALM_MAX ? t->drift.calm : PROPHET_TRIAL_CALM_MAX;

    return PROPHET_TRIAL_DRIFT_LASTS << calm;
}

/* A drift of the kept plan's iteration time must last PROPHET_TRIAL_DRIFT_LASTS consecutive
 * samples, twice that after each restart in a row that kept the incumbent
 * (prophet_trials_drift_lasts) (a loaded machine's bursts do not restart the trials; a link that
 * changed speed does). Only the iteration time starts anything: while it holds, the kept plan
 * still runs as fast as when it was kept, whatever the other signals read. The bandwidth and the
 * profile say what a time drift calls for: a re-time of the incumbent when they held (the host
 * slowed down, or the job's compute all through), every candidate again when either moved (the
 * network or the job changed, and the plans made from them with it). On the emulator a single
 * iteration's backward span at 8 ranks on 2 cores strays by 30-40% from one reading to the next,
 * and a profile drift alone started a full round in 11 of 16 quiet MobileNet-v2 runs, with the
 * iteration time steady. */
static void drift_check(prophet_trials_t *t, double backward_us)
{
    uint32_t sigs = drift_now(t, backward_us);

    if (!(sigs & PROPHET_DRIFT_TIME))
        sigs = 0;
    /* the signals as they stand when the run restarts: a bandwidth that dipped past its threshold
     * in one burst of the run and came back is the host's (in the soak one such sample made
     * a full round of seven candidates); a profile read out of step once waits for its next
     * reading */
    t->drift.sigs = sigs;
    t->drift.run = sigs ? t->drift.run + 1 : 0;
    if (!sigs || t->drift.run < prophet_trials_drift_lasts(t) ||
        (profile_pending(&t->prof) &&
         t->drift.run < prophet_trials_drift_lasts(t) + PROFILE_WAIT_MAX))
        return;
    t->drift.reason = prophet_drift_name(t->drift.sigs);
    if (t->drift.sigs == PROPHET_DRIFT_TIME && t->kept.chosen == PROPHET_CAND_PASSTHROUGH) {
        /* nothing to re-time: passthrough holds nothing, and only the network or the profile
         * changes what the other plans would do; new baselines, and the next drift must last
         * twice as long */
        t->drift.rebased = 1;
        t->drift.calm += t->drift.calm < PROPHET_TRIAL_CALM_MAX;
        t->drift.base_us = t->drift.base_net = t->drift.base_ref_us = -1;
        profile_forget(&t->prof);
        t->drift.n_recent = t->drift.n_recent_net = 0;
        t->drift.run = 0;
        return;
    }
    t->drift.restart = 1;
    t->drift.time_only = t->drift.sigs == PROPHET_DRIFT_TIME;
}

int prophet_trials_sample(prophet_trials_t *t, uint32_t in_force, double iter_us, double net_Bps,
                          double backward_us)
{
    if (!t || !(iter_us > 0) || in_force != t->current)
        return PROPHET_TRIAL_SAMPLE_IGNORED;
    if (t->phase == PROPHET_TRIAL_RUNNING) {
        if (t->win.n >= PROPHET_TRIAL_SAMPLES_MAX)
            return PROPHET_TRIAL_SAMPLE_IGNORED;
        t->win.us[t->win.n++] = iter_us;
        return PROPHET_TRIAL_SAMPLE_WINDOW;
    }
    if (t->phase != PROPHET_TRIAL_CHOSEN || t->drift.restart)
        return PROPHET_TRIAL_SAMPLE_IGNORED;
    push_recent(t->drift.recent, &t->drift.n_recent, iter_us);
    t->kept.since_us += iter_us;
    if (net_Bps > 0 && t->kept.since_us >= PROPHET_TRIAL_NET_SETTLE_US)
        push_recent(t->drift.recent_net, &t->drift.n_recent_net, net_Bps);
    drift_check(t, backward_us);
    return PROPHET_TRIAL_SAMPLE_DRIFT;
}

/* Closes the window of the candidate being timed: 1 when it is judged (or given up), with its
 * figure (the median of its samples, < 0 when it had none) and the standard error of it in *fig
 * and *se; 0 when it gets one more window (samples kept). */
static int close_window(prophet_trials_t *t, prophet_plan_trial_t *out, double *fig, double *se)
{
    uint32_t c = t->current;

    *fig = -1;
    *se = 0;
    t->win.windows++;
    if (t->win.n < PROPHET_TRIAL_MIN_SAMPLES && t->win.windows < PROPHET_TRIAL_MAX_WINDOWS)
        return 0;
    if (t->win.n > 0) {
        double tmp[PROPHET_TRIAL_SAMPLES_MAX];
        *fig = median_of(t->win.us, t->win.n);
        memcpy(tmp, t->win.us, sizeof(tmp[0]) * t->win.n);
        *se = 1.4826 * prophet_mad(tmp, t->win.n, *fig) / sqrt((double)t->win.n);
        out->judged = c;
        out->judged_samples = t->win.n;
        out->judged_us = (uint32_t)(*fig + 0.5);
        if (t->duel.kind == PROPHET_DUEL_NONE) { /* the first pass's figure */
            t->pass.fig[c] = *fig;
            t->pass.nfig[c] = t->win.n;
        }
    }
    t->win.n = 0;
    t->win.windows = 0;
    return 1;
}

/* The first pass's runner-up to the leader: the lowest other figure but passthrough's and the
 * defender's, if within PROPHET_TRIAL_NEAR of the leader's (PROPHET_CAND_NONE otherwise). */
static uint32_t runner_up(const prophet_trials_t *t, uint32_t lead, uint32_t defender)
{
    uint32_t r = PROPHET_CAND_NONE;

    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++)
        if (c != lead && c != PROPHET_CAND_PASSTHROUGH && c != defender && t->pass.nfig[c] > 0 &&
            t->pass.fig[c] >= 0 && (r == PROPHET_CAND_NONE || t->pass.fig[c] < t->pass.fig[r]))
            r = c;
    if (r != PROPHET_CAND_NONE && t->pass.fig[r] > t->pass.fig[lead] * (1 + PROPHET_TRIAL_NEAR))
        r = PROPHET_CAND_NONE;
    return r;
}

const double prophet_trials_pair_t[PROPHET_TRIAL_PAIRS_MAX + 1] = {0, 0, 6.314, 2.920, 2.353};

int prophet_trials_duel_verdict(const double *cf, const double *df, uint32_t n, double pair1_se)
{
    const double tie = -PROPHET_TRIAL_TIE;
    double mean = 0, var = 0, se, q;

    if (n == 0 || n > PROPHET_TRIAL_PAIRS_MAX)
        return PROPHET_DUEL_GO_ON;
    for (uint32_t i = 0; i < n; i++)
        mean += cf[i] / df[i] - 1;
    mean /= n;
    if (n < PROPHET_TRIAL_PAIRS_MIN) /* one pair: only a defender clearly ahead */
        return mean - tie > PROPHET_TRIAL_PAIR_CLEAR && pair1_se >= 0 &&
                       mean - tie > PROPHET_TRIAL_NOISE_Z * pair1_se
                   ? PROPHET_DUEL_DEFENDER
                   : PROPHET_DUEL_GO_ON;
    for (uint32_t i = 0; i < n; i++) {
        double d = cf[i] / df[i] - 1 - mean;
        var += d * d;
    }
    se = sqrt(var / (n - 1) / n);
    q = prophet_trials_pair_t[n];
    if (mean + q * se < tie)
        return PROPHET_DUEL_CHALLENGER;
    if (mean - q * se > tie)
        return PROPHET_DUEL_DEFENDER;
    return PROPHET_DUEL_GO_ON;
}

/* Ends the round on candidate `kept` with its figure. */
static void choose_kept(prophet_trials_t *t, uint32_t kept, double us)
{
    t->duel.kind = PROPHET_DUEL_NONE;
    t->kept.chosen = kept;
    /* a restart that kept the incumbent changed nothing: the next one waits twice as long */
    if (t->kept.before < PROPHET_CAND_COUNT)
        t->drift.calm = kept == t->kept.before ? t->drift.calm + 1 : 0;
    t->kept.chosen_us = t->drift.base_ref_us = us;
    t->drift.quiet_checks = 0;
    t->drift.base_us = t->drift.base_net = -1; /* baselines: from now on */
    profile_forget(&t->prof);
    t->kept.since_us = 0;
    t->drift.run = 0;
    t->phase = PROPHET_TRIAL_CHOSEN;
    t->current = t->kept.chosen;
    t->drift.n_recent = t->drift.n_recent_net = 0;
}

/* After the first pass: the duel of its leader, or the choice when there is nothing to duel
 * (passthrough leads and there is no other incumbent; nothing was measured). An incumbent that
 * leads is the plan in force and stays unless passthrough beats it in their duel (passthrough the
 * challenger, as in a re-time). As the challenger it lost to passthrough on a tie and at the cap,
 * so a round could end on passthrough though the incumbent measured faster in their pairs (the
 * soak on a loaded host: `prophet`, kept, led the next round's first pass and was 19% ahead
 * of passthrough over four pairs of bursty windows; passthrough was kept). */
static void pass_done(prophet_trials_t *t)
{
    const uint32_t pt = PROPHET_CAND_PASSTHROUGH, inc = t->kept.incumbent;
    /* the lowest figure leads (passthrough on an equal one); the defender's preference is the
     * duel's, side by side, not a noise allowance on figures taken minutes apart */
    uint32_t lead = prophet_trials_choose(t->pass.fig, NULL, t->pass.nfig, PROPHET_CAND_COUNT, 0),
             def;

    if (lead == PROPHET_CAND_NONE) {
        choose_kept(t, inc < PROPHET_CAND_COUNT ? inc : pt, -1);
        return;
    }
    if (lead == inc && inc != pt && t->pass.nfig[pt] > 0) {
        def = inc;
        lead = pt;
    } else {
        def = inc < PROPHET_CAND_COUNT && inc != lead && t->pass.nfig[inc] > 0 ? inc : pt;
    }
    if (lead == def || t->pass.nfig[def] == 0) {
        choose_kept(t, lead, t->pass.fig[lead]);
        return;
    }
    t->pass.runner = lead != pt ? runner_up(t, lead, def) : PROPHET_CAND_NONE;
    duel_begin(t, PROPHET_DUEL_LEADER, lead, def);
    if (t->pass.last == def) {
        /* the defender's first-pass window was the last one: it is the first pair's defender
         * window (as the log carries it), and the leader's window follows at once */
        t->duel.d_us = floor(t->pass.fig[def] + 0.5);
        t->duel.d_se = t->pass.last_se;
        t->current = lead;
    }
}

/* A first-pass window was judged (fig < 0: no samples): the next candidate, or the pass done. */
static void pass_window(prophet_trials_t *t, double fig, double se)
{
    t->pass.last = fig > 0 ? t->current : PROPHET_CAND_NONE;
    t->pass.last_se = se;
    if (++t->pass.pos < t->pass.n_order)
        t->current = t->pass.order[t->pass.pos];
    else
        pass_done(t);
}

/* The median of the winner's window figures in the duel just ended (its side of every pair). */
static double duel_figure(const prophet_trials_t *t, int challenger)
{
    double v[PROPHET_TRIAL_PAIRS_MAX];

    if (t->duel.pairs == 0)
        return -1;
    memcpy(v, challenger ? t->duel.cf : t->duel.df, sizeof(v[0]) * t->duel.pairs);
    return prophet_median(v, t->duel.pairs);
}

/* A duel ended: the next duel, the first pass (a re-time that passthrough won), or the choice. */
static void duel_end(prophet_trials_t *t, int challenger_won)
{
    uint32_t winner = challenger_won ? t->duel.c : t->duel.d;
    double us = duel_figure(t, challenger_won);

    if (t->duel.kind == PROPHET_DUEL_RETIME) {
        if (!challenger_won) { /* the incumbent still beats passthrough: kept, nothing else */
            choose_kept(t, winner, us);
            return;
        }
        /* the kept plan lost its edge: every candidate again, passthrough the one to beat */
        t->duel.kind = PROPHET_DUEL_NONE;
        t->kept.incumbent = PROPHET_CAND_PASSTHROUGH;
        t->pass.pos = 0;
        t->current = t->pass.order[0];
        return;
    }
    if (t->duel.kind == PROPHET_DUEL_LEADER && challenger_won &&
        t->pass.runner < PROPHET_CAND_COUNT) {
        /* the leader's window that just ended is the runner-up duel's first defender window */
        double d_us = t->duel.cf[t->duel.pairs - 1], se = t->duel.c_se;
        uint32_t r = t->pass.runner;
        t->pass.runner = PROPHET_CAND_NONE;
        duel_begin(t, PROPHET_DUEL_RUNNER, r, winner);
        t->duel.d_us = d_us;
        t->duel.d_se = se;
        t->current = r;
        return;
    }
    choose_kept(t, winner, us);
}

/* The pairs a duel may take: a runner-up, which like the leader beat the plan in force, has
 * PROPHET_TRIAL_PAIRS_MIN to show that it is clearly faster (the stake is within
 * PROPHET_TRIAL_NEAR; two plans that close would otherwise take the cap's windows). */
static uint32_t duel_cap(const prophet_trials_t *t)
{
    return t->duel.kind == PROPHET_DUEL_RUNNER ? PROPHET_TRIAL_PAIRS_MIN : PROPHET_TRIAL_PAIRS_MAX;
}

/* A re-time asks whether the incumbent lost its edge: passthrough slower by more than the tie in
 * each of PROPHET_TRIAL_PAIRS_MIN pairs or more says it did not, and the incumbent stays without
 * the pairs to the cap. The t-test alone wants a spread small against the mean; on a bursty host
 * the pairs differ by 13-51% (in the soak: passthrough behind in all four pairs, each window
 * of passthrough 7 iterations on trials, which took the run from 4.6% to 5.7%). */
static int retime_futile(const prophet_trials_t *t)
{
    if (t->duel.kind != PROPHET_DUEL_RETIME || t->duel.pairs < PROPHET_TRIAL_PAIRS_MIN)
        return 0;
    for (uint32_t i = 0; i < t->duel.pairs; i++)
        if (!(t->duel.cf[i] / t->duel.df[i] - 1 > PROPHET_TRIAL_TIE))
            return 0;
    return 1;
}

/* A duel's window was judged with figure fig (< 0: no samples) and standard error se. */
static void duel_window(prophet_trials_t *t, double fig, double se)
{
    int verdict = PROPHET_DUEL_GO_ON;

    t->duel.slots++;
    fig = fig > 0 ? floor(fig + 0.5) : -1; /* as the log carries it */
    if (t->current == t->duel.d) {
        t->duel.d_us = fig;
        t->duel.d_se = se;
        t->current = t->duel.c;
    } else {
        if (fig > 0 && t->duel.d_us > 0) {
            uint32_t n = t->duel.pairs++;
            t->duel.cf[n] = fig;
            t->duel.df[n] = t->duel.d_us;
            if (n == 0)
                t->duel.pair1_se = sqrt(se * se + t->duel.d_se * t->duel.d_se) / t->duel.d_us;
            verdict = prophet_trials_duel_verdict(t->duel.cf, t->duel.df, t->duel.pairs,
                                                  t->duel.pair1_se);
        }
        t->duel.d_us = -1;
        t->duel.c_se = se;
        t->current = t->duel.d;
        if (verdict == PROPHET_DUEL_GO_ON &&
            (t->duel.pairs >= duel_cap(t) || t->duel.slots >= 2 * duel_cap(t) || retime_futile(t)))
            verdict = PROPHET_DUEL_DEFENDER; /* the cap: the defender stays */
    }
    if (verdict != PROPHET_DUEL_GO_ON)
        duel_end(t, verdict == PROPHET_DUEL_CHALLENGER);
}

/* Iterations to the next agreement once a choice is made: PROPHET_TRIAL_CHECK_EVERY, but under a
 * kept passthrough twice as many after each agreement with no such drift building (the iteration
 * time's, with the network or the profile off), up to PROPHET_TRIAL_CHECK_MAX. */
static uint32_t check_interval(prophet_trials_t *t)
{
    uint32_t every = PROPHET_TRIAL_CHECK_EVERY;

    /* under passthrough only a time drift with the network or the profile off starts a round */
    if (t->kept.chosen != PROPHET_CAND_PASSTHROUGH ||
        (t->drift.run > 0 && (t->drift.sigs & ~PROPHET_DRIFT_TIME))) {
        t->drift.quiet_checks = 0;
        return every;
    }
    for (uint32_t k = 0; k < t->drift.quiet_checks && every < PROPHET_TRIAL_CHECK_MAX; k++)
        every *= 2;
    t->drift.quiet_checks++;
    return every < PROPHET_TRIAL_CHECK_MAX ? every : PROPHET_TRIAL_CHECK_MAX;
}

void prophet_trials_decide(prophet_trials_t *t, prophet_plan_trial_t *out)
{
    double fig, se;

    memset(out, 0, sizeof(*out));
    out->judged = PROPHET_CAND_NONE;
    out->candidate = PROPHET_CAND_NONE;
    if (!t || t->phase == PROPHET_TRIAL_OFF)
        return;
    out->round = t->round;
    if (t->phase == PROPHET_TRIAL_RUNNING) {
        if (t->current == PROPHET_CAND_NONE) {
            t->pass.pos = 0;
            t->current = t->duel.kind != PROPHET_DUEL_NONE ? t->duel.d : t->pass.order[0];
        } else if (!close_window(t, out, &fig, &se)) {
            /* one more window of the same candidate */
        } else if (t->duel.kind != PROPHET_DUEL_NONE) {
            duel_window(t, fig, se);
        } else {
            pass_window(t, fig, se);
        }
    }
    out->phase = t->phase;
    out->candidate = t->current;
    out->next_in = t->phase == PROPHET_TRIAL_RUNNING ? PROPHET_TRIAL_WINDOW : check_interval(t);
    if (t->phase == PROPHET_TRIAL_CHOSEN && t->kept.chosen_us > 0)
        out->chosen_us = (uint32_t)(t->kept.chosen_us + 0.5);
}
