/* One rank process: CUDA and NCCL set-up, the forward/backward iteration loop, the emulated
 * kernels that write and check gradients, and the helpers shared by the framework modes. */
#include "rank.h"
#include "disturb.h"

#include "emu_nccl_hooks.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm_calls.h"
#include "emu_cuda.h"
#include "extras.h"
#include "gpu.h"
#include "tp.h"

#define EMU_TIMER_SLACK_NS 1000UL

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int emu_cu(struct emu_rank *r, CUresult rc, const char *what)
{
    const char *s = NULL;

    if (rc == CUDA_SUCCESS)
        return 0;
    s = emu_gpu->error_string(rc);
    fprintf(stderr, "prophet-emu: rank %d: %s failed: %s (%d)\n", r->rank, what, s, (int)rc);
    return -1;
}

int emu_nccl(struct emu_rank *r, ncclResult_t rc, const char *what)
{
    const char *last = NULL;

    if (rc == ncclSuccess)
        return 0;
    if (r->comm)
        last = ncclGetLastError(r->comm);
    fprintf(stderr, "prophet-emu: rank %d: %s failed: %s%s%s\n", r->rank, what,
            ncclGetErrorString(rc), last && *last ? ": " : "", last ? last : "");
    return -1;
}

void emu_rank_record_error(struct emu_rank *r, const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&r->err_lock);
    if (r->nerr++ == 0) {
        va_start(ap, fmt);
        vsnprintf(r->first_err, sizeof(r->first_err), fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&r->err_lock);
}

static int take_error(struct emu_rank *r)
{
    int bad;

    pthread_mutex_lock(&r->err_lock);
    bad = r->nerr != 0;
    if (bad)
        fprintf(stderr, "prophet-emu: rank %d: %s\n", r->rank, r->first_err);
    pthread_mutex_unlock(&r->err_lock);
    return bad ? -1 : 0;
}

int emu_async_error(struct emu_rank *r)
{
    ncclResult_t st = ncclSuccess;

    if (emu_nccl(r, ncclCommGetAsyncError(r->comm, &st), "ncclCommGetAsyncError"))
        return -1;
    if (st == ncclSuccess || st == ncclInProgress)
        return 0;
    return emu_nccl(r, st, "NCCL communicator (asynchronous error)");
}

int emu_sync(struct emu_rank *r, CUstream s)
{
    if (emu_cu(r, emu_gpu->stream_sync(s), "cuStreamSynchronize"))
        return -1;
    return emu_async_error(r);
}

uint64_t emu_threshold_bytes(const struct emu_rank *r, double mib)
{
    double b = mib * 1024.0 * 1024.0 * r->opt->elements_scale;

    return b < 4.0 ? 4 : (uint64_t)b;
}

int emu_grad_dropped(const struct emu_rank *r, int iter, size_t g)
{
    return r->opt->change_at_iter >= 0 && iter >= r->opt->change_at_iter && g == r->ngrad / 2;
}

static uint64_t mono_ns(void);

long long emu_held(struct emu_rank *r)
{
    if (!atomic_load(&r->ar_based))
        return 0;
    return emu_nccl_held(r->comm, atomic_load(&r->ar_issued), r->ar_base_issued,
                         r->ar_base_reached);
}

/* After each all-reduce returned: the first one sets the base (an interposer's set-up
 * all-reduces happen inside it); later ones update the held statistics. */
static void note_held(struct emu_rank *r)
{
    long long h;

    if (!atomic_load(&r->ar_based)) {
        r->ar_base_issued = atomic_load(&r->ar_issued);
        r->ar_base_reached = emu_nccl_reached(r->comm);
        atomic_store(&r->ar_based, 1);
        return;
    }
    h = emu_held(r);
    if (h > r->held_max)
        r->held_max = h;
    if (h > 0)
        r->held_after++;
    if (h > r->held_iter_max)
        r->held_iter_max = h;
    if (atomic_load(&r->faults_seen) && h > r->held_after_fault_max)
        r->held_after_fault_max = h;
}

/* EMU_FAULT: runs in the failing call's thread right after an injected fault. What the interposer
 * held then, from prophet-emu's own count and the emulated NCCL's (emu_held): when the job's call
 * that hit the fault began, and at most at once in this iteration (before it) and the previous
 * one. A fault test reads this line to show the fault struck while calls were held. */
static void fault_hook(const char *name, void *arg)
{
    struct emu_rank *r = arg;

    fprintf(stderr,
            "prophet-emu: rank %d: injected fault (%s) in iteration %d: %lld all-reduce(s) held by "
            "the interposer when the call began; held at most %lld at once in this iteration, "
            "%lld in the previous one\n",
            r->rank, name, r->iter, atomic_load(&r->held_call_start),
            atomic_load(&r->held_iter_max), atomic_load(&r->held_prev_iter_max));
    atomic_store(&r->faults_seen, 1);
}

void emu_maybe_change(struct emu_rank *r, size_t g)
{
    if (r->opt->change_at_iter < 0 || r->iter != r->opt->change_at_iter || g != r->ngrad / 2)
        return;
    fprintf(stderr,
            "prophet-emu: rank %d: --change-at-iter: gradient %zu dropped from iteration %d on; "
            "%lld all-reduce(s) held by the interposer\n",
            r->rank, g, r->iter, emu_held(r));
}

