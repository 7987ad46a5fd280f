/* One rank process of the emulated training job: CUDA/NCCL set-up, the iteration loop, and the
 * helpers that the framework modes share. */
#ifndef EMU_RANK_H
#define EMU_RANK_H

#include <cuda.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>

#include "consumer.h"
#include "options.h"
#include "profile.h"
#include "shared.h"
#include "values.h"

struct emu_rank;

/* A framework: how gradients become all-reduces and how results are waited for. */
struct emu_mode_ops {
    int (*init)(struct emu_rank *r);
    /* before the backward kernels of iteration r->iter are launched */
    int (*begin_backward)(struct emu_rank *r);
    /* the backward kernel that produces gradient g has been launched on the compute stream */
    int (*grad_ready)(struct emu_rank *r, size_t g);
    /* every backward kernel of the iteration has been launched */
    int (*end_backward)(struct emu_rank *r);
    /* the compute stream waits until every gradient of the iteration holds its result */
    int (*wait_all)(struct emu_rank *r);
    /* the compute stream waits until gradient g of the previous iteration holds its result */
    int (*wait_grad)(struct emu_rank *r, size_t g);
    /* the stream of the job's own collectives on the gradients' communicator (loss, metrics): the
     * process-group stream, once every gradient call of the iteration has been issued (Horovod:
     * the host first waits until the background thread issued the iteration's last response) */
    int (*job_stream)(struct emu_rank *r, CUstream *s);
    void (*fini)(struct emu_rank *r);
};

extern const struct emu_mode_ops emu_mode_per_tensor;
extern const struct emu_mode_ops emu_mode_ddp;
extern const struct emu_mode_ops emu_mode_horovod;
extern const struct emu_mode_ops emu_mode_per_param_sync;

/* An emulated compute kernel: paced on the compute stream's virtual clock, then `work`. Passed by
 * value (cuLaunchKernel copies it at launch), so the host may run ahead and reuse its copy. */
struct emu_kernel_arg {
    struct emu_rank *r;
    size_t g;
    int iter;
    int micro;     /* --accumulate: the micro-step of the values written */
    int host_iter; /* the iteration the host was issuing at launch (emu_rank.gpu_iter) */
    int restart;   /* the stream waited before this kernel: its clock restarts */
    CUevent after; /* the one event waited for, or NULL: the clock restarts when it fired */
    uint64_t ns;   /* modelled duration */
    void (*work)(struct emu_kernel_arg *a);
};

struct emu_rank {
    const struct emu_options *opt;
    const struct emu_profile *prof;
    struct emu_shared *sh;
    int rank;
    int nranks;
    int total_iters;
    int iter; /* iteration being issued by the main thread */

    int device;          /* this rank's device (its primary context) */
    const void *k_paced; /* the emulated kernels (gpu.h) */
    const void *k_scale;
    const void *k_fill_f32, *k_fill_i64; /* the job's small tensors (values.h, EMU_FILL_PERIOD) */
    const void *k_tp_check;
    CUstream compute;
    ncclComm_t comm;
    struct emu_tp *tp;         /* --tp-comm (tp.c) */
    struct emu_extras *extras; /* --loss-every, --eval-every (extras.c) */
    int micro;                 /* --accumulate: the micro-step being issued */
    /* the host iteration of the last paced kernel that finished on the compute stream (-1: none),
     * written by that stream's thread: how far the host runs ahead (--wait none) */
    _Atomic int gpu_iter;
    int max_run_ahead;
    long long calls_base[EMU_NCOMMS][2]; /* comm_calls.c: all-reduces, broadcasts at warm-up end */

    size_t ngrad;
    uint64_t *count;    /* elements of gradient g after --elements-scale */
    CUdeviceptr *grad;  /* one device buffer per gradient */
    uint64_t *fwd_ns;   /* forward kernel of layer g */
    uint64_t *bwd_ns;   /* backward step g: from gradient g-1 ready to gradient g ready */
    uint64_t tail_ns;   /* backward after the last gradient */
    uint64_t max_count; /* largest gradient, elements */
    float sum_table[EMU_VALUE_MOD];
    float *host_buf; /* host staging for checks, max_count floats */

