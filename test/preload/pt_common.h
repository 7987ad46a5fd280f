/* Shared helpers of the preload tests: CUDA/NCCL set-up on the emulated cluster, ranks as forked
 * processes (like prophet-emu), one-line failures. */
#ifndef PT_COMMON_H
#define PT_COMMON_H

#include <cuda.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define PT_CU(call)                                                                                \
    do {                                                                                           \
        CUresult pt_rc = (call);                                                                   \
        if (pt_rc != CUDA_SUCCESS) {                                                               \
            fprintf(stderr, "FAIL %s:%d: %s = %d\n", __FILE__, __LINE__, #call, (int)pt_rc);       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define PT_NCCL(call)                                                                              \
    do {                                                                                           \
        ncclResult_t pt_rc = (call);                                                               \
        if (pt_rc != ncclSuccess) {                                                                \
            fprintf(stderr, "FAIL %s:%d: %s = %d\n", __FILE__, __LINE__, #call, (int)pt_rc);       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* One line 'FAIL rank R: ...' on stderr, and the caller returns 1 (a `rank` must be in scope). */
#define PT_FAIL(...)                                                                               \
    do {                                                                                           \
        fprintf(stderr, "FAIL rank %d: ", rank);                                                   \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        return 1;                                                                                  \
    } while (0)

/* cuInit, the primary context of device rank % count made current, the comm. */
static inline void pt_rank_setup(int rank, int nranks, const ncclUniqueId *id, CUcontext *ctx,
                                 ncclComm_t *comm)
{
    CUdevice dev;
    int ndev = 0;

    PT_CU(cuInit(0));
    PT_CU(cuDeviceGetCount(&ndev));
    PT_CU(cuDeviceGet(&dev, ndev > 0 ? rank % ndev : 0));
    PT_CU(cuDevicePrimaryCtxRetain(ctx, dev));
    PT_CU(cuCtxSetCurrent(*ctx));
    PT_NCCL(ncclCommInitRank(comm, nranks, *id, rank));
}

/* Runs fn(rank, nranks, id) in nranks forked processes; 0 when every one exited 0. The ranks are
 * forked before the unique id exists (it starts the emulated NCCL's bootstrap thread, which may
 * already hold a rank's hello while a later fork copies its memory) and get it through a pipe. */
static inline int pt_run_ranks(int nranks, int (*fn)(int, int, const ncclUniqueId *))
{
    ncclUniqueId id;
    int bad = 0, fds[64][2];

    if (nranks > 64)
        return 1;
    fflush(NULL);
    for (int r = 0; r < nranks; r++) {
        pid_t p;
        if (pipe(fds[r]) != 0 || (p = fork()) < 0)
            return 1;
        if (p == 0) {
            close(fds[r][1]);
            if (read(fds[r][0], &id, sizeof(id)) != (ssize_t)sizeof(id))
                _exit(1);
            close(fds[r][0]);
            exit(fn(r, nranks, &id));
        }
        close(fds[r][0]);
    }
    PT_NCCL(ncclGetUniqueId(&id));
    for (int r = 0; r < nranks; r++) {
        if (write(fds[r][1], &id, sizeof(id)) != (ssize_t)sizeof(id))
            bad++;
        close(fds[r][1]);
    }
    for (int r = 0; r < nranks; r++) {
        int st = 0;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
    }
    return bad != 0;
}

#endif
