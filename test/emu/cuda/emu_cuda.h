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

/* An emulated kernel: runs fn(arg) (fn may be NULL) on the stream's thread, in stream order, then
 * sleeps (never spins) duration_ns more: the kernel ends at least duration_ns after fn returned,
 * so anything fn stamps lies at least duration_ns before the kernel's end. */
CUresult emuLaunchKernel(CUstream s, uint64_t duration_ns, void (*fn)(void *), void *arg);

/* Fault injection (EMU_FAULT, emu_fault.c): 1 if this call of entry point `name` is to fail,
 * with *code set to the requested error when EMU_FAULT names one (left as is otherwise). */
int emuFaultHit(const char *name, int *code);
/* Replaces the fault list (EMU_FAULT's syntax) from now on, in this process; the counts start at
 * this call ("cuStreamWriteValue32:1": the next call fails). "" disarms every fault. */
void emuFaultArm(const char *spec);
/* fn(name, arg) runs in the failing call's thread right after each injected fault (after its
 * emu-fault line; no lock of the emulator held); NULL removes it. */
void emuFaultSetHook(void (*fn)(const char *name, void *arg), void *arg);

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

/* ---- emulated modules: what cuModuleLoadData accepts ------------------------------------
 * A real module image is a cubin/fatbin; the emulated driver takes an emuModuleImage instead (its
 * first field is EMU_MODULE_MAGIC). cuModuleGetFunction(&f, mod, name) finds a kernel by name, and
 * cuLaunchKernel(f, ..., stream, kernelParams, NULL) copies the nparams values (param_size[i]
 * bytes from kernelParams[i]) at launch, as a real driver does, then runs fn(params) on the
 * stream's thread, in stream order; params[i] points at the copy of parameter i. The grid, block
 * and shared-memory arguments are checked (non-zero) and otherwise ignored: a kernel "runs" once,
 * on the host, and lasts as long as fn does (sleep in fn to model a duration). */
#define EMU_MODULE_MAGIC 0x31444f4d554d45ull /* "EMUMOD1" */
#define EMU_KERNEL_MAX_PARAMS 8

struct emuKernelDef {
    const char *name;
    void (*fn)(void **params);
    unsigned nparams;
    size_t param_size[EMU_KERNEL_MAX_PARAMS];
};

struct emuModuleImage {
    uint64_t magic; /* EMU_MODULE_MAGIC */
    size_t nkernels;
    const struct emuKernelDef *kernels;
};

/* ---- cuGetProcAddress accounting ---------------------------------------------------------
 * Every successful cuGetProcAddress/_v2 lookup is counted per symbol name and per stream flavour
 * (flags & 3: 0 DEFAULT, 1 LEGACY_STREAM, 2 PER_THREAD_DEFAULT_STREAM). With
 * EMU_CUDA_PROC_DUMP=path set at cuInit, the counts are appended to path at exit, one line "name
 * flags count" each. */
uint64_t emuProcLookups(const char *symbol, cuuint64_t flags);
/* Appends the counts to EMU_CUDA_PROC_DUMP now (for processes that leave with _exit). */
void emuProcDump(void);

/* Operations recorded in a graph made by stream capture. */
CUresult emuGraphNumOps(CUgraph g, size_t *n);
/* How many cuStreamWaitEvent calls with CU_EVENT_WAIT_EXTERNAL (record = 0) or event records with
 * CU_EVENT_RECORD_EXTERNAL (record = 1) this process's driver accepted. */
uint64_t emuEventExternalOps(int record);

#ifdef __cplusplus
}
#endif
#endif
