/* The life of a communicator, in one place and calling only downward (docs: preload/README.md,
 * "Layout"). NCCL's ncclCommDestroy/commFree are the model:
 *   created   prophet_comm_created (comm_state.c), from interpose_comm.c after NCCL's init
 *   setup     prophet_comm_setup: on the first scheduled call, agreed by a vote of every rank;
 *             starts the process's runtime
 *             (CUDA driver, poller thread) once, then the comm's models, stream X, gate, log
 *   retire    prophet_comm_retire: Destroy/Finalize release the held block first, then X drains;
 *             Abort/Revoke issue it if NCCL reports no error, else drop it and stop the context
 *             ("A dropped call", below); summary, log closed, models freed. The GPU resources go
 *             when the poller has seen the last launched block complete.
 *   exit      prophet_comm_life_exit: the poller stops, every live comm releases its held block
 *             (process exit is a program-order point), summaries, logs closed. Run by init.c's
 *             atexit handler through the hook registered here. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/comm_life.h"
#include "check.h"
#include "holding/holding.h"
#include "engine/comm_state.h"
#include "real_libs/cuda_driver.h"
#include "process/init.h"
#include "schedule_log/log_bridge.h"
#include "debug_lines/log_line.h"
#include "real_libs/nccl_symbols.h"
#include "engine/readiness_poller.h"
#include "engine/release.h"
#include "config/process_config.h"
#include "engine/start_line.h"

#define PROPHET_HOSTMEM_BYTES (256 + PROPHET_PLAN_WIRE_BYTES)
#define PROPHET_VOTE_OFFSET 128 /* the setup vote's word, after the gate word */

static pthread_mutex_t prophet_runtime_lock = PTHREAD_MUTEX_INITIALIZER;
static int prophet_runtime_rc = 1; /* 1 = not tried yet */

static void prophet_comm_life_exit(void)
{
    prophet_hold_enter(); /* the thread is exiting: whatever it was doing, this is ours */
    prophet_poller_stop();
    for (prophet_comm_t *c = prophet_comm_list(); c; c = c->next_all) {
        pthread_mutex_lock(&c->lock);
        if (atomic_load(&c->alive)) {
            prophet_release_pending(c); /* process exit is a program-order point */
            prophet_poller_collect(c);  /* the poller has stopped: completed records go in now */
        }
        prophet_comm_summary(c, prophet_poller_busy_hz());
        prophet_logb_close(c);
        pthread_mutex_unlock(&c->lock);
    }
}

/* CUDA driver, poller thread, bandwidth source: once, on the first communicator. 0 ok. */
static int prophet_init_runtime(void)
{
    pthread_mutex_lock(&prophet_runtime_lock);
    if (prophet_runtime_rc != 1)
        goto out;
    prophet_init_mark_heavy();
    prophet_runtime_rc = -1;
    if (prophet_cuda_load() != 0)
        goto out;
    if (prophet_poller_start() != 0) {
        prophet_msg(PROPHET_LOG_WARN, "cannot start the poller thread; passthrough");
        goto out;
    }
    prophet_runtime_rc = 0;
out:
    pthread_mutex_unlock(&prophet_runtime_lock);
    return prophet_runtime_rc;
}

/* The holding engine's release of a held block (a host synchronisation, a call on a stream behind
 * it): a program-order point of the issuing thread. */
static void prophet_comm_life_release(prophet_comm_t *c)
{
    prophet_hold_enter();
    pthread_mutex_lock(&c->lock);
    prophet_release_pending(c);
    pthread_mutex_unlock(&c->lock);
    prophet_hold_leave();
}

void prophet_comm_life_created(ncclComm_t handle, int rank, int nranks, const ncclConfig_t *config,
                               int inherit_blocking_from_parent, ncclComm_t parent)
{
    prophet_init_set_exit_hook(prophet_comm_life_exit);
    prophet_hold_set_release(prophet_comm_life_release);
    prophet_msg_set_rank(rank); /* a split's (-1) is known at its setup */
    if (handle && prophet_active())
        prophet_start_line(rank);
    prophet_comm_created(handle, rank, nranks, config, inherit_blocking_from_parent, parent);
}

