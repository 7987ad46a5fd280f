/* Horovod-style fusion: a cycle timer fires every cycle_us (1000 when 0) from the iteration's
 * time origin (ready offset 0); at each firing, the calls that are ready and not yet sent (the
 * longest such run in program order) are fused into blocks of at most fusion_bytes (64 MiB when
 * 0; a single larger call forms a block of its own). The timer is free-running: like Horovod's
 * background loop with asynchronous NCCL launches, it does not wait for the network. */
#include <math.h>

#include "sched_internal.h"

#define DEFAULT_FUSION_BYTES (64ull << 20)
#define DEFAULT_CYCLE_US 1000.0

int prophet_plan_fusion(const prophet_planner_opts_t *o, const prophet_profile_t *p,
                        prophet_plan_t *out)
{
    uint64_t cap = o->fusion_bytes ? o->fusion_bytes : DEFAULT_FUSION_BYTES;
    double cycle = o->cycle_us ? (double)o->cycle_us : DEFAULT_CYCLE_US;
    double fire = cycle;
    uint32_t next = 0, n = p->n_calls;

    while (next < n) {
        uint32_t end = next;

        while (end < n && !(p->ready_us[end] > fire)) /* a NaN offset counts as ready */
            end++;
        if (end == next) { /* nothing ready: skip to the cycle that sees the next call */
            double r = p->ready_us[next], k = (r - fire) / cycle;
            double skip = fire + (k > 1 ? floor(k) : 1) * cycle;

            /* far from the origin a cycle can be below the clock's resolution: fire at the
             * call's readiness itself rather than never advance */
            fire = skip > fire ? skip : r;
            continue;
        }
        while (next < end) {
            uint64_t fill = 0;

            prophet_plan_push(out, next);
            do
                fill += p->sig[next++].bytes;
            while (next < end && fill + p->sig[next].bytes <= cap);
        }
        fire += cycle;
    }
    return 0;
}
