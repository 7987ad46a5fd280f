/* The exported collectives and point-to-point calls, with nccl.h's exact signatures. Only
 * ncclAllReduce can be scheduled; every other call is a program-order point of its communicator
 * (the comm's held block is released first, in order) and then goes to NCCL unchanged. Real NCCL
 * results are returned unchanged. */
#include "comm_state.h"
#include "export.h"
#include "init.h"
#include "nccl_symbols.h"
#include "schedule.h"

#define PROPHET_REAL(fn, ...)                                                                      \
    (prophet_nccl.fn ? prophet_nccl.fn(__VA_ARGS__) : prophet_nccl_missing("nccl" #fn))

/* Release point, then the real call. */
#define PROPHET_FORWARD(fn, comm, ...)                                                             \
    do {                                                                                           \
        if (prophet_active())                                                                      \
            prophet_comm_barrier(comm);                                                            \
        return PROPHET_REAL(fn, __VA_ARGS__);                                                      \
    } while (0)

PROPHET_EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream)
{
    prophet_comm_t *c;

    if (!prophet_active() || (c = prophet_comm_find(comm)) == NULL)
        return PROPHET_REAL(AllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream);
    return prophet_allreduce(c, sendbuff, recvbuff, count, datatype, op, (CUstream)stream);
}

PROPHET_EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                          ncclDataType_t datatype, int root, ncclComm_t comm,
                                          cudaStream_t stream)
{
    PROPHET_FORWARD(Broadcast, comm, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                                      ncclComm_t comm, cudaStream_t stream)
{
    PROPHET_FORWARD(Bcast, comm, buff, count, datatype, root, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                       ncclDataType_t datatype, ncclRedOp_t op, int root,
                                       ncclComm_t comm, cudaStream_t stream)
{
    PROPHET_FORWARD(Reduce, comm, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                          ncclDataType_t datatype, ncclComm_t comm,
                                          cudaStream_t stream)
{
    PROPHET_FORWARD(AllGather, comm, sendbuff, recvbuff, sendcount, datatype, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
                                              size_t recvcount, ncclDataType_t datatype,
                                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    PROPHET_FORWARD(ReduceScatter, comm, sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclComm_t comm,
                                         cudaStream_t stream)
{
    PROPHET_FORWARD(AlltoAll, comm, sendbuff, recvbuff, count, datatype, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                                       ncclDataType_t datatype, int root, ncclComm_t comm,
                                       cudaStream_t stream)
{
    PROPHET_FORWARD(Gather, comm, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                        ncclDataType_t datatype, int root, ncclComm_t comm,
                                        cudaStream_t stream)
{
    PROPHET_FORWARD(Scatter, comm, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype,
                                     int peer, ncclComm_t comm, cudaStream_t stream)
{
    PROPHET_FORWARD(Send, comm, sendbuff, count, datatype, peer, comm, stream);
}

PROPHET_EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype,
                                     int peer, ncclComm_t comm, cudaStream_t stream)
{
    PROPHET_FORWARD(Recv, comm, recvbuff, count, datatype, peer, comm, stream);
}