void emu_maybe_kill(struct emu_rank *r, size_t g)
{
    int stop = r->opt->kill_signal == SIGSTOP;

    if (r->rank != r->opt->kill_rank || r->iter != r->opt->kill_at_iter || g != r->ngrad / 2)
        return;
    fprintf(stderr,
            "prophet-emu: rank %d: --kill-rank: %s in iteration %d after gradient %zu; %lld "
            "all-reduce(s) held by the interposer\n",
            r->rank, stop ? "SIGSTOP" : "SIGKILL", r->iter, g, emu_held(r));
    fflush(stderr);
    atomic_store(&r->sh->kill_ns, mono_ns());
    raise(r->opt->kill_signal);
}

/* --jitter-us: a random host delay in [0, J] us before an all-reduce call. */
static void jitter(struct emu_rank *r)
{
    uint64_t x = r->jitter_state;

    if (r->opt->jitter_us <= 0)
        return;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->jitter_state = x;
    x *= 2685821657736338717ull;
    usleep((useconds_t)((double)(x >> 11) / 9007199254740992.0 * r->opt->jitter_us));
}

/* One ncclAllReduce(sum) on the gradients' communicator, counted for what an interposer holds. */
static int allreduce_counted(struct emu_rank *r, CUdeviceptr send, CUdeviceptr recv, size_t count,
                             ncclDataType_t dtype, CUstream s)
{
    ncclResult_t rc;

    if (r->fault_watch)
        atomic_store(&r->held_call_start, emu_held(r));
    atomic_fetch_add(&r->ar_issued, 1);
    rc = ncclAllReduce((const void *)send, (void *)recv, count, dtype, ncclSum, r->comm, s);
    note_held(r);
    return emu_nccl(r, rc, "ncclAllReduce");
}

int emu_allreduce_other(struct emu_rank *r, int iter, ncclComm_t comm, CUdeviceptr buf,
                        size_t count, CUstream s)
{
    jitter(r);
    r->calls[iter]++;
    r->bytes[iter] += count * sizeof(float);
    return emu_nccl(
        r, ncclAllReduce((const void *)buf, (void *)buf, count, ncclFloat32, ncclSum, comm, s),
        "ncclAllReduce (second communicator)");
}

int emu_allreduce(struct emu_rank *r, int iter, CUdeviceptr send, CUdeviceptr recv, size_t count,
                  CUstream s)
{
    int mismatch = r->rank == r->opt->mismatch_rank && iter == 1 && r->calls[iter] == 0;
    ncclResult_t rc;

    jitter(r);
    r->calls[iter]++;
    r->bytes[iter] += count * sizeof(float);
    if (mismatch) {
        r->bc_issued++;
        rc = ncclBroadcast((const void *)send, (void *)recv, count, ncclFloat32, 0, r->comm, s);
        return emu_nccl(r, rc, "ncclBroadcast (--mismatch-rank)");
    }
    return allreduce_counted(r, send, recv, count, ncclFloat32, s);
}

int emu_allreduce_job(struct emu_rank *r, CUdeviceptr buf, size_t count, ncclDataType_t dtype,
                      CUstream s)
{
    return allreduce_counted(r, buf, buf, count, dtype, s);
}

/* ---- gradient contents ------------------------------------------------------------------ */

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until_ns(uint64_t t)
{
    struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull),
                          .tv_nsec = (long)(t % 1000000000ull)};

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Every compute kernel is launched with duration 0 and paces itself on a virtual clock kept by
 * the compute stream's thread: a kernel that follows another without a wait in between ends
 * exactly `ns` after the previous one's modelled end, so the emulation's own latency (thread
 * wake-ups, timer overshoot) does not accumulate and gradients become ready at ready_us after
 * backward start. After one stream wait the kernel starts when both the previous kernel's modelled
 * end and the awaited event's firing have passed; after several waits or at an iteration start
 * (the host synchronised) it starts now. */
static void paced_kernel(void *p)
{
    struct emu_kernel_arg *a = p;
    struct emu_rank *r = a->r;
    uint64_t now = mono_ns(), fired = 0, base;

    if (!a->restart && r->pace_end_ns && r->pace_end_ns <= now)
        base = r->pace_end_ns; /* back to back: absorb the emulation's latency */
    else if (a->restart && a->after && r->pace_end_ns &&
             emuEventTimestampNs(a->after, &fired) == CUDA_SUCCESS && fired <= now)
        base = fired > r->pace_end_ns ? fired : r->pace_end_ns; /* started when both were done */
    else
        base = now;

    r->pace_end_ns = base + a->ns;
    if (r->pace_end_ns > now)
        sleep_until_ns(r->pace_end_ns);
    if (a->work)
        a->work(a);
    atomic_store(&r->gpu_iter, a->host_iter);
}

