/* Helpers shared by the files of sched/ (not part of the public API). */
#ifndef PROPHET_SCHED_INTERNAL_H
#define PROPHET_SCHED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "prophet/sched.h"

/* Robust statistics (stats.c). Both reorder `v` in place; n must be > 0. */
double prophet_median(double *v, size_t n);
double prophet_mad(double *v, size_t n, double median); /* median absolute deviation (unscaled) */

/* The 32-bit key under which the learner's period search compares a call (learner.c); unequal
 * signatures may share one, which the search verifies on the full key before it locks. */
uint32_t prophet_learner_search_key(const prophet_call_sig_t *sig);

/* Cost of one all-reduce block of `bytes` payload on `net` (alpha + bytes / algorithm bandwidth).
 */
static inline double prophet_block_cost_us(const prophet_net_t *net, uint64_t bytes)
{
    return net->alpha_us + (double)bytes * 1e6 / net->bandwidth_Bps;
}

/* Planner back ends (planner_*.c). Each fills out->n_blocks and out->block_first. */
int prophet_plan_passthrough(const prophet_profile_t *p, prophet_plan_t *out);
int prophet_plan_fusion(const prophet_planner_opts_t *o, const prophet_profile_t *p,
                        prophet_plan_t *out);
int prophet_plan_buckets(const prophet_planner_opts_t *o, const prophet_profile_t *p,
                         prophet_plan_t *out);
int prophet_plan_prophet(const prophet_planner_opts_t *o, const prophet_profile_t *p,
                         const prophet_net_t *net, prophet_plan_t *out);
int prophet_plan_optimal(const prophet_profile_t *p, const prophet_net_t *net, prophet_plan_t *out);

/* Appends a block starting at `first` unless it would repeat the previous start. */
static inline void prophet_plan_push(prophet_plan_t *out, uint32_t first)
{
    if (out->n_blocks == 0 || out->block_first[out->n_blocks - 1] != first)
        out->block_first[out->n_blocks++] = first;
}

#endif
