/* A framework library that links libnccl.so.2 (DT_NEEDED) and calls it by name, as PyTorch's
 * libtorch_cuda.so does: the exit check's fixture (fixture_exit.c) loads it in several ways. */
#include <cuda.h>
#include <nccl.h>

/* One all-reduce on a one-rank communicator; 0 when it worked. */
__attribute__((visibility("default"))) int fixture_nccl_user_step(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUdeviceptr buf;
    ncclComm_t comm;
    int devs[1] = {0};

    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        cuMemAlloc(&buf, 4096))
        return 1;
    if (ncclCommInitAll(&comm, 1, devs) != ncclSuccess)
        return 1;
    if (ncclAllReduce((void *)buf, (void *)buf, 1024, ncclFloat32, ncclSum, comm,
                      (cudaStream_t)s) != ncclSuccess)
        return 1;
    if (cuStreamSynchronize(s) || ncclCommDestroy(comm) != ncclSuccess)
        return 1;
    return 0;
}
