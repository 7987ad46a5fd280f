/* Per-thread depth of the user's ncclGroupStart/End nesting (NCCL's group depth is per thread). */
#include "group_state.h"
#include "tls.h"

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
