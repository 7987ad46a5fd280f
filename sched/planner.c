/* prophet_plan_make: validates, dispatches to the policy's planner, stamps the plan.
 * Every planner returns a partition of the call sequence into runs of consecutive calls
 * (block_first ascending, block_first[0] == 0): one stream keeps its program order. */
#include <errno.h>
#include <string.h>

#include "sched_internal.h"

/* The default policy, chosen from docs/simulation.md: `optimal` (the MG-WFBP dynamic programme)
 * is by construction the earliest end of the last block for the learned profile and network, so
 * it ties or beats every other planner in every cell of the sweep, while Prophet's own rule
 * falls up to several percent behind where its mean-gap steps or gap budgets misjudge. */
prophet_policy_t prophet_policy_default(void)
{
    return PROPHET_POLICY_OPTIMAL;
}

int prophet_plan_passthrough(const prophet_profile_t *p, prophet_plan_t *out)
{
    uint32_t i;

    for (i = 0; i < p->n_calls; i++)
        out->block_first[i] = i;
    out->n_blocks = p->n_calls;
    return 0;
}

/* Splits every block of more than PROPHET_PLAN_BLOCK_MAX calls into runs of that many from its
 * first call: the preload never holds more in one block. */
static void plan_cap_blocks(prophet_plan_t *out)
{
    uint32_t starts[PROPHET_MAX_CALLS], n = 0;

    for (uint32_t b = 0; b < out->n_blocks; b++) {
        uint32_t end = b + 1 < out->n_blocks ? out->block_first[b + 1] : out->n_calls;
        for (uint32_t f = out->block_first[b]; f < end; f += PROPHET_PLAN_BLOCK_MAX)
            starts[n++] = f;
    }
    memcpy(out->block_first, starts, sizeof(starts[0]) * n);
    out->n_blocks = n;
}

static int plan_valid(const prophet_plan_t *pl)
{
    uint32_t i;

    if (pl->n_calls == 0 || pl->n_blocks == 0 || pl->n_blocks > pl->n_calls ||
        pl->block_first[0] != 0)
        return 0;
    for (i = 1; i < pl->n_blocks; i++)
        if (pl->block_first[i] <= pl->block_first[i - 1] || pl->block_first[i] >= pl->n_calls)
            return 0;
    return 1;
}

int prophet_plan_make(const prophet_planner_opts_t *opts, const prophet_profile_t *profile,
                      const prophet_net_t *net, prophet_plan_t *out)
{
    prophet_sim_opts_t so = {.ranks = opts ? opts->ranks : 0, .wait_per_layer = 0};
    prophet_sim_result_t res;
    int err;

    if (!opts || !profile || !net || !out || profile->n_calls == 0 ||
        profile->n_calls > PROPHET_MAX_CALLS || !(net->bandwidth_Bps > 0) || net->alpha_us < 0 ||
        (unsigned)opts->policy >= PROPHET_POLICY_COUNT)
        return -EINVAL;
    out->policy = opts->policy;
    memset(&out->trial, 0, sizeof(out->trial));
    out->n_calls = profile->n_calls;
    out->n_blocks = 0;
    switch (opts->policy) {
    case PROPHET_POLICY_PASSTHROUGH:
        err = prophet_plan_passthrough(profile, out);
        break;
    case PROPHET_POLICY_FUSION:
        err = prophet_plan_fusion(opts, profile, out);
        break;
    case PROPHET_POLICY_BUCKETS:
        err = prophet_plan_buckets(opts, profile, out);
        break;
    case PROPHET_POLICY_PROPHET:
        err = prophet_plan_prophet(opts, profile, net, out);
        break;
    default:
        err = prophet_plan_optimal(profile, net, out);
        break;
    }
    if (err)
        return err;
    if (!plan_valid(out))
        return -EINVAL; /* a planner bug: never hand out a plan that is not a partition */
    plan_cap_blocks(out);
    out->sig_hash = prophet_sig_hash(profile->sig, profile->n_calls);
    out->predicted_iteration_us = 0;
    err = prophet_sim_run(&so, profile, net, out, &res);
    if (err)
        return err;
    out->predicted_iteration_us = res.iteration_us;
    return 0;
}