static int prophet_comm_setup_cuda(prophet_comm_t *c)
{
    void *mem = NULL;
    CUresult rc;
    const char *what;

    what = "cuCtxGetCurrent";
    PROPHET_CUCHECKGOTO(prophet_cu.CtxGetCurrent(&c->gpu.ctx), rc, fail);
    what = "a current CUDA context";
    rc = CUDA_ERROR_INVALID_CONTEXT;
    if (!c->gpu.ctx)
        goto fail;
    what = "cuStreamCreate";
    PROPHET_CUCHECKGOTO(prophet_cu.StreamCreate(&c->gpu.internal_stream, CU_STREAM_NON_BLOCKING),
                        rc, fail);
    what = "cuMemHostAlloc";
    PROPHET_CUCHECKGOTO(
        prophet_cu.MemHostAlloc(&mem, PROPHET_HOSTMEM_BYTES,
                                CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
        rc, fail);
    memset(mem, 0, PROPHET_HOSTMEM_BYTES);
    c->gpu.gate_host = mem;
    c->agree.plan_host = (char *)mem + 256;
    what = "cuMemHostGetDevicePointer";
    PROPHET_CUCHECKGOTO(prophet_cu.MemHostGetDevicePointer(&c->gpu.gate_dev, mem, 0), rc, fail);
    c->agree.plan_dev = c->gpu.gate_dev + 256;
    what = "cuEventCreate";
    PROPHET_CUCHECKGOTO(prophet_cu.EventCreate(&c->agree.plan_event, CU_EVENT_DEFAULT), rc, fail);
    PROPHET_CUCHECKGOTO(prophet_cu.EventCreate(&c->gpu.base_event, CU_EVENT_DEFAULT), rc, fail);
    /* X is idle: the base event fires at once, so base_us is its host instant */
    c->gpu.base_us = prophet_now_us();
    what = "cuEventRecord";
    PROPHET_CUCHECKGOTO(prophet_cu.EventRecord(c->gpu.base_event, c->gpu.internal_stream), rc,
                        fail);
    return 0;
fail:
    prophet_comm_fail(c, what, rc);
    return -1;
}

/* This rank's part of the setup: 0 ok; -1 failed (a WARN line said why, passthrough set). */
static int prophet_comm_setup_local(prophet_comm_t *c)
{
    prophet_learner_opts_t lo = {.learn_iters = prophet_cfg.learn_iters,
                                 .max_calls = PROPHET_MAX_CALLS};
    prophet_net_t net0 = {.alpha_us = 20.0, .bandwidth_Bps = 1.25e9, .source = PROPHET_NET_DEFAULT};

    if (c->rank < 0 && prophet_nccl.CommUserRank)
        prophet_nccl.CommUserRank(c->handle, &c->rank);
    if (c->nranks < 0 && prophet_nccl.CommCount)
        prophet_nccl.CommCount(c->handle, &c->nranks);
    prophet_msg_set_rank(c->rank);
    if (prophet_cfg.bandwidth_Bps > 0 || prophet_cfg.alpha_us >= 0) {
        if (prophet_cfg.bandwidth_Bps > 0)
            net0.bandwidth_Bps = prophet_cfg.bandwidth_Bps;
        if (prophet_cfg.alpha_us >= 0)
            net0.alpha_us = prophet_cfg.alpha_us;
        net0.source = PROPHET_NET_FIXED;
    }
    c->models.learner = prophet_learner_new(&lo);
    c->models.net = prophet_netmodel_new(&net0);
    c->models.engine = prophet_engine_new();
    c->order.seq = calloc(PROPHET_MAX_CALLS, sizeof(*c->order.seq));
    if (!c->models.learner || !c->models.net || !c->models.engine || !c->order.seq) {
        prophet_msg(PROPHET_LOG_WARN, "comm %lu: out of memory; passthrough", (unsigned long)c->id);
        c->passthrough = 1;
        return -1;
    }
    if (prophet_comm_setup_cuda(c) != 0)
        return -1;
    /* hold mode: the first agreement waits for measured readiness (schedule.c) */
    c->agree.next_agree_iter =
        prophet_cfg.gate == PROPHET_GATE_HOLD ? UINT64_MAX : prophet_cfg.learn_iters;
    return 0;
}

/* The setup vote: every rank all-reduces (min) whether its setup succeeded, on the caller's
 * stream, and waits for the result. 0 if every rank succeeded, -1 if one failed (every rank
 * passes through), -2 if this rank could not take part or read the result: it cannot know what
 * its peers do next, so the error goes to the job (prophet_comm_error) rather than a call its
 * peers do not match. Without the vote a rank whose setup failed would pass through while its
 * peers issue plan broadcasts and blocks it never joins. The vote word lies in the comm's mapped
 * host memory, or in 64 bytes of its own (never freed, like that memory) when the setup failed
 * before having it. */
static int prophet_comm_setup_vote(prophet_comm_t *c, CUstream st, int ok)
{
    volatile int32_t *word = NULL;
    CUdeviceptr dev = 0;
    ncclResult_t nrc;
    CUresult rc;
    void *mem = NULL;

    if (c->gpu.gate_host && c->gpu.gate_dev) {
        word = (volatile int32_t *)((char *)c->gpu.gate_host + PROPHET_VOTE_OFFSET);
        dev = c->gpu.gate_dev + PROPHET_VOTE_OFFSET;
    } else if ((rc = prophet_cu.MemHostAlloc(
                    &mem, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE)) !=
                   CUDA_SUCCESS ||
               (rc = prophet_cu.MemHostGetDevicePointer(&dev, mem, 0)) != CUDA_SUCCESS) {
        prophet_msg(PROPHET_LOG_WARN, "comm %lu: no memory for the setup vote (%s)",
                    (unsigned long)c->id, prophet_cuda_errstr(rc));
        prophet_comm_error(c, "taking part in the setup vote", ncclSystemError);
        return -2;
    } else {
        word = mem;
    }
    *word = ok ? 1 : 0;
    nrc = prophet_nccl.AllReduce((const void *)(uintptr_t)dev, (void *)(uintptr_t)dev, 1, ncclInt32,
                                 ncclMin, c->handle, st);
    if (nrc != ncclSuccess) {
        prophet_comm_error(c, "the setup vote", nrc);
        return -2;
    }
    /* in RELAXED capture mode, as the whole setup (prophet_comm_setup) */
    if ((rc = prophet_cu.StreamSynchronize(st)) != CUDA_SUCCESS) {
        prophet_msg(PROPHET_LOG_WARN, "comm %lu: waiting for the setup vote failed (%s)",
                    (unsigned long)c->id, prophet_cuda_errstr(rc));
        prophet_comm_error(c, "waiting for the setup vote", ncclUnhandledCudaError);
        return -2;
    }
    return *word == 1 ? 0 : -1;
}

int prophet_comm_setup(prophet_comm_t *c, CUstream st)
{
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    CUstreamCaptureMode mode;
    int ok, vote;

    if (c->setup)
        return c->setup > 0 ? 0 : -1;
    if (prophet_init_runtime() != 0) { /* no driver: cannot vote either */
        c->setup = -1;
        c->passthrough = 1;
        return -1;
    }
    /* the vote cannot wait on a capturing stream: set up at a later call (program order) */
    if (prophet_cu.StreamIsCapturing(st, &cap) == CUDA_SUCCESS &&
        cap != CU_STREAM_CAPTURE_STATUS_NONE)
        return -1;
    c->setup = -1;
    /* its allocations (pinned host memory) and the vote's wait: another thread may be capturing,
     * or this one on another stream (cuda_driver.h) */
    mode = prophet_capture_relax();
    ok = prophet_comm_setup_local(c) == 0;
    vote = prophet_comm_setup_vote(c, st, ok);
    prophet_capture_restore(mode);
    if (vote != 0) {
        if (ok && vote == -1)
            prophet_msg(PROPHET_LOG_WARN,
                        "comm %lu: setup failed on another rank; this communicator passes "
                        "through on every rank",
                        (unsigned long)c->id);
        c->passthrough = 1;
        return -1;
    }
    c->setup = 1;
    prophet_logb_open(c);
    return 0;
}

/* ---- Abort and Revoke with held calls (docs/completion-holding.md, "A dropped call") ----------
 * Without the preload the held calls would have been in flight when the job aborted. So, when NCCL
 * reports the comm healthy, they are issued first (the block on X, its gate left shut), given up
 * to PROPHET_ABORT_DRAIN_MS to complete (every rank that aborts at the same point issues the same
 * block), and their gate opens once they have: the consumers read reduced buffers. When they
 * cannot be issued (NCCL reports an error), or do not complete in time (a peer is gone: NCCL's
 * abort will cut them short), the consumers must get an error, never data: the CUDA context is
 * stopped before the gate could open (prophet_hold_block_poisoned: a trap), and the comm keeps a
 * sticky ncclSystemError that ncclCommGetAsyncError reports (prophet_comm_sticky_error). */
#define PROPHET_ABORT_DRAIN_MS 2000

typedef struct prophet_dropped {
    const prophet_comm_t *c;
    ncclResult_t err;
    int freed; /* Abort: NCCL freed the handle, the real ncclCommGetAsyncError must not see it */
} prophet_dropped_t;

static pthread_mutex_t prophet_dropped_lock = PTHREAD_MUTEX_INITIALIZER;
static prophet_dropped_t *prophet_dropped;
static size_t prophet_ndropped, prophet_dropped_cap;

static void prophet_dropped_note(const prophet_comm_t *c, ncclResult_t err, int freed)
{
    pthread_mutex_lock(&prophet_dropped_lock);
    if (prophet_ndropped == prophet_dropped_cap) {
        size_t cap = prophet_dropped_cap ? 2 * prophet_dropped_cap : 8;
        prophet_dropped_t *p = realloc(prophet_dropped, cap * sizeof(*p));
        if (p) {
            prophet_dropped = p;
            prophet_dropped_cap = cap;
        }
    }
    if (prophet_ndropped < prophet_dropped_cap)
        prophet_dropped[prophet_ndropped++] = (prophet_dropped_t){c, err, freed};
    pthread_mutex_unlock(&prophet_dropped_lock);
}

int prophet_comm_sticky_error(ncclComm_t handle, ncclResult_t *err, int *freed)
{
    prophet_comm_t *c = prophet_comm_list();
    int got = 0;

    while (c && c->handle != handle) /* the newest state of the handle (handles are reused) */
        c = c->next_all;
    *freed = 0;
    if (!c || !handle)
        return 0;
    if (atomic_load(&c->alive)) {
        /* never blocks (NCCL's own answer is lock-free; a watchdog polls it): a comm busy
         * elsewhere is asked again at the next poll */
        if (pthread_mutex_trylock(&c->lock) == 0) {
            if ((got = c->error != ncclSuccess))
                *err = c->error;
            pthread_mutex_unlock(&c->lock);
        }
        return got;
    }
    pthread_mutex_lock(&prophet_dropped_lock);
    for (size_t i = 0; i < prophet_ndropped && !got; i++)
        if ((got = prophet_dropped[i].c == c)) {
            *err = prophet_dropped[i].err;
            *freed = prophet_dropped[i].freed;
        }
    pthread_mutex_unlock(&prophet_dropped_lock);
    return got;
}

/* What the real NCCL says of c: ncclSuccess when healthy (or still initialising). */
static ncclResult_t prophet_comm_nccl_error(prophet_comm_t *c)
{
    ncclResult_t e = ncclSuccess;

    if (!prophet_nccl.CommGetAsyncError)
        return ncclSuccess;
    PROPHET_NCCLCHECK(prophet_nccl.CommGetAsyncError(c->handle, &e));
    return e == ncclInProgress ? ncclSuccess : e;
}

/* Waits, bounded, for what X runs now (the block just launched): 1 once it has completed; 0 when
 * it has not after PROPHET_ABORT_DRAIN_MS, or NCCL reports an error meanwhile. */
static int prophet_abort_drain(prophet_comm_t *c)
{
    int64_t until = prophet_now_us() + (int64_t)PROPHET_ABORT_DRAIN_MS * 1000;
    CUevent ev = prophet_comm_event_get(c);
    CUstreamCaptureMode mode;
    int done = 0;

    if (!ev || prophet_cu.EventRecord(ev, c->gpu.internal_stream) != CUDA_SUCCESS) {
        prophet_comm_event_put(c, ev);
        return 0;
    }
    mode = prophet_capture_relax(); /* cuda_driver.h */
    for (;;) {
        CUresult rc = prophet_cu.EventQuery(ev);
        if (rc == CUDA_SUCCESS) {
            done = 1;
            break;
        }
        if (rc != CUDA_ERROR_NOT_READY || prophet_comm_nccl_error(c) != ncclSuccess ||
            prophet_now_us() > until)
            break;
        nanosleep(&(struct timespec){0, 200 * 1000}, NULL);
    }
    prophet_capture_restore(mode);
    prophet_comm_event_put(c, ev);
    return done;
}

/* Abort/Revoke (`what`) with held calls: issued if they can be, else dropped, as said above.
 * nccl_done: the real Abort/Revoke already ran (the handle is not to be asked anything). */
static void prophet_comm_abort_pending(prophet_comm_t *c, const char *what, int freed,
                                       int nccl_done);

/* The same, in the comm's context: Abort often comes from another thread than the calls
 * (PyTorch's watchdog), one with no current context, where the preload's events could not be
 * made. The thread's context is put back after. */
static void prophet_comm_abort_pending_in_ctx(prophet_comm_t *c, const char *what, int freed,
                                              int nccl_done)
{
    CUcontext prev = NULL;
    int switched = c->gpu.ctx && prophet_cu.CtxGetCurrent(&prev) == CUDA_SUCCESS &&
                   prev != c->gpu.ctx && prophet_cu.CtxSetCurrent(c->gpu.ctx) == CUDA_SUCCESS;

    prophet_comm_abort_pending(c, what, freed, nccl_done);
    if (switched)
        prophet_cu.CtxSetCurrent(prev);
}

static void prophet_comm_abort_pending(prophet_comm_t *c, const char *what, int freed,
                                       int nccl_done)
{
    uint32_t n = c->blocks.pending.n;
    ncclResult_t nerr;
    int gate_left = 0;

    if (n == 0)
        return;
    nerr = nccl_done ? ncclSystemError : prophet_comm_nccl_error(c);
    if (nerr == ncclSuccess && c->error == ncclSuccess) {
        prophet_release_pending_shut(c, &gate_left);
        if (!gate_left) {
            /* the fallback ran them on their stream (its gate handled there), or NCCL refused
             * them (the context stopped there, the comm has NCCL's error) */
            if (c->error != ncclSuccess)
                prophet_dropped_note(c, c->error, freed);
            return;
        }
        if (prophet_abort_drain(c)) {
            prophet_msg(PROPHET_LOG_INFO,
                        "comm %lu: %s: the %u held all-reduce(s) were issued first and completed",
                        (unsigned long)c->id, what, n);
            prophet_release_open(c, c->gpu.gate_gen);
            return;
        }
        prophet_msg(PROPHET_LOG_WARN,
                    "comm %lu: %s: %u held all-reduce(s) were issued but did not complete within "
                    "%d ms (ncclCommGetAsyncError: '%s'); their results cannot be trusted",
                    (unsigned long)c->id, what, n, PROPHET_ABORT_DRAIN_MS,
                    prophet_nccl_errstr(prophet_comm_nccl_error(c)));
    } else {
        for (uint32_t i = 0; i < n; i++)
            prophet_comm_event_put(c, c->blocks.pending.m[i].ready);
        c->blocks.pending.n = 0;
        c->blocks.pending.bytes = 0;
        c->gpu.gate_gen++;
        prophet_msg(PROPHET_LOG_WARN,
                    "comm %lu: %s: %u held all-reduce(s) dropped: the communicator is in error "
                    "('%s'), they cannot be issued",
                    (unsigned long)c->id, what, n,
                    prophet_nccl_errstr(nerr != ncclSuccess ? nerr : c->error));
    }
    /* the work queued behind them must get an error, never their un-reduced buffers */
    prophet_hold_block_poisoned(c, c->gpu.gate_gen);
    if (c->error == ncclSuccess)
        c->error = ncclSystemError;
    prophet_dropped_note(c, c->error, freed);
}

/* The end of a retirement, comm lock held: marks the comm dead, its summary and log. */
static void prophet_comm_retired(prophet_comm_t *c)
{
    atomic_store(&c->alive, 0);
    prophet_comm_summary(c, prophet_poller_busy_hz());
    prophet_logb_close(c);
    /* the learner, engine and net model are not needed any more; X and the events are released
     * by the poller (prophet_comm_gpu_release) once every launched block has completed */
    prophet_comm_free_models(c);
}

/* Takes the comm lock within PROPHET_ABORT_LOCK_MS: 0, or -1 when another thread kept it (it
 * waits inside NCCL, on a dead peer, for what only an abort ends). */
#define PROPHET_ABORT_LOCK_MS 1000
static int prophet_comm_lock_bounded(prophet_comm_t *c)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += PROPHET_ABORT_LOCK_MS / 1000;
    until.tv_nsec += (long)(PROPHET_ABORT_LOCK_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    return pthread_mutex_timedlock(&c->lock, &until) == 0 ? 0 : -1;
}

int prophet_comm_retire(prophet_comm_t *c, int how)
{
    CUstream x = NULL;
    int rc = 0;

    prophet_hold_enter();
    if (how != PROPHET_RETIRE_DESTROY) {
        if (prophet_comm_lock_bounded(c) != 0) {
            prophet_msg(PROPHET_LOG_WARN,
                        "comm %lu: %s: another thread has held the communicator for %d ms (inside "
                        "NCCL, waiting for a peer): NCCL's %s runs first, then what the preload "
                        "holds is dropped",
                        (unsigned long)c->id,
                        how == PROPHET_RETIRE_ABORT ? "ncclCommAbort" : "ncclCommRevoke",
                        PROPHET_ABORT_LOCK_MS, how == PROPHET_RETIRE_ABORT ? "abort" : "revoke");
            prophet_hold_leave();
            return PROPHET_RETIRE_BUSY;
        }
    } else {
        pthread_mutex_lock(&c->lock);
    }
    if (!atomic_load(&c->alive))
        goto out;
    if (how == PROPHET_RETIRE_DESTROY) {
        prophet_release_pending(c);
        x = c->gpu.internal_stream;
    } else {
        prophet_comm_abort_pending_in_ctx(
            c, how == PROPHET_RETIRE_ABORT ? "ncclCommAbort" : "ncclCommRevoke",
            how == PROPHET_RETIRE_ABORT, 0);
        prophet_comm_retired(c);
    }
out:
    pthread_mutex_unlock(&c->lock);
    if (x) {
        /* destroy/finalize is a host-blocking point anyway: let X finish before NCCL tears the
         * comm down (X waits only for ready events of calls already made). Not under the comm
         * lock: a block that never ends (a dead peer) must leave a watchdog's Abort free to run */
        CUstreamCaptureMode mode = prophet_capture_relax(); /* cuda_driver.h */
        prophet_cu.StreamSynchronize(x);
        prophet_capture_restore(mode);
        pthread_mutex_lock(&c->lock);
        if (atomic_load(&c->alive)) {
            prophet_poller_collect(c); /* completed records into the log before it closes */
            prophet_comm_retired(c);
        }
        pthread_mutex_unlock(&c->lock);
    }
    prophet_hold_leave();
    return rc;
}

void prophet_comm_retire_after(prophet_comm_t *c, int how)
{
    prophet_hold_enter();
    pthread_mutex_lock(&c->lock);
    if (atomic_load(&c->alive)) {
        prophet_comm_abort_pending_in_ctx(
            c, how == PROPHET_RETIRE_ABORT ? "ncclCommAbort" : "ncclCommRevoke",
            how == PROPHET_RETIRE_ABORT, 1);
        prophet_comm_retired(c);
    }
    pthread_mutex_unlock(&c->lock);
    prophet_hold_leave();
}
