/* A small emulated cluster for the fault tests: N rank processes forked from a parent that has no
 * thread yet, the unique ids made after the fork, and helpers for exact all-reduce data. */
#ifndef FAULT_CLUSTER_H
#define FAULT_CLUSTER_H

#include <cuda.h>
#include <nccl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "emu_nccl_hooks.h"

#define FAULT_MAX_IDS 4

/* One rank: `ids` holds nids unique ids made by the parent. Returns the rank's exit code. */
typedef int (*fault_rank_fn)(int rank, int nranks, const ncclUniqueId *ids, void *arg);

/* Forks nranks processes (before the parent makes any thread), then makes nids unique ids and
 * hands them over, and waits. A rank still running after timeout_s is killed: one line naming it.
 * Returns 0 when every rank exited 0. */
int fault_run_ranks(int nranks, int nids, double timeout_s, fault_rank_fn fn, void *arg);

/* cuInit, primary context of device 0 made current, a non-blocking stream (if s is not NULL). */
int fault_cuda_setup(int rank, CUcontext *ctx, CUstream *s);

double fault_now_s(void);

/* Element i of buffer k on rank r, a small integer so that fp32 sums are exact. */
static inline float fault_value(int r, int k, int iter, size_t i)
{
    return (float)((int)((i * 7 + (size_t)k * 3 + (size_t)iter * 5 + (size_t)r) % 17) - 8);
}

static inline float fault_sum(int nranks, int k, int iter, size_t i)
{
    float s = 0;

    for (int r = 0; r < nranks; r++)
        s += fault_value(r, k, iter, i);
    return s;
}

/* Writes buffer k of iteration iter (host staging `h` of n floats) to device memory d. */
int fault_fill(int rank, int k, int iter, CUdeviceptr d, float *h, size_t n);

/* Number of elements of d that differ from the expected sum; the first one is printed. */
size_t fault_check(int rank, int nranks, int k, int iter, CUdeviceptr d, float *h, size_t n);

/* Number of elements of d that still hold this rank's input (the all-reduce has not run). */
size_t fault_unreduced(int rank, int k, int iter, CUdeviceptr d, float *h, size_t n);

#define FAULT_CU(rank, call)                                                                       \
    do {                                                                                           \
        CUresult fault_rc_ = (call);                                                               \
        if (fault_rc_ != CUDA_SUCCESS) {                                                           \
            fprintf(stderr, "fault: rank %d: %s failed: %d (%s:%d)\n", (rank), #call,              \
                    (int)fault_rc_, __FILE__, __LINE__);                                           \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#define FAULT_NCCL(rank, call)                                                                     \
    do {                                                                                           \
        ncclResult_t fault_nr_ = (call);                                                           \
        if (fault_nr_ != ncclSuccess) {                                                            \
            fprintf(stderr, "fault: rank %d: %s failed: %s (%s:%d)\n", (rank), #call,              \
                    ncclGetErrorString(fault_nr_), __FILE__, __LINE__);                            \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#endif
