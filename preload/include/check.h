/* Checking and propagating the results of the CUDA driver's and NCCL's calls, NCCL's own pattern
 * (its src/include/checks.h): XCHECK(call) returns the failed result from the calling function;
 * XCHECKGOTO(call, res, label) keeps it in res and jumps to the function's cleanup (goto label).
 * Success is CUDA_SUCCESS and ncclSuccess only: the preload's own NCCL calls are made on blocking
 * communicators (a non-blocking one passes through), where ncclInProgress is no success. A
 * function whose failure needs its own path (a fallback, a poison, a second try) tests the result
 * itself. */
#ifndef PROPHET_CHECK_H
#define PROPHET_CHECK_H

#include <cuda.h>
#include <nccl.h>

#define PROPHET_CUCHECK(call)                                                                      \
    do {                                                                                           \
        CUresult res_ = (call);                                                                    \
        if (res_ != CUDA_SUCCESS)                                                                  \
            return res_;                                                                           \
    } while (0)

#define PROPHET_CUCHECKGOTO(call, res, label)                                                      \
    do {                                                                                           \
        if (((res) = (call)) != CUDA_SUCCESS)                                                      \
            goto label;                                                                            \
    } while (0)

#define PROPHET_NCCLCHECK(call)                                                                    \
    do {                                                                                           \
        ncclResult_t res_ = (call);                                                                \
        if (res_ != ncclSuccess)                                                                   \
            return res_;                                                                           \
    } while (0)

#define PROPHET_NCCLCHECKGOTO(call, res, label)                                                    \
    do {                                                                                           \
        if (((res) = (call)) != ncclSuccess)                                                       \
            goto label;                                                                            \
    } while (0)

#endif
