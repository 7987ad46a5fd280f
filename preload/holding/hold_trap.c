/* A block that cannot run: the context traps before its gate opens (docs/completion-holding.md,
 * "A dropped call"; prophet_hold_block_poisoned in holding.h). A PTX kernel whose only instruction
 * is `trap` makes its context fail for good: measured on an H100 (driver 580), the work queued
 * behind it, on its stream and on every other, never runs (a gate written behind it stays shut, a
 * consumer behind that gate never runs) and every later call but cuCtxGetCurrent returns
 * CUDA_ERROR_LAUNCH_FAILED at once, synchronisations included. The module is JIT-compiled from
 * PTX (ISA 6.0, sm_50: any GPU the driver runs), once per context, at the first block that needs
 * it: nothing is loaded in a run where no call is dropped. */
#include <pthread.h>

#include "comm.h"
#include "holding/holding.h"
#include "real_libs/cuda_driver.h"
#include "real_libs/dlsym_real.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h"

static const char hold_trap_ptx[] = ".version 6.0\n"
                                    ".target sm_50\n"
                                    ".address_size 64\n"
                                    ".visible .entry prophet_trap()\n"
                                    "{\n"
                                    "\ttrap;\n"
                                    "\tret;\n"
                                    "}\n";

#define HOLD_TRAP_CTXS 16

static pthread_mutex_t hold_trap_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct hold_trap {
    CUcontext ctx;
    CUfunction fn;
} hold_trap_t;
static hold_trap_t hold_traps[HOLD_TRAP_CTXS];
static int hold_ntraps;

/* The driver's own entry points the trap needs (the wrappers' cuLaunchKernel is not wanted: this
 * is the preload's own work). */
typedef struct hold_trap_api {
    __typeof__(&cuModuleLoadData) load;
    __typeof__(&cuModuleGetFunction) get;
    __typeof__(&cuLaunchKernel) launch;
    __typeof__(&cuCtxPushCurrent) push;
    __typeof__(&cuCtxPopCurrent) pop;
} hold_trap_api_t;

static int hold_trap_resolve(hold_trap_api_t *a)
{
    void *h = prophet_cuda_handle();

    if (!h)
        return -1;
    *(void **)&a->load = prophet_dlsym_real(h, "cuModuleLoadData");
    *(void **)&a->get = prophet_dlsym_real(h, "cuModuleGetFunction");
    *(void **)&a->launch = prophet_dlsym_real(h, "cuLaunchKernel");
    *(void **)&a->push = prophet_dlsym_real(h, "cuCtxPushCurrent_v2");
    *(void **)&a->pop = prophet_dlsym_real(h, "cuCtxPopCurrent_v2");
    return a->load && a->get && a->launch && a->push && a->pop ? 0 : -1;
}

/* The trap kernel of the current context ctx, loaded at its first use. */
static CUfunction hold_trap_fn(const hold_trap_api_t *a, CUcontext ctx, CUresult *rc)
{
    CUfunction fn = NULL;
    CUmodule mod = NULL;

    pthread_mutex_lock(&hold_trap_lock);
    for (int i = 0; i < hold_ntraps && !fn; i++)
        if (hold_traps[i].ctx == ctx)
            fn = hold_traps[i].fn;
    if (!fn && (*rc = a->load(&mod, hold_trap_ptx)) == CUDA_SUCCESS &&
        (*rc = a->get(&fn, mod, "prophet_trap")) == CUDA_SUCCESS && hold_ntraps < HOLD_TRAP_CTXS)
        hold_traps[hold_ntraps++] = (hold_trap_t){ctx, fn};
    pthread_mutex_unlock(&hold_trap_lock);
    return fn;
}

/* Launches the trap on st and writes gen into c's gate word behind it. */
static CUresult hold_trap_on(const hold_trap_api_t *a, CUfunction fn, CUstream st,
                             prophet_comm_t *c, uint32_t gen)
{
    CUresult rc = a->launch(fn, 1, 1, 1, 1, 1, 1, 0, st, NULL, NULL);

    if (rc == CUDA_SUCCESS) /* never runs; if it could not even be queued, the gate stays shut */
        prophet_cu.StreamWriteValue32(st, c->gpu.gate_dev, gen, CU_STREAM_WRITE_VALUE_DEFAULT);
    return rc;
}

int prophet_hold_block_poisoned(prophet_comm_t *c, uint32_t gen)
{
    hold_trap_api_t a;
    CUfunction fn = NULL;
    CUstream fresh = NULL;
    CUcontext prev = NULL;
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    int pushed = 0;

    prophet_hold_enter();
    if (hold_trap_resolve(&a) == 0 && c->gpu.ctx && c->gpu.gate_dev &&
        (rc = a.push(c->gpu.ctx)) == CUDA_SUCCESS) {
        pushed = 1;
        fn = hold_trap_fn(&a, c->gpu.ctx, &rc);
    }
    /* on X, behind what it runs (a block NCCL is still running ends at the real Abort first);
     * else on a stream of its own */
    if (fn &&
        (!c->gpu.internal_stream ||
         (rc = hold_trap_on(&a, fn, c->gpu.internal_stream, c, gen)) != CUDA_SUCCESS) &&
        (rc = prophet_cu.StreamCreate(&fresh, CU_STREAM_NON_BLOCKING)) == CUDA_SUCCESS)
        rc = hold_trap_on(&a, fn, fresh, c, gen); /* the stream is left to the dying context */
    if (pushed)
        a.pop(&prev);
    prophet_hold_leave();
    if (rc == CUDA_SUCCESS) {
        prophet_msg(PROPHET_LOG_WARN,
                    "comm %lu: block generation %u cannot be known to have run: the CUDA context "
                    "is stopped (a trap: CUDA_ERROR_LAUNCH_FAILED from now on) so that no work "
                    "queued behind it reads un-reduced buffers",
                    (unsigned long)c->id, gen);
        prophet_hold_block_released(c, gen, PROPHET_HOLD_ON_STREAM);
        return 0;
    }
    prophet_msg(PROPHET_LOG_WARN,
                "comm %lu: block generation %u cannot be known to have run, and the CUDA context "
                "cannot be stopped (%s): its gate opens; work queued behind it may read "
                "un-reduced buffers",
                (unsigned long)c->id, gen, prophet_cuda_errstr(rc));
    prophet_hold_block_released(c, gen, PROPHET_HOLD_DROPPED);
    return -1;
}
