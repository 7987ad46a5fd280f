/* prophet-doctor's fixtures: one process that makes one all-reduce on a one-rank communicator,
 * reaching NCCL in one of the ways real frameworks do.
 *   linked   NCCL is a DT_NEEDED shared library (interposable)
 *   dlopen   dlopen("libnccl.so.2", RTLD_LOCAL) and calls through dlsym() on that handle
 *   static   NCCL linked statically into a framework library (libfixture_framework.so)
 *   none     no NCCL at all
 * The mode is chosen at build time (FIXTURE_MODE). Exit status 0 when the all-reduce worked. With
 * an argument (linked, dlopen), it then prints "ready" and waits to be killed (for --pid). */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <unistd.h>

#define FIXTURE_LINKED 1
#define FIXTURE_DLOPEN 2
#define FIXTURE_STATIC 3
#define FIXTURE_NONE 4

#if FIXTURE_MODE == FIXTURE_STATIC
int fixture_framework_step(void); /* libfixture_framework.so */
int main(void)
{
    return fixture_framework_step();
}
#elif FIXTURE_MODE == FIXTURE_NONE
int main(void)
{
    printf("no NCCL here\n");
    return 0;
}
#else
typedef ncclResult_t (*init_all_t)(ncclComm_t *, int, const int *);
typedef ncclResult_t (*all_reduce_t)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);
typedef ncclResult_t (*destroy_t)(ncclComm_t);

int main(int argc, char **argv)
{
    (void)argv;
    init_all_t init_all;
    all_reduce_t all_reduce;
    destroy_t destroy;
#if FIXTURE_MODE == FIXTURE_DLOPEN
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "fixture: %s\n", dlerror());
        return 1;
    }
    init_all = (init_all_t)dlsym(h, "ncclCommInitAll");
    all_reduce = (all_reduce_t)dlsym(h, "ncclAllReduce");
    destroy = (destroy_t)dlsym(h, "ncclCommDestroy");
#else
    init_all = ncclCommInitAll;
    all_reduce = ncclAllReduce;
    destroy = ncclCommDestroy;
#endif
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
    if (!init_all || !all_reduce || !destroy || init_all(&comm, 1, devs) != ncclSuccess)
        return 1;
    for (int i = 0; i < 4; i++)
        if (all_reduce((void *)buf, (void *)buf, 1024, ncclFloat32, ncclSum, comm,
                       (cudaStream_t)s) != ncclSuccess)
            return 1;
    if (cuStreamSynchronize(s) || destroy(comm) != ncclSuccess)
        return 1;
    printf("fixture: 4 all-reduces done\n");
    if (argc > 1) {
        printf("ready\n");
        fflush(stdout);
        pause();
    }
    return 0;
}
#endif
