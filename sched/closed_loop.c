/* The closed loop as one unit: the trials (trials.c) and the plans they time. The caller hands
 * in each clean iteration's time and asks, at each agreement, for the plan to broadcast. A
 * candidate's plan is made once a round, when its first window begins, under the fit of that
 * moment, and then fixed for the round: its windows and, once it is kept, every later agreement
 * carry the plan that was timed (re-made at each agreement under a fit that moves with every block
 * the plan itself runs, a kept optimum alternated on ResNet-50 at 4 ranks between the 5-block plan
 * timed at 93 ms and a 3-block plan never timed, which ran at 110 ms). The kept plan is the
 * incumbent: the next round measures it as it was agreed, never made again from the fit of the
 * moment. A new profile (another call count) drops the incumbent: its plan partitions other
 * calls. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

struct prophet_closed_loop {
    prophet_trials_t trials;
    /* each candidate's plan in the current round, and [PROPHET_CAND_COUNT]: the incumbent's as
     * agreed */
    prophet_plan_t plans[PROPHET_CAND_COUNT + 1];
    int inc_valid;        /* plans[PROPHET_CAND_COUNT] holds the kept plan */
    uint32_t plans_calls; /* the profile's calls when plans[] were made */
    uint32_t plans_fixed; /* bit c: plans[c] is the one timed this round (made at its window) */
};

prophet_closed_loop_t *prophet_closed_loop_new(void)
{
    prophet_closed_loop_t *l = calloc(1, sizeof(*l));

    if (l)
        prophet_closed_loop_reset(l);
    return l;
}

void prophet_closed_loop_free(prophet_closed_loop_t *l)
{
    free(l);
}

void prophet_closed_loop_reset(prophet_closed_loop_t *l)
{
    prophet_trials_init(&l->trials);
    l->inc_valid = 0;
    l->plans_calls = 0;
    l->plans_fixed = 0;
}

int prophet_closed_loop_sample(prophet_closed_loop_t *l, uint32_t cand, double iter_us,
                               double net_Bps, double backward_us)
{
    return prophet_trials_sample(&l->trials, cand, iter_us, net_Bps, backward_us);
}

const char *prophet_closed_loop_drift(prophet_closed_loop_t *l, int *restart)
{
    const char *r = l->trials.drift.reason;

    *restart = l->trials.drift.restart;
    l->trials.drift.reason = NULL;
    l->trials.drift.rebased = 0;
    return r;
}

const prophet_trials_t *prophet_closed_loop_trials(const prophet_closed_loop_t *l)
{
    return &l->trials;
}

/* A round begins at this agreement: its candidates' plans, the incumbent's as agreed. */
static int closed_loop_round(prophet_closed_loop_t *l, const prophet_planner_opts_t *po,
                             const prophet_profile_t *prof, const prophet_net_t *net,
                             prophet_loop_events_t *ev)
{
    prophet_trials_t *t = &l->trials;
    uint32_t cands[PROPHET_CAND_COUNT], n, alias, inc;

    inc = t->phase == PROPHET_TRIAL_CHOSEN && l->inc_valid ? t->kept.chosen : PROPHET_CAND_NONE;
    if (inc == PROPHET_CAND_NONE)
        t->kept.chosen = PROPHET_CAND_NONE;
    n = prophet_trials_candidates(po, prof, net, l->plans, inc, cands, &alias);
    l->plans_calls = prof->n_calls;
    /* the incumbent's plan is the agreed one: never made again at its window */
    l->plans_fixed = inc < PROPHET_CAND_COUNT ? 1u << inc : 0;
    if (n == 0)
        return -EINVAL;
    if (prophet_trials_begin(t, cands, n) != 0)
        return -EINVAL;
    ev->round_begun = 1;
    ev->round = t->round;
    memcpy(ev->cands, t->pass.order, sizeof(t->pass.order[0]) * t->pass.n_order);
    ev->n_cands = t->pass.n_order;
    ev->alias = alias;
    ev->incumbent = t->kept.incumbent;
    ev->retime = t->duel.kind == PROPHET_DUEL_RETIME;
    return 0;
}

int prophet_closed_loop_plan(prophet_closed_loop_t *l, const prophet_planner_opts_t *po,
                             const prophet_profile_t *prof, const prophet_net_t *net,
                             prophet_plan_t *out, prophet_loop_events_t *ev)
{
    prophet_trials_t *t = &l->trials;
    prophet_plan_trial_t d;
    int err;

    memset(ev, 0, sizeof(*ev));
    ev->incumbent = ev->duel_c = ev->duel_d = PROPHET_CAND_NONE;
    if (!po || !prof || !net || !out)
        return -EINVAL;
    if (t->phase != PROPHET_TRIAL_OFF && l->plans_calls != prof->n_calls) {
        /* the round's plans were made for another profile: a new round, every candidate, and
         * no incumbent (its plan partitions other calls) */
        t->drift.restart = 1;
        t->drift.time_only = 0;
        t->kept.chosen = PROPHET_CAND_NONE;
        l->inc_valid = 0;
    }
    if (prophet_trials_wants_round(t) && (err = closed_loop_round(l, po, prof, net, ev)) != 0)
        return err;
    prophet_trials_decide(t, &d);
    if (d.candidate >= PROPHET_CAND_COUNT)
        return -EINVAL;
    if (t->duel.begun) {
        ev->duel_begun = 1;
        ev->duel_kind = t->duel.kind;
        ev->duel_c = t->duel.c;
        ev->duel_d = t->duel.d;
        ev->duel_c_us = t->pass.nfig[t->duel.c] ? t->pass.fig[t->duel.c] : -1;
        ev->duel_d_us = t->pass.nfig[t->duel.d] ? t->pass.fig[t->duel.d] : -1;
        t->duel.begun = 0;
    }
    if (!(l->plans_fixed & (1u << d.candidate))) {
        if (d.phase == PROPHET_TRIAL_RUNNING &&
            (err = prophet_cand_plan(d.candidate, po, prof, net, &l->plans[d.candidate])) != 0)
            return err;
        l->plans_fixed |= 1u << d.candidate;
    }
    *out = l->plans[d.candidate];
    out->trial = d;
    if (d.phase == PROPHET_TRIAL_CHOSEN) { /* the kept plan, as agreed: the next incumbent */
        l->plans[PROPHET_CAND_COUNT] = l->plans[d.candidate];
        l->inc_valid = 1;
    }
    return 0;
}
