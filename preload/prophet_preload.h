/* Internal interfaces of the interposer (preload/). Nothing here is exported from libprophet.so:
 * the library is built with -fvisibility=hidden and a version script that keeps only nccl*. */
#ifndef PROPHET_PRELOAD_H
#define PROPHET_PRELOAD_H

#include <cuda.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "prophet/config.h"
#include "prophet/sched.h"

#define PROPHET_EXPORT __attribute__((visibility("default")))

#define PROPHET_XSTR(x) PROPHET_STR(x)
#define PROPHET_STR(x) #x

/* ---- real NCCL (nccl_symbols.c) -------------------------------------------------------- */
typedef struct prophet_nccl_api {
    __typeof__(&ncclGetVersion) GetVersion;
    __typeof__(&ncclGetErrorString) GetErrorString;
    __typeof__(&ncclCommUserRank) CommUserRank;
    __typeof__(&ncclCommCount) CommCount;
    __typeof__(&ncclAllReduce) AllReduce;
    __typeof__(&ncclBroadcast) Broadcast;
    __typeof__(&ncclBcast) Bcast;
    __typeof__(&ncclReduce) Reduce;
    __typeof__(&ncclAllGather) AllGather;
    __typeof__(&ncclReduceScatter) ReduceScatter;
    __typeof__(&ncclAlltoAll) AlltoAll;
    __typeof__(&ncclGather) Gather;
    __typeof__(&ncclScatter) Scatter;
    __typeof__(&ncclSend) Send;
    __typeof__(&ncclRecv) Recv;
    __typeof__(&ncclGroupStart) GroupStart;
    __typeof__(&ncclGroupEnd) GroupEnd;
    __typeof__(&ncclCommInitRank) CommInitRank;
    __typeof__(&ncclCommInitRankConfig) CommInitRankConfig;
    __typeof__(&ncclCommInitAll) CommInitAll;
    __typeof__(&ncclCommInitRankScalable) CommInitRankScalable;
    __typeof__(&ncclCommSplit) CommSplit;
    __typeof__(&ncclCommShrink) CommShrink;
    __typeof__(&ncclCommDestroy) CommDestroy;
    __typeof__(&ncclCommAbort) CommAbort;
    __typeof__(&ncclCommFinalize) CommFinalize;
    __typeof__(&ncclCommRevoke) CommRevoke;
} prophet_nccl_api_t;

extern prophet_nccl_api_t prophet_nccl;
/* Resolves the real NCCL once (thread-safe). 0 when at least the symbols were found. */
int prophet_nccl_resolve(void);
/* NCCL_VERSION_CODE of the real library (0 if unknown); 1 when its major version is supported. */
int prophet_nccl_version(void);
int prophet_nccl_supported(void);
/* Called by a wrapper whose real symbol is missing: one WARN and ncclInternalError. */
ncclResult_t prophet_nccl_missing(const char *name);

/* ---- CUDA driver (cuda_driver.c) -------------------------------------------------------- */
typedef struct prophet_cuda_api {
    __typeof__(&cuCtxGetCurrent) CtxGetCurrent;
    __typeof__(&cuCtxSetCurrent) CtxSetCurrent;
    __typeof__(&cuStreamCreate) StreamCreate;
    __typeof__(&cuStreamDestroy) StreamDestroy;
    __typeof__(&cuStreamSynchronize) StreamSynchronize;
    __typeof__(&cuStreamIsCapturing) StreamIsCapturing;
    __typeof__(&cuStreamWaitEvent) StreamWaitEvent;
    __typeof__(&cuStreamWaitValue32) StreamWaitValue32;
    __typeof__(&cuStreamWriteValue32) StreamWriteValue32;
    __typeof__(&cuEventCreate) EventCreate;
    __typeof__(&cuEventDestroy) EventDestroy;
    __typeof__(&cuEventRecord) EventRecord;
    __typeof__(&cuEventQuery) EventQuery;
    __typeof__(&cuEventSynchronize) EventSynchronize;
    __typeof__(&cuEventElapsedTime) EventElapsedTime;
    __typeof__(&cuMemHostAlloc) MemHostAlloc;
    __typeof__(&cuMemHostGetDevicePointer) MemHostGetDevicePointer;
    __typeof__(&cuGetErrorString) GetErrorString;
} prophet_cuda_api_t;

extern prophet_cuda_api_t prophet_cu;
/* Loads the driver once (PROPHET_CUDA_LIB). 0 ok; -1 unavailable (one INFO line said why). */
int prophet_cuda_load(void);
const char *prophet_cuda_errstr(CUresult rc);

