/* The reference optimum (MG-WFBP's merged-gradient schedule) for a fixed arrival profile.
 *
 * Blocks are runs of consecutive calls; block [i, j) starts at max(end of the previous block,
 * latest ready time of its members) and costs alpha + bytes / bandwidth. Let E(j) be the
 * earliest end of a partition of calls [0, j). Because a block's end is non-decreasing in the
 * end of the block before it, an optimal partition of [0, j) whose last block is [i, j) may use
 * an optimal partition of [0, i):
 *     E(0) = -inf,  E(j) = min over i < j of  max(E(i), R(i, j)) + alpha + B(i, j) / bw
 * where R is the latest ready time and B the bytes of [i, j). E(n) is the exact optimum; ties
 * keep the partition with fewer blocks. A block holds at most PROPHET_PLAN_BLOCK_MAX calls (the
 * preload's cap), so i >= j - PROPHET_PLAN_BLOCK_MAX: the optimum among the partitions the preload
 * can release as planned. O(n * cap) time, O(n) memory. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "sched_internal.h"

int prophet_plan_optimal(const prophet_profile_t *p, const prophet_net_t *net, prophet_plan_t *out)
{
    uint32_t n = p->n_calls, i, j, k;
    double *end = malloc(sizeof(double) * (n + 1));
    uint32_t *cnt = malloc(sizeof(uint32_t) * (n + 1));
    uint32_t *from = malloc(sizeof(uint32_t) * (n + 1));
    double us_per_byte = 1e6 / net->bandwidth_Bps;
    int err = 0;

    if (!end || !cnt || !from) {
        err = -ENOMEM;
        goto out;
    }
    end[0] = -INFINITY;
    cnt[0] = 0;
    for (j = 1; j <= n; j++) {
        double ready = -INFINITY, bytes = 0;

        end[j] = INFINITY;
        cnt[j] = UINT32_MAX;
        from[j] = 0;
        for (i = j; i-- > 0 && j - i <= PROPHET_PLAN_BLOCK_MAX;) { /* block [i, j), backwards */
            double start, e;

            if (p->ready_us[i] > ready)
                ready = p->ready_us[i];
            bytes += (double)p->sig[i].bytes;
            start = end[i] > ready ? end[i] : ready;
            e = start + net->alpha_us + bytes * us_per_byte;
            if (e < end[j] - 1e-9 * fabs(end[j]) ||
                (e <= end[j] + 1e-9 * fabs(end[j]) && cnt[i] + 1 < cnt[j])) {
                end[j] = e;
                cnt[j] = cnt[i] + 1;
                from[j] = i;
            }
        }
    }
    /* Walk the choices back from n, then store the block starts ascending. */
    k = cnt[n];
    out->n_blocks = k;
    for (j = n; j > 0; j = from[j])
        out->block_first[--k] = from[j];
out:
    free(end);
    free(cnt);
    free(from);
    return err;
}
