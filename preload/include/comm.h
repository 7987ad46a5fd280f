/* The per-communicator state, prophet_comm_t, grouped by concern (each group says which file
 * writes it): types only, included by every wing that reads a comm (as NCCL's src/include/comm.h
 * is). Its primitives (registry, event pool, release of GPU resources and models, summary) are
 * engine/comm_state.c's. */
#ifndef PROPHET_COMM_H
#define PROPHET_COMM_H

#include <cuda.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "prophet/sched.h"
#include "route_reason.h"

#define PROPHET_BLOCK_MAX PROPHET_PLAN_BLOCK_MAX /* members of one block at most (64) */

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
    int measure; /* hold mode: its ready event is a true readiness sample (feed the learner) */
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
    int on_stream; /* a member has no ready event (a local failure): launch the block on the
                    * members' stream, as the same group (release.c's fallback) */
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

/* The GPU side of a comm. Made by comm_life.c's setup; the gate generation advances in release.c;
 * the event pool is comm_state.c's (prophet_comm_event_get/put); X and the pooled events are
 * released by comm_state.c (prophet_comm_gpu_release, from the poller after retire). */
typedef struct prophet_comm_gpu {
    CUcontext ctx;
    CUstream internal_stream; /* X: released blocks, plan broadcasts, gate writes */
    uint32_t *gate_host;      /* [0]: gate generation, device-mapped */
    CUdeviceptr gate_dev;
    uint32_t gate_gen;
    CUevent base_event; /* a base event per comm to convert GPU times to host instants */
    int64_t base_us;
    CUevent *event_pool;
    uint32_t event_pool_n, event_pool_cap;
} prophet_comm_gpu_t;

/* Plan agreement: agreement.c's. The buffers are mapped by comm_life.c's setup; schedule.c
 * resets the schedule when the learner relearns and sets the first agreement in hold mode. */
typedef struct prophet_comm_agree {
    void *plan_host; /* PROPHET_PLAN_WIRE_BYTES, device-mapped */
    CUdeviceptr plan_dev;
    CUevent plan_event;
    int plan_pending; /* a broadcast is in flight, to apply at plan_apply_iter */
    uint64_t plan_apply_iter;
    uint64_t next_agree_iter;
    uint32_t plan_version;
    uint32_t agree_n; /* program-order data of the broadcast iteration */
    uint64_t agree_hash;
    int have_plan;     /* an agreed plan is installed in the engine */
    int plan_event_ok; /* plan_event was recorded behind the pending broadcast */
} prophet_comm_agree_t;

/* The sched/ models. Made by comm_life.c's setup, freed at retire (comm_state.c); the learner is
 * fed by schedule.c (signatures) and readiness_poller.c (readiness), the net model by
 * readiness_poller.c, the engine's plan set by agreement.c. */
typedef struct prophet_comm_models {
    prophet_learner_t *learner;
    prophet_netmodel_t *net;
    prophet_engine_t *engine;
    int64_t net_prev_complete_us; /* readiness_poller.c only: completion of the previous block */
} prophet_comm_models_t;

/* Program-order bookkeeping: schedule.c's alone (release.c advances block_number). */
typedef struct prophet_comm_order {
    int measuring;           /* hold mode: this iteration measures readiness */
    uint32_t measure_phase;  /* chunk offset of this measurement iteration */
    uint32_t measured_iters; /* measurement iterations since the last relearn */
    uint32_t iter_len;       /* calls per iteration once the profile is ready, else 0 */
    uint32_t stable_iters;   /* iteration starts since the learner's last relearn */
    uint64_t iter_bytes;     /* bytes of one learned iteration */
    int phase_ok;        /* the learned boundary is a whole number of iterations from the start */
    uint32_t last_index; /* index of the previous observed call */
    uint32_t block_number;
    uint32_t seq_n; /* signature sequence of the current and last complete iteration */
    uint64_t seq_hash_last;
    uint32_t seq_n_last;
    prophet_call_sig_t *seq; /* PROPHET_MAX_CALLS */
    /* since the last agreed plan (schedule.c, "unsettled"): calls the learner saw while it
     * searched for the iteration, lock breaks, and once unsettled, calls that were not held */
    uint32_t unplanned_search;
    uint32_t unplanned_relearns;
    int unsettled;
    uint64_t unsettled_calls;
} prophet_comm_order_t;

/* Calls held and launched: schedule.c adds to the pending block, release.c launches it and hands
 * the record to readiness_poller.c (the inflight list), comm_life.c drops it on Abort/Revoke. */
typedef struct prophet_comm_blocks {
    prophet_block_t pending;
    prophet_inflight_t *inflight_head, *inflight_tail;
    prophet_inflight_t *spare; /* one-member records for reuse (comm_state.c) */
    uint32_t spare_n;
} prophet_comm_blocks_t;

