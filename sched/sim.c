/* Iteration-time simulator. What it models (t = 0 is the start of backward; profile->ready_us are
 * offsets on that clock; the backward pass ends at B = max(profile->backward_us, last ready)):
 *  - communication: the plan's blocks run one after another on one link, in program order;
 *    block k starts at max(end of block k-1, latest ready time of its members) and lasts
 *    alpha + bytes / bandwidth, where bandwidth is the all-reduce algorithm bandwidth (for a ring
 *    of N ranks over links of L bytes/s: prophet_ring_algbw(L, N) = L * N / (2 (N - 1)), i.e. the
 *    ring all-reduce moves 2 (N-1)/N x bytes per rank). Compute is not slowed by communication;
 *  - --wait all: the next forward pass starts when backward has ended and the last block has
 *    completed: iteration = max(B, E_last) + forward_us;
 *  - --wait per-layer: the next forward runs layers in priority order (0 first). The forward time
 *    F is shared among the gradients in proportion to the backward compute that preceded each
 *    one's readiness (ready[i] - ready[i-1] in program order; equal shares when that is all
 *    zero). Gradient p's forward slice starts at max(end of slice p-1 (B for the first), end of
 *    the block holding gradient p) and the iteration ends with the last slice. With blocks of
 *    consecutive calls, the most urgent gradient is in the last block, so this equals --wait all
 *    whenever priority 0 is the last call in program order (true of backward order).
 * iteration_us is the time from one backward start to the next (= forward + backward when
 * communication hides completely); comm_busy_us is the sum of the block durations. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "sched_internal.h"

double prophet_ring_algbw(double link_Bps, uint32_t ranks)
{
    if (ranks < 2)
        return link_Bps;
    return link_Bps * ranks / (2.0 * (ranks - 1));
}

/* Per-layer wait: returns the end of the next forward pass. block_end[i] = end of call i's block.
 */
static int next_forward_end(const prophet_profile_t *p, const double *block_end, double b_end,
                            double *out)
{
    uint32_t n = p->n_calls, i;
    uint32_t *order = malloc(sizeof(*order) * n);
    double *share = malloc(sizeof(*share) * n);
    double total = 0, t = b_end;

    if (!order || !share) {
        free(order);
        free(share);
        return -ENOMEM;
    }
    for (i = 0; i < n; i++) {
        double prev = i ? p->ready_us[i - 1] : 0;

        share[i] = p->ready_us[i] > prev ? p->ready_us[i] - prev : 0;
        total += share[i];
        order[i] = i;
    }
    /* Order calls by (priority, index): insertion sort is fine for a few thousand once. */
    for (i = 1; i < n; i++) {
        uint32_t x = order[i], k = i;

        while (k > 0 && (p->priority[order[k - 1]] > p->priority[x] ||
                         (p->priority[order[k - 1]] == p->priority[x] && order[k - 1] > x))) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = x;
    }
    for (i = 0; i < n; i++) {
        uint32_t c = order[i];
        double f = total > 0 ? p->forward_us * share[c] / total : p->forward_us / n;

        if (block_end[c] > t)
            t = block_end[c];
        t += f;
    }
    *out = t;
    free(order);
    free(share);
    return 0;
}

int prophet_sim_run(const prophet_sim_opts_t *opts, const prophet_profile_t *profile,
                    const prophet_net_t *net, const prophet_plan_t *plan, prophet_sim_result_t *out)
{
    const prophet_profile_t *p = profile;
    double *block_end = NULL, t = -INFINITY, busy = 0, b_end;
    uint32_t b, i;
    int err = 0;

    if (!opts || !p || !net || !plan || !out || p->n_calls == 0 || p->n_calls > PROPHET_MAX_CALLS ||
        plan->n_calls != p->n_calls || plan->n_blocks == 0 || plan->n_blocks > p->n_calls ||
        plan->block_first[0] != 0 || !(net->bandwidth_Bps > 0))
        return -EINVAL;
    block_end = malloc(sizeof(*block_end) * p->n_calls);
    if (!block_end)
        return -ENOMEM;
    b_end = p->backward_us;
    for (b = 0; b < plan->n_blocks; b++) {
        uint32_t first = plan->block_first[b];
        uint32_t last = b + 1 < plan->n_blocks ? plan->block_first[b + 1] : p->n_calls;
        double ready = -INFINITY, bytes = 0, cost;

        if (last <= first || last > p->n_calls) {
            err = -EINVAL;
            goto out;
        }
        for (i = first; i < last; i++) {
            if (p->ready_us[i] > ready)
                ready = p->ready_us[i];
            bytes += (double)p->sig[i].bytes;
        }
        if (ready > b_end)
            b_end = ready;
        cost = net->alpha_us + bytes * 1e6 / net->bandwidth_Bps;
        t = (t > ready ? t : ready) + cost;
        busy += cost;
        for (i = first; i < last; i++)
            block_end[i] = t;
    }
    out->n_blocks = plan->n_blocks;
    out->comm_busy_us = busy;
    if (opts->wait_per_layer) {
        err = next_forward_end(p, block_end, b_end, &out->iteration_us);
    } else {
        out->iteration_us = (t > b_end ? t : b_end) + p->forward_us;
    }
out:
    free(block_end);
    return err;
}