/* The driver's handle (PROPHET_CUDA_LIB, default libcuda.so.1), opened once; NULL if absent. Needs
 * prophet_cfg loaded (prophet_init). */
void *prophet_cuda_handle(void);

/* ---- glibc's dlsym (dlsym_real.c): every lookup the preload makes itself ------------------- */
typedef void *(*prophet_dlsym_fn)(void *, const char *);
prophet_dlsym_fn prophet_dlsym_glibc(void);
void *prophet_dlsym_real(void *handle, const char *name);

/* ---- wrapped CUDA driver entry points (cuda_hook_table.h) ------------------------------------ */
#include "cuda_hook_table.h"

enum prophet_cuhook_id {
#define PROPHET_CUHOOK_ID(sym, ...) PROPHET_CUHOOK_##sym,
    PROPHET_CUDA_HOOKS(PROPHET_CUHOOK_ID)
#undef PROPHET_CUHOOK_ID
        PROPHET_CUHOOK_COUNT
};

/* cuda_hook_names.c (no libc, no sanitizer: safe before anything is initialised): the entry
 * exporting `name`, or -1; the entry cuda.h maps `proc` to in the flavour `ptsz` (the plain one
 * for an entry point with no stream), or -1; whether entry i may answer a lookup of `proc`. */
int prophet_cuhook_find(const char *name);
int prophet_cuhook_find_current(const char *proc, int ptsz);
int prophet_cuhook_same_proc(int i, const char *proc);
const char *prophet_cuhook_name(int i);
/* cuda_hooks.c: what the exported dlsym answers for entry i, given glibc's answer `found`. */
void *prophet_cuhook_dlsym(int i, void *found);

/* ---- diagnostics (log_line.c) ----------------------------------------------------------- */
extern prophet_config_t prophet_cfg; /* settings.c */

