/* A tiny stand-in for a static libnccl.a: NCCL's entry points, doing nothing. */
#include <nccl.h>

ncclResult_t ncclGetVersion(int *version)
{
    *version = 22809;
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream)
{
    (void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)op, (void)comm, (void)stream;
    return ncclSuccess;
}
