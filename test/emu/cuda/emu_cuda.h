/* Extensions of the emulated CUDA driver (build/lib/emu/libcuda.so.1) for emulated compute and
 * tests. Not part of cuda.h; a real driver does not have these symbols. Include after cuda.h. */
#ifndef EMU_CUDA_H
#define EMU_CUDA_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An emulated kernel: runs fn(arg) (fn may be NULL) on the stream's thread, in stream order, and
 * takes at least duration_ns in total (the rest is slept, never spun). */
CUresult emuLaunchKernel(CUstream s, uint64_t duration_ns, void (*fn)(void *), void *arg);

/* Operations of the stream that have finished executing (captured ops are not counted);
 * 0 for an invalid handle. */
uint64_t emuStreamOpsExecuted(CUstream s);
/* Operations queued on the stream that have not finished yet; 0 for an invalid handle. */
uint64_t emuStreamOpsPending(CUstream s);

/* The clock of event timestamps: CLOCK_MONOTONIC in nanoseconds. */
uint64_t emuNowNs(void);
/* When the event's most recent record fired (emuNowNs clock). CUDA_ERROR_INVALID_HANDLE when the
 * event was never recorded or is unknown, CUDA_ERROR_NOT_READY while it is pending. */
CUresult emuEventTimestampNs(CUevent e, uint64_t *ns);

/* Store value at addr (release) and wake stream waiters at once. A plain host store works too,
 * but is only seen at the next poll (<= EMU_CUDA_POLL_US, default 200 us). */
void emuWriteValue32(uint32_t *addr, uint32_t value);

/* Operations recorded in a graph made by stream capture. */
CUresult emuGraphNumOps(CUgraph g, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
