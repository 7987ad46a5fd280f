/* Per-thread depth of the user's ncclGroupStart/End nesting (NCCL's group depth is per thread). */
#include "engine/group_depth.h"
#include "thread_local.h"

static PROPHET_TLS int prophet_group_level;

int prophet_group_depth(void)
{
    return prophet_group_level;
}

void prophet_group_enter(void)
{
    prophet_group_level++;
}

void prophet_group_leave(void)
{
    if (prophet_group_level > 0)
        prophet_group_level--;
}