/* Kernel "scale": d[i] *= f for i < n. */
static void scale_kernel(void **params)
{
    float *d = *(float **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    float f = *(float *)params[2];

    for (uint64_t i = 0; i < n; i++)
        d[i] *= f;
}

/* Kernel "fill_f32": d[i] = base + (i mod EMU_FILL_PERIOD) for i < n. */
static void fill_f32_kernel(void **params)
{
    float *d = *(float **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    float base = *(float *)params[2];

    for (uint64_t i = 0; i < n; i++)
        d[i] = base + (float)(i % EMU_FILL_PERIOD);
}

/* Kernel "fill_i64": the same in int64. */
static void fill_i64_kernel(void **params)
{
    int64_t *d = *(int64_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    int64_t base = *(int64_t *)params[2];

    for (uint64_t i = 0; i < n; i++)
        d[i] = base + (int64_t)(i % EMU_FILL_PERIOD);
}

static void paced_kernel_entry(void **params)
{
    paced_kernel(params[0]); /* the driver's copy of the struct */
}

struct emu_unhooked_check {
    struct emu_rank *r;
    int iter;
    size_t g;
};

static void check_gradient(struct emu_rank *r, int iter, size_t g, const float *d);

/* Kernel "check": checks gradient g of iteration iter (g == SIZE_MAX: nothing). */
static void check_kernel_entry(void **params)
{
    const struct emu_unhooked_check *a = params[0];

    if (a->g != SIZE_MAX)
        check_gradient(a->r, a->iter, a->g, (const float *)(uintptr_t)a->r->grad[a->g]);
}

/* The framework's emulated module: launched with cuLaunchKernel through the chosen API. */
static const struct emuKernelDef emu_kernel_defs[] = {
    {.name = "paced",
     .fn = paced_kernel_entry,
     .nparams = 1,
     .param_size = {sizeof(struct emu_kernel_arg)}},
    {.name = "scale",
     .fn = scale_kernel,
     .nparams = 3,
     .param_size = {sizeof(float *), sizeof(uint64_t), sizeof(float)}},
    {.name = "fill_f32",
     .fn = fill_f32_kernel,
     .nparams = 3,
     .param_size = {sizeof(float *), sizeof(uint64_t), sizeof(float)}},
    {.name = "fill_i64",
     .fn = fill_i64_kernel,
     .nparams = 3,
     .param_size = {sizeof(int64_t *), sizeof(uint64_t), sizeof(int64_t)}},
    {.name = "tp_check",
     .fn = emu_tp_check_kernel,
     .nparams = 1,
     .param_size = {sizeof(struct emu_tp_check)}},
    {.name = "check",
     .fn = check_kernel_entry,
     .nparams = 1,
     .param_size = {sizeof(struct emu_unhooked_check)}},
};
static const struct emuModuleImage emu_kernels = {.magic = EMU_MODULE_MAGIC,
                                                  .nkernels = sizeof(emu_kernel_defs) /
                                                              sizeof(emu_kernel_defs[0]),
                                                  .kernels = emu_kernel_defs};

static int launch_paced(struct emu_rank *r, struct emu_kernel_arg *a, const char *what)
{
    void *params[] = {a};

    a->restart = r->compute_waited > 0;
    a->after = r->compute_waited == 1 ? r->waited_event : NULL;
    a->host_iter = r->iter;
    r->compute_waited = 0;
    return emu_cu(r, emu_gpu->launch(r->k_paced, params, r->compute), what);
}

int emu_launch_scale(struct emu_rank *r, CUdeviceptr d, uint64_t n, float f, CUstream s)
{
    float *p = (float *)(uintptr_t)d;
    void *params[] = {&p, &n, &f};

    return emu_cu(r, emu_gpu->launch(r->k_scale, params, s), "cuLaunchKernel (scale)");
}

int emu_launch_fill_f32(struct emu_rank *r, CUdeviceptr d, uint64_t n, float base, CUstream s)
{
    float *p = (float *)(uintptr_t)d;
    void *params[] = {&p, &n, &base};

    return emu_cu(r, emu_gpu->launch(r->k_fill_f32, params, s), "cuLaunchKernel (fill_f32)");
}

int emu_launch_fill_i64(struct emu_rank *r, CUdeviceptr d, uint64_t n, int64_t base, CUstream s)
{
    int64_t *p = (int64_t *)(uintptr_t)d;
    void *params[] = {&p, &n, &base};

    return emu_cu(r, emu_gpu->launch(r->k_fill_i64, params, s), "cuLaunchKernel (fill_i64)");
}

/* ---- event cache ------------------------------------------------------------------------ */

static int grow_events(struct emu_rank *r)
{
    size_t cap = r->cap_events ? 2 * r->cap_events : 64;
    CUevent *a = realloc(r->ev_all, cap * sizeof(CUevent));

    if (a)
        r->ev_all = a;
    CUevent *f = a ? realloc(r->ev_free, cap * sizeof(CUevent)) : NULL;
    if (f)
        r->ev_free = f;
    CUevent *l = f ? realloc(r->ev_later, cap * sizeof(CUevent)) : NULL;
    if (l)
        r->ev_later = l;
    int *li = l ? realloc(r->ev_later_iter, cap * sizeof(int)) : NULL;
    if (li)
        r->ev_later_iter = li;
    if (!li) {
        fprintf(stderr, "prophet-emu: rank %d: out of memory\n", r->rank);
        return -1;
    }
    r->cap_events = cap;
    return 0;
}

int emu_event_get(struct emu_rank *r, CUevent *e)
{
    if (r->n_free) {
        *e = r->ev_free[--r->n_free];
        return 0;
    }
    if (r->n_all == r->cap_events && grow_events(r))
        return -1;
    if (emu_cu(r, emu_gpu->event_create(e, 0), "cuEventCreate (cache)"))
        return -1;
    r->ev_all[r->n_all++] = *e;
    return 0;
}

void emu_event_release(struct emu_rank *r, CUevent e)
{
    if (!e)
        return;
    r->ev_later_iter[r->n_later] = r->iter;
    r->ev_later[r->n_later++] = e; /* n_later <= n_all <= cap */
}

void emu_events_recycle(struct emu_rank *r)
{
    /* --wait none: only handles released before the iteration of the compute stream's last
     * kernel; the others wait in ev_later (kept in release order) */
    int upto = r->opt->wait == EMU_WAIT_NONE ? atomic_load(&r->gpu_iter) : r->iter + 1;
    size_t keep = 0;

    for (size_t i = r->n_later; i-- > 0;) /* the last released is reused last */
        if (r->ev_later_iter[i] < upto)
            r->ev_free[r->n_free++] = r->ev_later[i];
    for (size_t i = 0; i < r->n_later; i++)
        if (r->ev_later_iter[i] >= upto) {
            r->ev_later_iter[keep] = r->ev_later_iter[i];
            r->ev_later[keep++] = r->ev_later[i];
        }
    r->n_later = keep;
}

int emu_record_work(struct emu_rank *r, CUstream s, struct emu_work_events *w)
{
    if (emu_event_get(r, &w->end) || emu_event_get(r, &w->fut))
        return -1;
    if (emu_cu(r, emu_gpu->event_record(w->end, s), "cuEventRecord (work end)") ||
        emu_cu(r, emu_gpu->event_record(w->fut, s), "cuEventRecord (future)"))
        return -1;
    if (r->opt->watchdog_us > 0) /* the handles live until teardown (the event cache) */
        atomic_store(&r->wd_events[r->wd_next++ % EMU_WATCHDOG_SLOTS], w->end);
    return 0;
}

/* --watchdog-us: PyTorch's watchdog thread, querying the work end events. */
static void *watchdog_main(void *p)
{
    struct emu_rank *r = p;
    struct timespec ts = {.tv_sec = (time_t)(r->opt->watchdog_us / 1e6),
                          .tv_nsec = (long)(r->opt->watchdog_us * 1000.0) % 1000000000L};

    emu_gpu->set_device(r->device);
    while (atomic_load(&r->wd_run)) {
        for (unsigned i = 0; i < EMU_WATCHDOG_SLOTS; i++) {
            CUevent e = atomic_load(&r->wd_events[i]);
            if (!e)
                continue;
            r->wd_queries++;
            if (emu_gpu->event_query(e) == CUDA_ERROR_NOT_READY)
                r->wd_not_ready++;
        }
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void watchdog_start(struct emu_rank *r)
{
    if (r->opt->watchdog_us <= 0)
        return;
    atomic_store(&r->wd_run, 1);
    r->wd_started = pthread_create(&r->wd_thread, NULL, watchdog_main, r) == 0;
}

static void watchdog_stop(struct emu_rank *r)
{
    if (!r->wd_started)
        return;
    atomic_store(&r->wd_run, 0);
    pthread_join(r->wd_thread, NULL);
    r->wd_started = 0;
    fprintf(stderr, "prophet-emu: rank %d: watchdog: %llu queries, %llu not ready\n", r->rank,
            (unsigned long long)r->wd_queries, (unsigned long long)r->wd_not_ready);
}

void emu_release_work(struct emu_rank *r, struct emu_work_events *w)
{
    emu_event_release(r, w->end);
    emu_event_release(r, w->fut);
    w->end = w->fut = NULL;
}

int emu_compute_wait(struct emu_rank *r, CUevent e)
{
    r->compute_waited++;
    r->waited_event = e;
    return emu_cu(r, emu_gpu->stream_wait_event(r->compute, e), "cuStreamWaitEvent (compute)");
}

/* --unhooked-consumer: a kernel that reads gradient g's all-reduced values and checks them,
 * launched through emuLaunchKernel, an emulator entry point that no interposer wraps. */
static void unhooked_check_kernel(void *p)
{
    struct emu_unhooked_check *a = p;

    check_gradient(a->r, a->iter, a->g, (const float *)(uintptr_t)a->r->grad[a->g]);
    free(a);
}

int emu_launch_check(struct emu_rank *r, size_t g, CUstream s)
{
    struct emu_unhooked_check a = {r, r->iter, g};
    void *params[] = {&a};

    return emu_cu(r, emu_gpu->launch(r->k_check, params, s), "cuLaunchKernel (check)");
}

int emu_launch_unhooked_check(struct emu_rank *r, size_t g, CUstream s)
{
    struct emu_unhooked_check *a = malloc(sizeof(*a));

    if (!a)
        return emu_cu(r, CUDA_ERROR_OUT_OF_MEMORY, "emuLaunchKernel (check)");
    *a = (struct emu_unhooked_check){r, r->iter, g};
    return emu_cu(r, emuLaunchKernel(s, 0, unhooked_check_kernel, a),
                  "emuLaunchKernel (check, unhooked)");
}

void emu_check_gradient(struct emu_rank *r, int iter, size_t g, const float *d)
{
    check_gradient(r, iter, g, d);
}

int emu_check_after_sync(struct emu_rank *r, size_t g)
{
    check_gradient(r, r->iter, g, (const float *)(uintptr_t)r->grad[g]);
    return take_error(r);
}

/* Backward step g's work: write the gradient (at the end of the step). */
static void fill_gradient(struct emu_kernel_arg *a)
{
    const struct emu_rank *r = a->r;
    float *d = (float *)(uintptr_t)r->grad[a->g];
    int round = emu_value_round(a->iter, a->micro, r->opt->accumulate);

    for (uint64_t i = 0; i < r->count[a->g]; i++)
        d[i] = emu_value(emu_value_key(r->opt->seed, round, a->g, i), r->rank);
    if (r->rank == r->opt->corrupt_rank && a->g == r->ngrad / 2 &&
        a->iter == (r->total_iters > 1 ? 1 : 0))
        d[r->count[a->g] / 2] += 1.0f; /* --corrupt-rank: a deliberate wrong input */
}

/* Compares one gradient's all-reduced data with the expected sums; records the first wrong
 * element. */
static void check_gradient(struct emu_rank *r, int iter, size_t g, const float *d)
{
    uint64_t wrong = 0, first = 0;
    float want = 0, got = 0;
    /* --accumulate: the last micro-step's values are the ones all-reduced */
    int round = emu_value_round(iter, r->opt->accumulate - 1, r->opt->accumulate);

    if (emu_grad_dropped(r, iter, g))
        return; /* --change-at-iter: not all-reduced any more */
    for (uint64_t i = 0; i < r->count[g]; i++) {
        float e = r->sum_table[emu_value_key(r->opt->seed, round, g, i)];
        if (d[i] != e) {
            if (!wrong++) {
                first = i;
                want = e;
                got = d[i];
            }
        }
    }
    if (wrong)
        emu_rank_record_error(r,
                              "wrong result: iteration %d gradient %zu '%s' element %llu: "
                              "expected %g, got %g (%llu of %llu elements wrong)",
                              iter, g, r->prof->t[g].name, (unsigned long long)first, (double)want,
                              (double)got, (unsigned long long)wrong,
                              (unsigned long long)r->count[g]);
}

/* Kernel body of a forward layer under --wait per-layer: consumes (checks) the gradient of the
 * previous iteration. */
static void consume_gradient(struct emu_kernel_arg *a)
{
    check_gradient(a->r, a->iter, a->g, (const float *)(uintptr_t)a->r->grad[a->g]);
}

static int host_check_all(struct emu_rank *r, int iter)
{
    for (size_t g = 0; g < r->ngrad; g++) {
        if (emu_cu(r, emu_gpu->copy_to_host(r->host_buf, r->grad[g], emu_grad_bytes(r, g)),
                   "cuMemcpyDtoH"))
            return -1;
        check_gradient(r, iter, g, r->host_buf);
    }
    return take_error(r);
}

/* ---- set-up ------------------------------------------------------------------------------- */

static uint64_t scaled_ns(const struct emu_rank *r, double us)
{
    double ns = us * 1000.0 * r->opt->scale;

    return ns > 0 ? (uint64_t)ns : 0;
}

/* Backward step g lasts from gradient g-1's ready time to g's (clamped to be monotonic); forward
 * layer g lasts the same share of forward_us as g's backward gap has of backward. */
static void plan_durations(struct emu_rank *r)
{
    const struct emu_profile *p = r->prof;
    double prev = 0, last = p->t[p->n - 1].ready_us;

    for (size_t g = 0; g < r->ngrad; g++) {
        double gap = p->t[g].ready_us > prev ? p->t[g].ready_us - prev : 0;
        double share = last > 0 ? gap / last : 1.0 / (double)r->ngrad;
        prev += gap;
        r->bwd_ns[g] = scaled_ns(r, gap);
        r->fwd_ns[g] = scaled_ns(r, p->forward_us * share);
    }
    r->tail_ns = scaled_ns(r, p->backward_us > prev ? p->backward_us - prev : 0);
}

static int alloc_host(struct emu_rank *r)
{
    size_t n = r->ngrad, it = (size_t)r->total_iters;

    r->count = calloc(n, sizeof(*r->count));
    r->grad = calloc(n, sizeof(*r->grad));
    r->fwd_ns = calloc(n, sizeof(*r->fwd_ns));
    r->bwd_ns = calloc(n, sizeof(*r->bwd_ns));
    r->bwd_arg = calloc(n, sizeof(*r->bwd_arg));
    r->fwd_arg = calloc(n, sizeof(*r->fwd_arg));
    r->calls = calloc(it, sizeof(*r->calls));
    r->bytes = calloc(it, sizeof(*r->bytes));
    if (!r->count || !r->grad || !r->fwd_ns || !r->bwd_ns || !r->bwd_arg || !r->fwd_arg ||
        !r->calls || !r->bytes) {
        fprintf(stderr, "prophet-emu: rank %d: out of memory\n", r->rank);
        return -1;
    }
    for (size_t g = 0; g < n; g++) {
        double e = (double)r->prof->t[g].elements * r->opt->elements_scale + 0.5;
        r->count[g] = e < 1 ? 1 : (uint64_t)e;
        if (r->count[g] > r->max_count)
            r->max_count = r->count[g];
        r->bwd_arg[g] = (struct emu_kernel_arg){.r = r, .g = g, .work = fill_gradient};
        r->fwd_arg[g] = (struct emu_kernel_arg){.r = r, .g = g};
    }
    r->host_buf = malloc(r->max_count * sizeof(float));
    if (!r->host_buf) {
        fprintf(stderr, "prophet-emu: rank %d: out of memory\n", r->rank);
        return -1;
    }
    plan_durations(r);
    for (size_t g = 0; g < n; g++) {
        r->bwd_arg[g].ns = r->bwd_ns[g];
        r->fwd_arg[g].ns = r->fwd_ns[g];
    }
    r->tail_arg = (struct emu_kernel_arg){.r = r, .ns = r->tail_ns};
    emu_value_sum_table(r->nranks, r->sum_table);
    if (r->opt->scale_each) /* the same fp32 product as the kernel's, so the check stays exact */
        for (unsigned k = 0; k < EMU_VALUE_MOD; k++)
            r->sum_table[k] *= 1.0f / (float)r->nranks;
    return 0;
}

static int setup_cuda(struct emu_rank *r)
{
    int ndev = 0;

    if (emu_cu(r, emu_gpu->device_count(&ndev), "device count"))
        return -1;
    if (ndev < 1) {
        fprintf(stderr, "prophet-emu: rank %d: no CUDA device\n", r->rank);
        return -1;
    }
    r->device = r->rank % ndev;
    if (emu_cu(r, emu_gpu->set_device(r->device), "set device (primary context)") ||
        emu_cu(r, emu_gpu->get_kernel(&emu_kernels, "paced", &r->k_paced), "kernel 'paced'") ||
        emu_cu(r, emu_gpu->get_kernel(&emu_kernels, "scale", &r->k_scale), "kernel 'scale'") ||
        emu_cu(r, emu_gpu->get_kernel(&emu_kernels, "fill_f32", &r->k_fill_f32),
               "kernel 'fill_f32'") ||
        emu_cu(r, emu_gpu->get_kernel(&emu_kernels, "fill_i64", &r->k_fill_i64),
               "kernel 'fill_i64'") ||
        emu_cu(r, emu_gpu->get_kernel(&emu_kernels, "tp_check", &r->k_tp_check),
               "kernel 'tp_check'") ||
        emu_cu(r, emu_gpu->get_kernel(&emu_kernels, "check", &r->k_check), "kernel 'check'") ||
        emu_cu(r, emu_gpu->stream_create(&r->compute, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
        return -1;
    for (size_t g = 0; g < r->ngrad; g++)
        if (emu_cu(r, emu_gpu->mem_alloc(&r->grad[g], emu_grad_bytes(r, g)), "cuMemAlloc"))
            return -1;
    return 0;
}

static const struct emu_mode_ops *mode_ops(enum emu_mode m)
{
    switch (m) {
    case EMU_MODE_PER_TENSOR:
        return &emu_mode_per_tensor;
    case EMU_MODE_DDP:
        return &emu_mode_ddp;
    case EMU_MODE_HOROVOD:
        return &emu_mode_horovod;
    case EMU_MODE_PER_PARAM_SYNC:
        return &emu_mode_per_param_sync;
    }
    return NULL;
}

/* ---- one iteration ----------------------------------------------------------------------- */

/* The forward pass of micro-step r->micro. In the first one, under --wait per-layer and none,
 * layer k's kernel first waits for gradient k's all-reduce of the previous iteration and checks
 * it. */
static int forward(struct emu_rank *r)
{
    int per_layer = r->opt->wait != EMU_WAIT_ALL && r->iter > 0 && r->micro == 0;
    size_t pos = 0;

    if (r->micro == 0 && r->opt->wait != EMU_WAIT_NONE)
        r->compute_waited = 2; /* the host synchronised at the end of the last iteration: now */
    for (size_t k = r->ngrad; k-- > 0; pos++) {
        r->fwd_arg[k].work = NULL;
        if (per_layer) {
            if (r->ops->wait_grad(r, k))
                return -1;
            r->fwd_arg[k].iter = r->iter - 1;
            r->fwd_arg[k].work = consume_gradient;
        }
        if (launch_paced(r, &r->fwd_arg[k], "cuLaunchKernel (forward)") ||
            emu_tp_after_layer(r, EMU_TP_FORWARD, pos))
            return -1;
    }
    return 0;
}

/* The backward pass of micro-step r->micro: only the last one hands gradients to the framework
 * (DDP's no_sync() before it). */
static int backward(struct emu_rank *r)
{
    int sync = r->micro == r->opt->accumulate - 1;

    if (sync && r->ops->begin_backward(r))
        return -1;
    for (size_t g = 0; g < r->ngrad; g++) {
        r->bwd_arg[g].iter = r->iter;
        r->bwd_arg[g].micro = r->micro;
        if (sync)
            emu_maybe_change(r, g);
        if (launch_paced(r, &r->bwd_arg[g], "cuLaunchKernel (backward)") ||
            (sync && r->ops->grad_ready(r, g)))
            return -1;
        if (sync)
            emu_maybe_kill(r, g);
        if (emu_tp_after_layer(r, EMU_TP_BACKWARD, g))
            return -1;
    }
    if (r->tail_ns && launch_paced(r, &r->tail_arg, "cuLaunchKernel (backward tail)"))
        return -1;
    return sync ? r->ops->end_backward(r) : 0;
}

/* Makes every result of iteration r->iter visible, waits for it on the host and checks it. */
static int finish_all(struct emu_rank *r)
{
    if (r->ops->wait_all(r) || emu_sync(r, r->compute))
        return -1;
    return host_check_all(r, r->iter);
}

/* --wait none: how many whole iterations the host is ahead of the compute stream when it starts
 * iteration r->iter (0 when the compute stream is in the previous one). */
static void note_run_ahead(struct emu_rank *r)
{
    int ahead = r->iter - 1 - atomic_load(&r->gpu_iter);

    if (ahead > r->max_run_ahead)
        r->max_run_ahead = ahead;
}

/* The end of the iteration: what the host waits for (--wait), then the evaluation phase. */
static int end_iteration(struct emu_rank *r)
{
    if (emu_disturb_end_iteration(r))
        return -1;
    switch (r->opt->wait) {
    case EMU_WAIT_ALL:
        if (finish_all(r))
            return -1;
        break;
    case EMU_WAIT_PER_LAYER:
        if (emu_sync(r, r->compute) || take_error(r))
            return -1;
        break;
    case EMU_WAIT_NONE: /* no synchronisation: errors of the kernels that ran so far */
        if (take_error(r))
            return -1;
        break;
    }
    return emu_extras_eval(r);
}

/* One iteration: --accumulate micro-steps of forward and backward, the loss all-reduce, the end.
 * Its time: from its start to the host synchronisation at its end, or (--wait none) to the end of
 * its launches, where the next iteration starts. */
static int run_iteration(struct emu_rank *r, double *us)
{
    double t0 = now_us();

    note_run_ahead(r);
    for (r->micro = 0; r->micro < r->opt->accumulate; r->micro++)
        if (forward(r) || backward(r))
            return -1;
    r->micro = r->opt->accumulate - 1;
    if (emu_extras_loss(r) || end_iteration(r))
        return -1;
    emu_events_recycle(r);
    *us = now_us() - t0;
    return 0;
}

/* Resident set size in KiB from /proc/self/statm (second field, pages); 0 if unreadable. */
static uint64_t rss_kb(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (!f)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
}

/* Bytes allocated with malloc and still in use (main arena and mmapped chunks), in KiB. */
static uint64_t heap_kb(void)
{
    struct mallinfo2 mi = mallinfo2();

    return (uint64_t)(mi.uordblks + mi.hblkhd) / 1024;
}

/* --rss: no rank leaves (and tears down) before every rank took its end sample. A rank that
 * leaves first can change what another one holds at its sample: with the preload, the process
 * that owns the shared eBPF probe gives it up at exit, and a survivor takes it over, loading the
 * probe (libbpf reads the kernel's BTF, 5.4 MiB here, into the heap for the time of the load):
 * a take-over, not a leak. Bounded (10 s) so that a rank that died cannot hang the others. */
static void rss_wait_all_sampled(struct emu_shared *sh)
{
    const struct timespec pause = {0, 1000000};

    atomic_fetch_add(&sh->rss_sampled, 1);
    for (int i = 0; i < 10000 && atomic_load(&sh->rss_sampled) < sh->ranks; i++)
        nanosleep(&pause, NULL);
}

/* --wait per-layer and none: after the last iteration, everything is waited for and checked. */
static int drain(struct emu_rank *r)
{
    double t0 = now_us();

    if (r->opt->wait == EMU_WAIT_ALL)
        return 0;
    if (finish_all(r))
        return -1;
    r->sh->result[r->rank].drain_us = now_us() - t0;
    return 0;
}

/* The end-of-run lines of the training-loop extras and of --wait none. */
static void report_extras(struct emu_rank *r)
{
    const struct emu_options *o = r->opt;
    struct emu_rank_result *res = &r->sh->result[r->rank];

    emu_extras_report(r);
    emu_tp_report(r);
    res->micro_steps = (uint64_t)r->total_iters * (uint64_t)o->accumulate;
    res->max_run_ahead = r->max_run_ahead;
    if (o->loss_every || o->eval_every || o->tp_comm || o->accumulate > 1)
        fprintf(stderr,
                "prophet-emu: rank %d: extras: %llu loss all-reduce(s) (%llu checked), %llu "
                "metric all-reduce(s) (%llu checked), %llu tensor-parallel all-reduce(s) (%llu "
                "checked), %llu micro-step(s)\n",
                r->rank, (unsigned long long)res->loss_allreduces,
                (unsigned long long)res->loss_checked, (unsigned long long)res->eval_allreduces,
                (unsigned long long)res->eval_checked, (unsigned long long)res->tp_allreduces,
                (unsigned long long)res->tp_checked, (unsigned long long)res->micro_steps);
    if (o->wait == EMU_WAIT_NONE)
        fprintf(stderr,
                "prophet-emu: rank %d: --wait none: the host ran at most %d iteration(s) ahead "
                "of the compute stream; drained in %.0f us\n",
                r->rank, r->max_run_ahead, res->drain_us);
    emu_comm_calls_end(r);
}

static int run_loop(struct emu_rank *r)
{
    double *out = emu_shared_iter_us(r->sh, r->rank);
    struct emu_rank_result *res = &r->sh->result[r->rank];

    for (r->iter = 0; r->iter < r->total_iters; r->iter++) {
        atomic_store(&r->held_prev_iter_max, atomic_load(&r->held_iter_max));
        atomic_store(&r->held_iter_max, 0);
        if (r->iter == r->opt->bw_change_iter) {
            void (*set)(double) = (void (*)(double))dlsym(RTLD_DEFAULT, "emuNcclSetLinkBandwidth");
            if (set) {
                struct timespec ts;
                set(r->opt->bw_change_Bps);
                clock_gettime(CLOCK_MONOTONIC, &ts);
                fprintf(stderr,
                        "prophet-emu: rank %d: links at %.0f Mbit/s from iteration %d "
                        "(t=%lld us CLOCK_MONOTONIC)\n",
                        r->rank, r->opt->bw_change_Bps * 8 / 1e6, r->iter,
                        (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
            } else
                fprintf(stderr, "prophet-emu: rank %d: --bw-change-at needs the emulated NCCL\n",
                        r->rank);
        }
        if (r->iter == r->opt->warmup)
            emu_comm_calls_begin(r);
        if (run_iteration(r, &out[r->iter]))
            return -1;
        if (r->iter == r->opt->rss_at) {
            res->rss_warm_kb = rss_kb();
            res->heap_warm_kb = heap_kb();
        }
    }
    r->iter = r->total_iters - 1;
    if (drain(r) || emu_consumers_end(r))
        return -1;
    fprintf(stderr,
            "prophet-emu: rank %d: held by the interposer: at most %lld all-reduce(s) at once, "
            "some after %llu of %llu calls\n",
            r->rank, atomic_load(&r->held_max), atomic_load(&r->held_after),
            (unsigned long long)atomic_load(&r->ar_issued));
    report_extras(r);
    if (atomic_load(&r->faults_seen))
        fprintf(stderr,
                "prophet-emu: rank %d: after the injected fault: held at most %lld all-reduce(s) "
                "at once\n",
                r->rank, atomic_load(&r->held_after_fault_max));
    if (r->opt->rss_at >= 0) {
        res->rss_end_kb = rss_kb();
        res->heap_end_kb = heap_kb();
        rss_wait_all_sampled(r->sh);
    }
    return 0;
}

static void teardown(struct emu_rank *r)
{
    emu_disturb_fini(r);
    emu_consumers_fini(r);
    if (r->ops && r->mode)
        r->ops->fini(r);
    emu_extras_fini(r);
    emu_tp_fini(r);
    if (r->comm)
        ncclCommDestroy(r->comm);
    if (r->grad)
        for (size_t g = 0; g < r->ngrad; g++)
            if (r->grad[g])
                emu_gpu->mem_free(r->grad[g]);
    for (size_t i = 0; i < r->n_all; i++)
        emu_gpu->event_destroy(r->ev_all[i]);
    if (r->compute)
        emu_gpu->stream_destroy(r->compute);
    free(r->count);
    free(r->grad);
    free(r->fwd_ns);
    free(r->bwd_ns);
    free(r->bwd_arg);
    free(r->fwd_arg);
    free(r->calls);
    free(r->bytes);
    free(r->host_buf);
    free(r->ev_all);
    free(r->ev_free);
    free(r->ev_later);
    free(r->ev_later_iter);
    pthread_mutex_destroy(&r->err_lock);
}

/* The parent publishes the unique id after forking every rank; -1 if it could not make one. */
static int wait_for_id(struct emu_shared *sh)
{
    int st;

    while ((st = atomic_load(&sh->id_state)) == 0)
        usleep(500);
    return st == 1 ? 0 : -1;
}

int emu_rank_main(const struct emu_options *opt, const struct emu_profile *prof,
                  struct emu_shared *sh, int rank)
{
    /* static, not on the stack: after a failure the rank returns without tearing down, and the
     * driver's stream threads may still run kernels that point at this state until the process
     * exits (found by TSan as a SEGV in fill_gradient after an NCCL timeout) */
    static struct emu_rank r;
    struct emu_rank_result *res = &sh->result[rank];
    int err = -1;

    char rank_s[16];

    snprintf(rank_s, sizeof(rank_s), "%d", rank);
    setenv("EMU_RANK", rank_s, 1); /* EMU_FAULT's rank= (test/emu/cuda/emu_fault.c) */
    r.opt = opt;
    r.prof = prof;
    r.sh = sh;
    r.rank = rank;
    r.nranks = opt->ranks;
    r.total_iters = opt->warmup + opt->iters;
    r.ngrad = prof->n;
    atomic_store(&r.gpu_iter, -1);
    r.ops = mode_ops(opt->mode);
    emu_gpu = opt->cuda_api == EMU_CUDA_API_DRIVER ? &emu_gpu_driver : &emu_gpu_runtime;
    r.jitter_state =
        (opt->seed ^ 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull + (uint64_t)rank + 1;
    if (!r.jitter_state)
        r.jitter_state = 1;
    pthread_mutex_init(&r.err_lock, NULL);
    /* Emulated kernels sleep; the default 50 us timer slack (inherited by the threads the
     * emulated driver starts) would add that much to every kernel. */
    prctl(PR_SET_TIMERSLACK, EMU_TIMER_SLACK_NS, 0, 0, 0);

    r.fault_watch = getenv("EMU_FAULT") && *getenv("EMU_FAULT");
    if (r.fault_watch)
        emuFaultSetHook(fault_hook, &r);
    if (alloc_host(&r) || setup_cuda(&r))
        goto out;
    if (wait_for_id(sh) ||
        emu_nccl(&r, ncclCommInitRank(&r.comm, r.nranks, sh->id, rank), "ncclCommInitRank"))
        goto out;
    if (r.ops->init(&r) || emu_tp_init(&r) || emu_extras_init(&r) || emu_consumers_init(&r) ||
        emu_disturb_init(&r))
        goto out;
    watchdog_start(&r);
    if (run_loop(&r))
        goto out;
    watchdog_stop(&r);
    res->calls_per_iter = r.calls[r.total_iters - 1];
    res->bytes_per_iter = r.bytes[r.total_iters - 1];
    err = 0;
    teardown(&r);
out:
    /* after a failure the rank leaves without tearing down: a communicator or a Horovod thread
     * may be stuck, and the process exits anyway */
    res->ok = !err;
    res->finished = 1;
    return err ? EMU_EXIT_FAIL : EMU_EXIT_OK;
}
