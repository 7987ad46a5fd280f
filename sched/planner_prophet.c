/* Prophet's reference rule (Zhang et al., ICPP 2021), with program order kept:
 *  - steps: a boundary wherever the gap to the next gradient exceeds twice the mean gap
 *    (prophet_steps_detect, factor 2);
 *  - each step but the last gets one block, released when the step is ready; its budget is the
 *    bytes the network moves in the gap that follows the step (gap - alpha) x bandwidth. The
 *    step's unsent calls, highest priority first as far as program order allows, i.e. the
 *    longest run from the oldest unsent call that fits (at least one call), form the block; the
 *    rest is carried into the next step;
 *  - the last step holds gradient 0 (the most urgent): everything still unsent goes out at once,
 *    in blocks of credit_bytes (the credit window; 0 = unlimited, one block). */
#include <errno.h>
#include <stdlib.h>

#include "sched_internal.h"

int prophet_plan_prophet(const prophet_planner_opts_t *o, const prophet_profile_t *p,
                         const prophet_net_t *net, prophet_plan_t *out)
{
    prophet_step_t *steps = malloc(sizeof(*steps) * p->n_calls);
    uint32_t n_steps = 0, s, next = 0;
    int err;

    if (!steps)
        return -ENOMEM;
    err = prophet_steps_detect(p->ready_us, p->n_calls, 2.0, steps, &n_steps);
    if (err)
        goto out;
    for (s = 0; s + 1 < n_steps; s++) {
        double room_us = steps[s].gap_after_us - net->alpha_us;
        double budget = room_us > 0 ? room_us * net->bandwidth_Bps / 1e6 : 0;
        double fill = 0;

        if (next > steps[s].last)
            continue;
        prophet_plan_push(out, next);
        do
            fill += (double)p->sig[next++].bytes;
        while (next <= steps[s].last && fill + (double)p->sig[next].bytes <= budget);
    }
    while (next < p->n_calls) {
        uint64_t fill = 0;

        prophet_plan_push(out, next);
        do
            fill += p->sig[next++].bytes;
        while (next < p->n_calls &&
               (o->credit_bytes == 0 || fill + p->sig[next].bytes <= o->credit_bytes));
    }
out:
    free(steps);
    return err;
}