/* Rank 0: an event recorded at an iteration's first call, on its stream. The GPU time between two
 * consecutive marks is the iteration's time as the GPU ran it, under the plan that scheduled its
 * calls, however far the host ran ahead (iteration_samples.c). */
#define PROPHET_LOOP_MARKS 16
typedef struct prophet_loop_mark {
    CUevent ev; /* NULL: none recorded (the host instant stands in) */
    uint64_t iteration;
    int64_t host_us; /* the host instant of the first call */
    uint32_t cand;   /* the candidate in force for the iteration */
    int clean;       /* the iteration is a sample (set at its end: an extra call clears it) */
} prophet_loop_mark_t;

/* The closed loop (iteration_samples.c): which candidate's plan is in force, whether it holds
 * nothing, and on rank 0 the trials and the iteration times that feed them. */
typedef struct prophet_comm_loop {
    prophet_closed_loop_t *cl; /* rank 0 under the closed loop (sched/closed_loop.c), else NULL */
    uint32_t in_force;         /* candidate of the plan in force, PROPHET_CAND_NONE */
    int direct;                /* the plan in force is passthrough: calls go straight to NCCL */
    int chosen;                /* the plan in force is the one the last trials kept */
    uint32_t kept_cand;        /* candidate of the last kept plan installed (PROPHET_CAND_NONE) */
    uint64_t agree_iter;       /* iteration of the last plan broadcast */
    int64_t iter_start_us;     /* rank 0: first call of the current iteration (0: none) */
    int iter_clean;            /* rank 0: the current iteration's time is a sample */
    uint32_t iter_cand;        /* rank 0: the candidate in force during it */
    prophet_loop_mark_t marks[PROPHET_LOOP_MARKS]; /* rank 0: the iterations not yet timed */
    uint32_t mark_head, mark_n;
} prophet_comm_loop_t;

typedef struct prophet_stats {
    uint64_t calls;     /* intercepted calls on the communicator (all kinds) */
    uint64_t scheduled; /* all-reduces held and released by the scheduler */
    uint64_t blocks;    /* blocks released on the internal stream */
    uint64_t blocks_multi;
    uint64_t block_members;
    uint64_t plans; /* plans agreed (installed) */
    uint64_t plan_rejects;
    uint64_t stall_warnings;
    uint64_t passthrough; /* calls passed through (every call in observe mode) */
    uint64_t observed;    /* calls passed through between events of ours (observed) */
    uint64_t extras;      /* calls outside the learned iteration (PROPHET_LEARN_EXTRA) */
    uint64_t iters;       /* iterations begun under an agreed plan */
    uint64_t trial_iters; /* ... of them under a trial plan other than the kept one */
    uint64_t route[PROPHET_WHY_COUNT]; /* all-reduces routed, per reason (schedule.c) */
} prophet_stats_t;

typedef struct prophet_comm {
    /* identity and status: comm_state.c at creation; `setup` is comm_life.c's; `passthrough` is
     * set by whichever module meets an error of its own (prophet_comm_fail: one WARN) */
    pthread_mutex_t lock;
    ncclComm_t handle;
    uint64_t id; /* creation order in the process: the same on every rank */
    int rank, nranks;
    _Atomic int alive;
    /* holding/hold_gates.c: the newest block generation a GPU gate was placed for (a consumer
     * queued on the GPU behind that block); the stall guard warns only about a block the GPU waits
     * for */
    _Atomic uint32_t gated_gen;
    int blocking;          /* from the config at creation (non-blocking comms pass through) */
    int setup;             /* 0 not yet, 1 done, -1 failed (passthrough) */
    int passthrough;       /* scheduling off for this comm: set where every rank does the same (the
                            * setup vote, non-blocking, a sticky error), never by one rank alone */
    uint32_t local_faults; /* failures handled on this rank alone (prophet_comm_fail) */
    ncclResult_t error;    /* sticky: a failure no rank could handle alone (prophet_comm_error);
                            * every later call on the comm returns it, none is issued */
    int summary_done;

    prophet_comm_gpu_t gpu;
    prophet_comm_agree_t agree;
    prophet_comm_models_t models;
    prophet_comm_order_t order;
    prophet_comm_blocks_t blocks;
    prophet_comm_loop_t loop;

    void *log;             /* log_bridge.c: prophet_log_writer_t * when PROPHET_LOG is set */
    prophet_stats_t stats; /* counters, written by the module that counts */
    struct prophet_comm *next_all; /* every comm ever made (never freed: the poller walks it) */
} prophet_comm_t;

#endif
