/* The exported collectives and point-to-point calls, with nccl.h's exact signatures. Only
 * ncclAllReduce can be scheduled; every other call is a program-order point of its communicator
 * (the comm's held block is released first, in order) and then goes to NCCL unchanged. Real NCCL
 * results are returned unchanged. */
#include "engine/comm_state.h"
#include "holding/holding.h"
#include "symbol_export.h"
#include "process/init.h"
#include "real_libs/nccl_symbols.h"
#include "engine/schedule.h"

/* The real NCCL's fn, or one WARN and ncclInternalError when it has none. */
#define PROPHET_NCCL_CALL(fn, ...)                                                                 \
    (prophet_nccl.fn ? prophet_nccl.fn(__VA_ARGS__) : prophet_nccl_missing("nccl" #fn))

/* Release point, then the real call: real work of the job on its stream (the holding engine makes
 * that stream really wait for what it is behind), made inside the preload (NCCL's own CUDA calls
 * pass the wrappers). */
#define PROPHET_FORWARD(fn, comm, strm, ...)                                                       \
    do {                                                                                           \
        ncclResult_t r_;                                                                           \
        if (!prophet_active())                                                                     \
            return PROPHET_NCCL_CALL(fn, __VA_ARGS__);                                             \
        prophet_comm_barrier(comm);                                                                \
        prophet_hold_forward_work((CUstream)(strm), 0);                                            \
        prophet_hold_enter();                                                                      \
        r_ = PROPHET_NCCL_CALL(fn, __VA_ARGS__);                                                   \
        prophet_hold_leave();                                                                      \
        return r_;                                                                                 \
    } while (0)

/* Everything but the passthrough process's path (kept out of ncclAllReduce so that this path
 * saves no register: one load, a test and a jump into NCCL). */
static __attribute__((noinline)) ncclResult_t
prophet_allreduce_entry(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    prophet_comm_t *c;

    if (!prophet_active())
        return PROPHET_NCCL_CALL(AllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream);
    if ((c = prophet_comm_find(comm)) == NULL) {
        ncclResult_t r;
        prophet_hold_forward_work((CUstream)stream, 0);
        prophet_hold_enter();
        r = PROPHET_NCCL_CALL(AllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream);
        prophet_hold_leave();
        return r;
    }
    return prophet_allreduce(c, sendbuff, recvbuff, count, datatype, op, (CUstream)stream);
}

PROPHET_EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream)
{
    if (atomic_load_explicit(&prophet_mode, memory_order_acquire) == PROPHET_MODE_PASSTHROUGH &&
        prophet_nccl.AllReduce)
        return prophet_nccl.AllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
    return prophet_allreduce_entry(sendbuff, recvbuff, count, datatype, op, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                          ncclDataType_t datatype, int root, ncclComm_t comm,
                                          cudaStream_t stream)
{
    PROPHET_FORWARD(Broadcast, comm, stream, sendbuff, recvbuff, count, datatype, root, comm,
                    stream);
}

PROPHET_EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                                      ncclComm_t comm, cudaStream_t stream)
{
    PROPHET_FORWARD(Bcast, comm, stream, buff, count, datatype, root, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                       ncclDataType_t datatype, ncclRedOp_t op, int root,
                                       ncclComm_t comm, cudaStream_t stream)
{
    PROPHET_FORWARD(Reduce, comm, stream, sendbuff, recvbuff, count, datatype, op, root, comm,
                    stream);
}

PROPHET_EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                          ncclDataType_t datatype, ncclComm_t comm,
                                          cudaStream_t stream)
{
    PROPHET_FORWARD(AllGather, comm, stream, sendbuff, recvbuff, sendcount, datatype, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
                                              size_t recvcount, ncclDataType_t datatype,
                                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    PROPHET_FORWARD(ReduceScatter, comm, stream, sendbuff, recvbuff, recvcount, datatype, op, comm,
                    stream);
}

PROPHET_EXPORT ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclComm_t comm,
                                         cudaStream_t stream)
{
    PROPHET_FORWARD(AlltoAll, comm, stream, sendbuff, recvbuff, count, datatype, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                                       ncclDataType_t datatype, int root, ncclComm_t comm,
                                       cudaStream_t stream)
{
    PROPHET_FORWARD(Gather, comm, stream, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                        ncclDataType_t datatype, int root, ncclComm_t comm,
                                        cudaStream_t stream)
{
    PROPHET_FORWARD(Scatter, comm, stream, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype,
                                     int peer, ncclComm_t comm, cudaStream_t stream)
{
    PROPHET_FORWARD(Send, comm, stream, sendbuff, count, datatype, peer, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype,
                                     int peer, ncclComm_t comm, cudaStream_t stream)
{
    PROPHET_FORWARD(Recv, comm, stream, recvbuff, count, datatype, peer, comm, stream);
}

/* PyTorch destroys a PREMUL_SUM op right after the call that used it returns. A call with a custom
 * op is never held (prophet_schedulable_args), so it was launched before this: the destruction
 * passes through unchanged (docs/completion-holding.md, H9). */
PROPHET_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    ncclResult_t r;

    prophet_hold_enter();
    r = PROPHET_NCCL_CALL(RedOpDestroy, op, comm);
    prophet_hold_leave();
    return r;
}