    struct emu_kernel_arg *bwd_arg;
    struct emu_kernel_arg *fwd_arg;
    struct emu_kernel_arg tail_arg;
    uint64_t pace_end_ns; /* end of the last kernel on the virtual clock (compute stream thread) */
    int compute_waited;   /* waits enqueued on the compute stream since the last kernel */
    CUevent waited_event; /* the last of them */

    /* PyTorch's CUDA event cache (handles reused, never destroyed before teardown); ev_later_iter:
     * the iteration in which each ev_later handle was released */
    CUevent *ev_all, *ev_free, *ev_later;
    int *ev_later_iter;
    size_t n_all, n_free, n_later, cap_events;

    uint64_t *calls; /* per iteration, written by the thread that issues the calls */
    uint64_t *bytes;

    /* all-reduces issued by this program and the emulated NCCL's count of those that reached it
     * (emu_nccl_hooks.h): the difference is what an interposer holds (emu_held) */
    _Atomic unsigned long long ar_issued;
    unsigned long long bc_issued; /* broadcasts issued on comm (--mismatch-rank) */
    unsigned long long ar_base_issued, ar_base_reached;
    _Atomic int ar_based;
    _Atomic long long held_max; /* most all-reduces held at once, seen after a call returned */
    _Atomic unsigned long long held_after; /* calls after which at least one was held */
    /* EMU_FAULT (injected faults): what was held when one struck, and after it (fault_hook) */
    _Atomic long long held_call_start; /* held when the current all-reduce call began */
    _Atomic long long held_iter_max, held_prev_iter_max; /* this and the previous iteration */
    int fault_watch;                                     /* EMU_FAULT is set */
    _Atomic int faults_seen;
    _Atomic long long held_after_fault_max;

    uint64_t jitter_state; /* --jitter-us generator (xorshift64*), used by the calling thread */

    pthread_mutex_t err_lock;
    uint64_t nerr;
    char first_err[512];

    const struct emu_mode_ops *ops;
    void *mode;                      /* the mode's state */
    struct emu_consumers *consumers; /* --consumer (consumer.c) */
    struct emu_disturb *disturb;     /* --local-event, --chaos, --poll-wait, --extra-streams */
    const void *k_check;             /* kernel "check": reads (checks) one gradient */

    /* --watchdog-us: end events published for the watchdog thread (a ring of handles) */
#define EMU_WATCHDOG_SLOTS 256
    _Atomic(CUevent) wd_events[EMU_WATCHDOG_SLOTS];
    unsigned wd_next;
    _Atomic int wd_run;
    pthread_t wd_thread;
    int wd_started;
    uint64_t wd_queries, wd_not_ready;
};

/* Runs rank `rank` to the end; returns the process exit code. Called in the forked child; waits
 * for the parent to publish the unique id in sh. */
int emu_rank_main(const struct emu_options *opt, const struct emu_profile *prof,
                  struct emu_shared *sh, int rank);

/* All-reduces held by an interposer right now: issued through the API, not yet in the emulated
 * NCCL (-1: no emulated NCCL hook). */
long long emu_held(struct emu_rank *r);

/* --change-at-iter: gradient g is no longer all-reduced nor checked in iteration `iter`. */
int emu_grad_dropped(const struct emu_rank *r, int iter, size_t g);

/* --kill-rank: called after the framework saw gradient g ready (its all-reduce issued or queued);
 * the chosen rank records the time in shared memory and kills itself with SIGKILL in the middle of
 * the chosen iteration. */
void emu_maybe_kill(struct emu_rank *r, size_t g);
/* --change-at-iter: prints, where gradient g is first dropped, what the interposer holds. */
void emu_maybe_change(struct emu_rank *r, size_t g);

