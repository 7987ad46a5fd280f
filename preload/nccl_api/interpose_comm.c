/* Communicator life cycle: creation registers the state (id = creation order), destruction is a
 * program-order point (held work released first; Abort/Revoke issue it, or drop it with an error:
 * docs/completion-holding.md, "A dropped call"). Real NCCL results are returned unchanged;
 * ncclCommGetAsyncError adds the preload's sticky error where NCCL reports none. */
#include "engine/comm_life.h"
#include "holding/holding.h"
#include "engine/comm_state.h"
#include "symbol_export.h"
#include "process/init.h"
#include "real_libs/nccl_symbols.h"
#include "engine/schedule.h"

/* The real NCCL's fn made inside the preload: NCCL's own CUDA calls (communicator set-up and
 * teardown) pass the holding engine's wrappers. */
#define PROPHET_NCCL_CALL_INSIDE(fn, ...)                                                          \
    ({                                                                                             \
        ncclResult_t r_;                                                                           \
        prophet_hold_enter();                                                                      \
        r_ = prophet_nccl.fn ? prophet_nccl.fn(__VA_ARGS__) : prophet_nccl_missing("nccl" #fn);    \
        prophet_hold_leave();                                                                      \
        r_;                                                                                        \
    })

static int prophet_created_ok(ncclResult_t rc)
{
    return rc == ncclSuccess || rc == ncclInProgress;
}

PROPHET_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                             int rank)
{
    ncclResult_t rc;

    if (!prophet_active())
        return PROPHET_NCCL_CALL_INSIDE(CommInitRank, comm, nranks, commId, rank);
    rc = PROPHET_NCCL_CALL_INSIDE(CommInitRank, comm, nranks, commId, rank);
    if (prophet_created_ok(rc) && comm)
        prophet_comm_life_created(*comm, rank, nranks, NULL, 0, NULL);
    return rc;
}

PROPHET_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                                   ncclUniqueId commId, int rank,
                                                   ncclConfig_t *config)
{
    ncclResult_t rc;

    if (!prophet_active())
        return PROPHET_NCCL_CALL_INSIDE(CommInitRankConfig, comm, nranks, commId, rank, config);
    rc = PROPHET_NCCL_CALL_INSIDE(CommInitRankConfig, comm, nranks, commId, rank, config);
    if (prophet_created_ok(rc) && comm)
        prophet_comm_life_created(*comm, rank, nranks, config, 0, NULL);
    return rc;
}

PROPHET_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
    ncclResult_t rc;

    if (!prophet_active())
        return PROPHET_NCCL_CALL_INSIDE(CommInitAll, comm, ndev, devlist);
    rc = PROPHET_NCCL_CALL_INSIDE(CommInitAll, comm, ndev, devlist);
    if (rc == ncclSuccess && comm)
        for (int i = 0; i < ndev; i++)
            prophet_comm_life_created(comm[i], i, ndev, NULL, 0, NULL);
    return rc;
}

PROPHET_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank,
                                                     int nId, ncclUniqueId *commIds,
                                                     ncclConfig_t *config)
{
    ncclResult_t rc;

    if (!prophet_active())
        return PROPHET_NCCL_CALL_INSIDE(CommInitRankScalable, newcomm, nranks, myrank, nId, commIds,
                                        config);
    rc = PROPHET_NCCL_CALL_INSIDE(CommInitRankScalable, newcomm, nranks, myrank, nId, commIds,
                                  config);
    if (prophet_created_ok(rc) && newcomm)
        prophet_comm_life_created(*newcomm, myrank, nranks, config, 0, NULL);
    return rc;
}

PROPHET_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                          ncclConfig_t *config)
{
    ncclResult_t rc;

    if (!prophet_active())
        return PROPHET_NCCL_CALL_INSIDE(CommSplit, comm, color, key, newcomm, config);
    prophet_comm_barrier(comm);
    rc = PROPHET_NCCL_CALL_INSIDE(CommSplit, comm, color, key, newcomm, config);
    if (prophet_created_ok(rc) && newcomm && *newcomm)
        prophet_comm_life_created(*newcomm, -1, -1, config, 1, comm);
    return rc;
}

PROPHET_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList,
                                           int excludeRanksCount, ncclComm_t *newcomm,
                                           ncclConfig_t *config, int shrinkFlags)
{
    ncclResult_t rc;

    if (!prophet_active())
        return PROPHET_NCCL_CALL_INSIDE(CommShrink, comm, excludeRanksList, excludeRanksCount,
                                        newcomm, config, shrinkFlags);
    prophet_comm_barrier(comm);
    rc = PROPHET_NCCL_CALL_INSIDE(CommShrink, comm, excludeRanksList, excludeRanksCount, newcomm,
                                  config, shrinkFlags);
    if (prophet_created_ok(rc) && newcomm && *newcomm)
        prophet_comm_life_created(*newcomm, -1, -1, config, 1, comm);
    return rc;
}

static prophet_comm_t *prophet_retire_handle(ncclComm_t comm, int how)
{
    prophet_comm_t *c;

    if (prophet_active() && (c = prophet_comm_find(comm)) != NULL &&
        prophet_comm_retire(c, how) == PROPHET_RETIRE_BUSY)
        return c; /* the real call goes first (comm_life.h) */
    return NULL;
}

PROPHET_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    prophet_retire_handle(comm, PROPHET_RETIRE_DESTROY);
    return PROPHET_NCCL_CALL_INSIDE(CommFinalize, comm);
}

PROPHET_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    prophet_retire_handle(comm, PROPHET_RETIRE_DESTROY);
    return PROPHET_NCCL_CALL_INSIDE(CommDestroy, comm);
}

PROPHET_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    prophet_comm_t *busy = prophet_retire_handle(comm, PROPHET_RETIRE_ABORT);
    ncclResult_t rc = PROPHET_NCCL_CALL_INSIDE(CommAbort, comm);

    if (busy)
        prophet_comm_retire_after(busy, PROPHET_RETIRE_ABORT);
    return rc;
}

PROPHET_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
    prophet_comm_t *busy = prophet_retire_handle(comm, PROPHET_RETIRE_REVOKE);
    ncclResult_t rc = PROPHET_NCCL_CALL_INSIDE(CommRevoke, comm, revokeFlags);

    if (busy)
        prophet_comm_retire_after(busy, PROPHET_RETIRE_REVOKE);
    return rc;
}

/* NCCL's answer, unless the preload has a sticky error of its own for the comm (a local failure,
 * or held calls dropped at Abort/Revoke: docs/completion-holding.md, "A dropped call") and NCCL
 * reports none: then that error. The real NCCL's errors reach the caller unchanged. An aborted
 * handle that lost calls is answered here (NCCL has freed it). Never blocks. */
PROPHET_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    ncclResult_t rc, sticky = ncclSuccess;
    int freed = 0;

    if (!prophet_active() || !asyncError || !prophet_comm_sticky_error(comm, &sticky, &freed))
        return PROPHET_NCCL_CALL_INSIDE(CommGetAsyncError, comm, asyncError);
    if (freed) {
        *asyncError = sticky;
        return ncclSuccess;
    }
    rc = PROPHET_NCCL_CALL_INSIDE(CommGetAsyncError, comm, asyncError);
    if (rc == ncclSuccess && *asyncError == ncclSuccess)
        *asyncError = sticky;
    return rc;
}
