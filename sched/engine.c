/* Release engine: maps a program-order call index to its block. Decisions are a pure function of
 * the index and the installed plan. Calls past the plan's n_calls (and every call when no plan is
 * installed: the built-in policy) are blocks of their own. */
#include <errno.h>
#include <stdlib.h>

#include "sched_internal.h"

struct prophet_engine {
    uint32_t n_calls, n_blocks;
    uint32_t block_of[PROPHET_MAX_CALLS];
    uint8_t closes[PROPHET_MAX_CALLS];
};

prophet_engine_t *prophet_engine_new(void)
{
    return calloc(1, sizeof(prophet_engine_t));
}

void prophet_engine_free(prophet_engine_t *e)
{
    free(e);
}

int prophet_engine_set_plan(prophet_engine_t *e, const prophet_plan_t *plan)
{
    uint32_t b, i;

    if (!e)
        return -EINVAL;
    if (!plan) {
        e->n_calls = e->n_blocks = 0;
        return 0;
    }
    if (plan->n_calls == 0 || plan->n_calls > PROPHET_MAX_CALLS || plan->n_blocks == 0 ||
        plan->n_blocks > plan->n_calls || plan->block_first[0] != 0)
        return -EINVAL;
    for (b = 1; b < plan->n_blocks; b++)
        if (plan->block_first[b] <= plan->block_first[b - 1] ||
            plan->block_first[b] >= plan->n_calls)
            return -EINVAL;
    for (b = 0; b < plan->n_blocks; b++) {
        uint32_t last = b + 1 < plan->n_blocks ? plan->block_first[b + 1] : plan->n_calls;

        for (i = plan->block_first[b]; i < last; i++) {
            e->block_of[i] = b;
            e->closes[i] = i + 1 == last;
        }
    }
    e->n_calls = plan->n_calls;
    e->n_blocks = plan->n_blocks;
    return 0;
}

int prophet_engine_closes_block(const prophet_engine_t *e, uint32_t index)
{
    if (!e || index >= e->n_calls)
        return 1;
    return e->closes[index];
}

uint32_t prophet_engine_block_of(const prophet_engine_t *e, uint32_t index)
{
    if (!e)
        return index;
    if (index >= e->n_calls)
        return e->n_blocks + (index - e->n_calls);
    return e->block_of[index];
}
