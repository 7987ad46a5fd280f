/* ncclGroupStart/End: the user's groups keep their meaning. The interposer only tracks the
 * per-thread depth (mirroring NCCL's) and, at the outermost ncclGroupStart, releases the blocks
 * this thread holds, so that they are launched before the group and nothing of ours is ever
 * merged into it. Calls inside a group pass through into it. */
#include "symbol_export.h"
#include "holding/holding.h"
#include "engine/group_depth.h"
#include "process/init.h"
#include "real_libs/nccl_symbols.h"
#include "engine/release.h"

PROPHET_EXPORT ncclResult_t ncclGroupStart(void)
{
    ncclResult_t rc;

    if (!prophet_active())
        return prophet_nccl.GroupStart ? prophet_nccl.GroupStart()
                                       : prophet_nccl_missing("ncclGroupStart");
    prophet_hold_enter();
    if (prophet_group_depth() == 0)
        prophet_release_all_mine();
    rc = prophet_nccl.GroupStart ? prophet_nccl.GroupStart()
                                 : prophet_nccl_missing("ncclGroupStart");
    prophet_hold_leave();
    if (rc == ncclSuccess)
        prophet_group_enter();
    return rc;
}

PROPHET_EXPORT ncclResult_t ncclGroupEnd(void)
{
    ncclResult_t rc;

    if (!prophet_active())
        return prophet_nccl.GroupEnd ? prophet_nccl.GroupEnd()
                                     : prophet_nccl_missing("ncclGroupEnd");
    prophet_hold_enter(); /* the group's launches: each call's stream was made real at the call */
    rc = prophet_nccl.GroupEnd ? prophet_nccl.GroupEnd() : prophet_nccl_missing("ncclGroupEnd");
    prophet_hold_leave();
    /* NCCL decrements its depth whenever it was > 0, whatever the result */
    prophet_group_leave();
    return rc;
}

/* ncclGroupSimulateEnd ends the group as ncclGroupEnd does (NCCL decrements its depth whenever it
 * was > 0, whatever the result), launching nothing: the thread's depth follows it, or every later
 * call of the thread would be taken for a call inside a group and pass through. */
PROPHET_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    ncclResult_t rc;

    if (!prophet_active())
        return prophet_nccl.GroupSimulateEnd ? prophet_nccl.GroupSimulateEnd(simInfo)
                                             : prophet_nccl_missing("ncclGroupSimulateEnd");
    prophet_hold_enter();
    rc = prophet_nccl.GroupSimulateEnd ? prophet_nccl.GroupSimulateEnd(simInfo)
                                       : prophet_nccl_missing("ncclGroupSimulateEnd");
    prophet_hold_leave();
    prophet_group_leave();
    return rc;
}