/* Error helpers: print one line 'prophet-emu: rank R: ...' and return -1 on failure. */
int emu_cu(struct emu_rank *r, CUresult rc, const char *what);
int emu_nccl(struct emu_rank *r, ncclResult_t rc, const char *what);
void emu_rank_record_error(struct emu_rank *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Issues the all-reduce(sum, fp32, in place when send == recv) of iteration `iter` on stream s,
 * counting it; on the mismatch rank the first call of iteration 1 is an ncclBroadcast instead. */
int emu_allreduce(struct emu_rank *r, int iter, CUdeviceptr send, CUdeviceptr recv, size_t count,
                  CUstream s);

/* The same in place on another communicator (--second-comm): counted in the iteration's calls and
 * bytes, not in what an interposer holds on the gradients' communicator. */
int emu_allreduce_other(struct emu_rank *r, int iter, ncclComm_t comm, CUdeviceptr buf,
                        size_t count, CUstream s);

/* The event cache, as PyTorch's: emu_event_get takes a handle from the cache (creating one when
 * it is empty); emu_event_release gives one back once its work is consumed; released handles are
 * reused after the host synchronised the compute stream at the end of the iteration
 * (emu_events_recycle), as PyTorch's Work objects die some time after their wait. --wait none has
 * no such synchronisation: a handle is reused once the compute stream has run a kernel of a later
 * iteration than its release, so that no kernel reads the timestamp of a newer record of it. */
int emu_event_get(struct emu_rank *r, CUevent *e);
void emu_event_release(struct emu_rank *r, CUevent e);
void emu_events_recycle(struct emu_rank *r);

/* One all-reduce's two events, recorded on its stream right after the call: the work's end event
 * and the future's event (PyTorch records both). */
struct emu_work_events {
    CUevent end;
    CUevent fut;
};
int emu_record_work(struct emu_rank *r, CUstream s, struct emu_work_events *w);
void emu_release_work(struct emu_rank *r, struct emu_work_events *w);

/* --host-sync-at: right after the host synchronised the stream of gradient g's all-reduce, the host
 * reads g (emulated device memory is host memory: no CUDA call) and checks it. -1 when wrong. */
int emu_check_after_sync(struct emu_rank *r, size_t g);

/* A kernel that checks gradient g of this iteration on stream s, launched with cuLaunchKernel (a
 * consumer the interposer sees); g == SIZE_MAX: a kernel that reads nothing it checks. */
int emu_launch_check(struct emu_rank *r, size_t g, CUstream s);

/* --unhooked-consumer: a kernel that checks gradient g of this iteration on stream s, launched
 * through emuLaunchKernel (no interposer sees it). */
int emu_launch_unhooked_check(struct emu_rank *r, size_t g, CUstream s);

/* Checks d, gradient g of iteration `iter` as read by a consumer (emulated device memory is host
 * memory), as the end-of-iteration check does; a wrong element is recorded as the rank's error. */
void emu_check_gradient(struct emu_rank *r, int iter, size_t g, const float *d);

/* Launches the kernel d[i] *= f (i < n) on stream s. */
int emu_launch_scale(struct emu_rank *r, CUdeviceptr d, uint64_t n, float f, CUstream s);

/* Launches the kernel d[i] = base + (i mod EMU_FILL_PERIOD) (i < n) on stream s, in fp32 or int64.
 */
int emu_launch_fill_f32(struct emu_rank *r, CUdeviceptr d, uint64_t n, float base, CUstream s);
int emu_launch_fill_i64(struct emu_rank *r, CUdeviceptr d, uint64_t n, int64_t base, CUstream s);

/* One of the job's own all-reduces(sum, in place) on the gradients' communicator (loss, metrics):
 * counted with the gradients' for what an interposer holds, not in the per-iteration gradient
 * calls and bytes. */
int emu_allreduce_job(struct emu_rank *r, CUdeviceptr buf, size_t count, ncclDataType_t dtype,
                      CUstream s);

/* The compute stream waits on event e (cuStreamWaitEvent); the next kernel's clock restarts when
 * e fired. e must not be recorded again before that kernel ran (modes keep one event per
 * iteration parity). */
int emu_compute_wait(struct emu_rank *r, CUevent e);

/* Reports an asynchronous error of the communicator (ncclCommGetAsyncError): -1 if any. */
int emu_async_error(struct emu_rank *r);

/* The host waits for stream s (cuStreamSynchronize), reporting NCCL async errors. */
int emu_sync(struct emu_rank *r, CUstream s);

/* Scaled byte thresholds (MiB option * --elements-scale), at least 4 bytes. */
uint64_t emu_threshold_bytes(const struct emu_rank *r, double mib);

/* Events are kept per iteration parity, so that one can be waited for while the host records the
 * other. */
static inline int emu_parity(int iter)
{
    return iter & 1;
}

static inline uint64_t emu_grad_bytes(const struct emu_rank *r, size_t g)
{
    return r->count[g] * sizeof(float);
}

#endif
