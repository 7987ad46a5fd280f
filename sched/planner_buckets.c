/* DDP-style buckets: consecutive gradients are gathered until the bucket holds at least its cap
 * (PyTorch closes a bucket once its size reaches the limit); the first bucket's cap is 1 MiB,
 * the others bucket_bytes (25 MiB when 0). */
#include "sched_internal.h"

#define FIRST_BUCKET_BYTES (1ull << 20)
#define DEFAULT_BUCKET_BYTES (25ull << 20)

int prophet_plan_buckets(const prophet_planner_opts_t *o, const prophet_profile_t *p,
                         prophet_plan_t *out)
{
    uint64_t cap = FIRST_BUCKET_BYTES, fill = 0;
    uint64_t later = o->bucket_bytes ? o->bucket_bytes : DEFAULT_BUCKET_BYTES;
    uint32_t i;

    prophet_plan_push(out, 0);
    for (i = 0; i < p->n_calls; i++) {
        if (fill >= cap) {
            prophet_plan_push(out, i);
            fill = 0;
            cap = later;
        }
        fill += p->sig[i].bytes;
    }
    return 0;
}