static inline int prophet_msg_enabled(prophet_log_level_t level)
{
    return level != PROPHET_LOG_NONE && prophet_cfg.debug >= level;
}
/* One line; WARN lines carry the pid and file:line of the call (as NCCL_DEBUG's do). */
void prophet_msg_at(prophet_log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Tests the level before evaluating anything else: arguments cost nothing when it is off. */
#define prophet_msg(level, ...)                                                                    \
    do {                                                                                           \
        if (prophet_msg_enabled(level))                                                            \
            prophet_msg_at((level), __FILE__, __LINE__, __VA_ARGS__);                              \
    } while (0)

/* ---- global state (init.c) -------------------------------------------------------------- */
typedef enum prophet_global_mode {
    PROPHET_MODE_UNINIT = 0,
    PROPHET_MODE_PASSTHROUGH, /* disabled, forked child, unsupported NCCL, no CUDA */
    PROPHET_MODE_ACTIVE,
} prophet_global_mode_t;

/* settings.c: prophet_cfg (declared above, written once by prophet_init), the effective policy */
prophet_policy_t prophet_cfg_policy(void);

extern _Atomic int prophet_mode; /* prophet_global_mode_t */

/* Lazy initialisation (no constructor): config, NCCL symbols; returns the mode. Thread-safe. */
int prophet_init(void);
/* Only the first stage, the configuration (once; what the CUDA wrappers need: cuda_hooks.c). */
void prophet_init_config(void);
/* CUDA or threads exist from now on: a forked child passes through. */
void prophet_init_mark_heavy(void);
/* The teardown that init.c's atexit handler runs when the process is active (comm_life.c's). */
void prophet_init_set_exit_hook(void (*fn)(void));

/* ---- the exit check (exit_check.c), run by init.c at exit when no NCCL call reached us ------ */
/* 1 when the loaded objects show an NCCL whose calls pass the preload by; why says which. */
int prophet_exit_check_scan(char *why, size_t len);
/* The one WARN line: NCCL loaded, none of its calls seen, the likely reasons, prophet-doctor. */
void prophet_exit_check_warn(const char *why);
static inline int prophet_active(void)
{
    int m = atomic_load_explicit(&prophet_mode, memory_order_acquire);
    if (m == PROPHET_MODE_UNINIT)
        m = prophet_init();
    return m == PROPHET_MODE_ACTIVE;
}
int64_t prophet_now_us(void);

/* ---- per-thread group state (group_state.c) --------------------------------------------- */
int prophet_group_depth(void);
void prophet_group_enter(void);
void prophet_group_leave(void);

/* ---- per-communicator state (comm_state.c) ---------------------------------------------- */
#define PROPHET_BLOCK_MAX 64 /* members of one block at most */
/* Block mode measures readiness in "measurement iterations": blocks of PROPHET_BLOCK_MAX
 * consecutive calls (phase alternating by half a block), so that no gate of ours stands between
 * the ready events of a block's members. Every iteration measures until a plan is installed, then
 * one in PROPHET_MEASURE_EVERY. The first plan is agreed after PROPHET_MEASURE_WARMUP of them. */
#define PROPHET_MEASURE_EVERY 8
#define PROPHET_MEASURE_WARMUP 4

typedef struct prophet_member {
    const void *sendbuff;
    void *recvbuff;
    size_t count;
    ncclDataType_t dtype;
    ncclRedOp_t op;
    CUevent ready; /* recorded on the caller's stream at interception */
    uint64_t iteration;
    uint32_t index;
    int64_t arrival_us;
    int measure; /* block mode: its ready event is a true readiness sample (feed the learner) */
} prophet_member_t;

/* A held block: consecutive calls of one (communicator, stream), none launched yet. */
typedef struct prophet_block {
    uint32_t n;
    CUstream stream;
    pthread_t owner;
    uint64_t bytes;
    uint32_t number; /* block number within the iteration */
    int64_t last_arrival_us;
    int stall_warned;
    prophet_member_t m[PROPHET_BLOCK_MAX];
} prophet_block_t;

/* A launched block (or observed call) whose events the poller converts into timings. */
typedef struct prophet_inflight {
    struct prophet_inflight *next;
    uint32_t n;
    int deferred;
    CUevent start, end;
    int64_t release_us;
    uint64_t bytes;
    uint32_t block;
    prophet_member_t m[]; /* n members */
} prophet_inflight_t;

typedef struct prophet_stats {
    uint64_t calls;     /* intercepted calls on the communicator (all kinds) */
    uint64_t scheduled; /* all-reduces held and released by the scheduler */
    uint64_t blocks;    /* blocks released on the internal stream */
    uint64_t blocks_multi;
    uint64_t block_members;
    uint64_t plans; /* plans agreed (installed) */
    uint64_t plan_rejects;
    uint64_t stall_warnings;
    uint64_t passthrough; /* calls passed through (every call in call mode) */
} prophet_stats_t;

typedef struct prophet_comm {
    pthread_mutex_t lock;
    ncclComm_t handle;
    uint64_t id; /* creation order in the process: the same on every rank */
    int rank, nranks;
    _Atomic int alive;
    int blocking;    /* from the config at creation (non-blocking comms pass through) */
    int setup;       /* 0 not yet, 1 done, -1 failed (passthrough) */
    int passthrough; /* scheduling off for this comm (error, non-blocking, capture failure) */
    int summary_done;

    CUcontext ctx;
    CUstream x;          /* internal stream */
    uint32_t *gate_host; /* [0]: gate generation, device-mapped */
    CUdeviceptr gate_dev;
    uint32_t gate_gen;
    void *plan_host; /* PROPHET_PLAN_WIRE_BYTES, device-mapped */
    CUdeviceptr plan_dev;
    CUevent plan_event;
    int plan_pending; /* a broadcast is in flight, to apply at plan_apply_iter */
    uint64_t plan_apply_iter;
    uint64_t next_agree_iter;
    uint32_t plan_version;
    uint32_t agree_n; /* program-order data of the broadcast iteration */
    uint64_t agree_hash;

    prophet_learner_t *learner;
    prophet_netmodel_t *net;
    int64_t net_prev_complete_us; /* poller only: completion of the previous block */
    int measuring;                /* block mode: this iteration measures readiness */
    uint32_t measure_phase;       /* chunk offset of this measurement iteration */
    uint32_t measured_iters;      /* measurement iterations since the last relearn */
    prophet_engine_t *engine;
    int have_plan;
    uint32_t iter_len;     /* calls per iteration once the profile is ready, else 0 */
    uint32_t stable_iters; /* iteration starts since the learner's last relearn */
    uint64_t iter_bytes;   /* bytes of one learned iteration */
    int phase_ok;          /* the learned boundary is a whole number of iterations from the start */
    uint32_t last_index;   /* index of the previous observed call */
    uint32_t block_number;
    uint32_t seq_n; /* signature sequence of the current and last complete iteration */
    uint64_t seq_hash_last;
    uint32_t seq_n_last;
    prophet_call_sig_t *seq; /* PROPHET_MAX_CALLS */

    /* readiness: a base event per comm to convert GPU times to host instants */
    CUevent base_event;
    int64_t base_us;

    CUevent *event_pool;
    uint32_t event_pool_n, event_pool_cap;

    prophet_block_t pending;
    prophet_inflight_t *inflight_head, *inflight_tail;

    void *log; /* prophet_log_writer_t * when PROPHET_LOG is set */
    prophet_stats_t stats;
    struct prophet_comm *next_all; /* every comm ever made (never freed: the poller walks it) */
} prophet_comm_t;

/* Registers a new state (comm_life.c calls it). rank/nranks < 0: ask NCCL at setup. */
void prophet_comm_created(ncclComm_t handle, int rank, int nranks, const ncclConfig_t *config,
                          int inherit_blocking_from_parent, ncclComm_t parent);
/* Live state of a handle, or NULL (unknown or destroyed). Lock-free read. */
prophet_comm_t *prophet_comm_find(ncclComm_t handle);
/* Every comm ever made; iterate with ->next_all. */
prophet_comm_t *prophet_comm_list(void);
CUevent prophet_comm_event_get(prophet_comm_t *c);
void prophet_comm_event_put(prophet_comm_t *c, CUevent e);
void prophet_comm_summary(prophet_comm_t *c);
/* A retired comm whose last launched block completed: X and the pooled events (poller). Locked. */
void prophet_comm_gpu_release(prophet_comm_t *c);
/* Learner, engine, net model and signature sequence (retire). Locked. */
void prophet_comm_free_models(prophet_comm_t *c);
/* Switch the comm to passthrough after an error of our own (one WARN). Locked. */
void prophet_comm_fail(prophet_comm_t *c, const char *what, CUresult rc);

/* ---- release (release.c) ---------------------------------------------------------------- */
/* Launches the pending block of c on X and gates its stream. Locked. Returns the real NCCL
 * result of the block (ncclSuccess when nothing was pending). */
ncclResult_t prophet_release_pending(prophet_comm_t *c);
/* Releases the pending blocks of every comm whose block was formed by this thread. */
void prophet_release_all_mine(void);
/* Hands a launched block to the poller (ownership of its events moves). Locked. */
void prophet_inflight_push(prophet_comm_t *c, prophet_inflight_t *f);

/* ---- a communicator's life (comm_life.c): the only caller of setup and teardown --------- */
/* Called after a real init/split succeeded. rank/nranks < 0: ask NCCL at setup. */
void prophet_comm_life_created(ncclComm_t handle, int rank, int nranks, const ncclConfig_t *config,
                               int inherit_blocking_from_parent, ncclComm_t parent);
/* Lazy setup on the first scheduled call (context, stream X, gate, learner...). 0 ok. Locked. */
int prophet_comm_setup(prophet_comm_t *c, CUstream st);
/* Marks the comm dead (before destroy/abort), releasing what is pending. */
void prophet_comm_retire(prophet_comm_t *c, int abort);

/* ---- scheduling of one all-reduce (schedule.c) ----------------------------------------- */
ncclResult_t prophet_allreduce(prophet_comm_t *c, const void *sendbuff, void *recvbuff,
                               size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                               CUstream stream);
/* Before any other intercepted call on c: release its pending block (program-order point). */
void prophet_comm_barrier(ncclComm_t comm);

/* ---- agreement (agreement.c) ------------------------------------------------------------ */
/* At the first call of an iteration: starts a broadcast when due, installs an agreed plan when
 * its iteration has come. Locked, pending block already released. */
void prophet_agreement_step(prophet_comm_t *c, uint64_t iteration);

/* ---- poller (readiness_poller.c) -------------------------------------------------------- */
int prophet_poller_start(void);
void prophet_poller_stop(void);
/* Processes every inflight record of c now (waits for their events). Locked. */
void prophet_poller_drain(prophet_comm_t *c);
/* Latest live throughput (bytes/s) from the bandwidth source, or -1. */
double prophet_poller_probe_Bps(void);

/* ---- schedule log (log_bridge.c) -------------------------------------------------------- */
void prophet_logb_open(prophet_comm_t *c);
void prophet_logb_call(prophet_comm_t *c, const prophet_inflight_t *f, uint32_t i, int64_t ready_us,
                       int64_t launch_us, int64_t complete_us);
void prophet_logb_profile(prophet_comm_t *c);
void prophet_logb_plan(prophet_comm_t *c, uint64_t from_iter, const prophet_plan_t *p);
void prophet_logb_net(prophet_comm_t *c, double probe_Bps);
void prophet_logb_close(prophet_comm_t *c);

const char *prophet_dtype_name(ncclDataType_t t);
size_t prophet_dtype_size(ncclDataType_t t);

#endif
