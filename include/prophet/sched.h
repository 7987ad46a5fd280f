/* The scheduling core (sched/): pure C, no CUDA, NCCL, BPF or I/O.
 * Conventions: functions return 0 on success and a negative errno-style code on failure
 * (-EINVAL bad argument, -ENOMEM); constructors return NULL on failure. Times are microseconds
 * (int64_t for instants on CLOCK_MONOTONIC, double for durations). */
#ifndef PROPHET_SCHED_H
#define PROPHET_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "prophet/config.h"

#define PROPHET_MAX_CALLS 4096 /* schedulable calls per iteration */

/* ---- what the interposer observes, in program order ------------------------------------ */
typedef struct prophet_call_sig {
    uint64_t comm_id; /* same on every rank: creation order of the communicator in the process */
    uint64_t count;
    int32_t dtype; /* ncclDataType_t */
    int32_t op;    /* ncclRedOp_t */
    uint64_t bytes;
} prophet_call_sig_t;

/* ---- profile learner -------------------------------------------------------------------- */
typedef struct prophet_learner prophet_learner_t;

typedef struct prophet_learner_opts {
    uint32_t learn_iters; /* complete iterations observed before the profile is ready (>= 2) */
    uint32_t max_calls;   /* <= PROPHET_MAX_CALLS */
} prophet_learner_opts_t;

/* Flags returned by prophet_learner_observe(). */
#define PROPHET_LEARN_ITER_START 0x1 /* this call is the first of an iteration */
#define PROPHET_LEARN_READY 0x2      /* the profile just became ready (or was refreshed) */
#define PROPHET_LEARN_RELEARN 0x4    /* the sequence changed: profile dropped, learning again */

typedef struct prophet_step {
    uint32_t first, last; /* call indices, inclusive */
    double ready_us;      /* offset of the step's last gradient from the iteration's first call */
    double gap_after_us;  /* gap until the next step's ready time (0 for the last step) */
} prophet_step_t;

typedef struct prophet_profile {
    uint32_t n_calls;
    prophet_call_sig_t sig[PROPHET_MAX_CALLS];
    double ready_us[PROPHET_MAX_CALLS];   /* robust (median) readiness offset from the first call */
    double spread_us[PROPHET_MAX_CALLS];  /* robust spread (MAD) of that offset */
    uint32_t priority[PROPHET_MAX_CALLS]; /* 0 = most urgent (needed first by the next forward) */
    uint32_t n_steps;
    prophet_step_t steps[PROPHET_MAX_CALLS];
    double iteration_us; /* median time between iteration starts */
    double forward_us;   /* estimated: iteration start to first gradient ready (0 if unknown) */
    uint32_t iterations_seen;
    /* Added by sched/: end of the backward pass on the ready_us clock (the simulator uses
     * max(backward_us, last ready)); a learned profile sets it to the last call's offset. */
    double backward_us;
} prophet_profile_t;

prophet_learner_t *prophet_learner_new(const prophet_learner_opts_t *opts);
void prophet_learner_free(prophet_learner_t *l);
/* Feeds one intercepted schedulable call in program order. ready_us is when its inputs were ready
 * (GPU-side timestamp when known, else host arrival); it may be supplied later with
 * prophet_learner_set_ready() (events complete asynchronously) and then should be passed as -1.
 * Returns PROPHET_LEARN_* flags (>= 0) or a negative error. *index receives the call's index within
 * its iteration (or UINT32_MAX while the iteration length is unknown). Boundaries depend only on
 * the sequence of signatures, never on time, so every rank finds the same ones. */
int prophet_learner_observe(prophet_learner_t *l, const prophet_call_sig_t *sig, int64_t ready_us,
                            uint32_t *index);
/* Returns 0, -EINVAL (bad argument), or -ENOENT when that iteration/index is not (or no longer)
 * tracked, which is harmless: the sample is dropped. `iteration` is prophet_learner_iteration()
 * read right after the call was observed. */
int prophet_learner_set_ready(prophet_learner_t *l, uint64_t iteration, uint32_t index,
                              int64_t ready_us);
uint64_t prophet_learner_iteration(const prophet_learner_t *l); /* current iteration number */
/* The learned profile, NULL while not ready. */
const prophet_profile_t *prophet_learner_profile(const prophet_learner_t *l);
/* How the locked period's phase (which call has index 0) was placed: PROPHET_LEARN_ANCHOR_BYTES
 * when every boundary has a whole number of periods' bytes before it since the first call ever
 * observed (the normal case, DDP's different first iteration included), PROPHET_LEARN_ANCHOR_CALLS
 * when no call does but the first call's period differs only in sizes (a whole number of periods'
 * calls before every boundary), 0 while no period is locked or when neither rule applies (the lock
 * is kept, boundaries at the start of the periodic run; they may sit mid-iteration). A function of
 * the signature sequence only, like the boundaries. */
#define PROPHET_LEARN_ANCHOR_BYTES 1
#define PROPHET_LEARN_ANCHOR_CALLS 2
int prophet_learner_anchored(const prophet_learner_t *l);
/* A lock anchored by bytes that lasted this many iterations is trusted: when it breaks (the job
 * changed its sequence), the next lock's phase is counted from its last iteration start. */
#define PROPHET_LEARN_TRUSTED_ITERS 16

/* Step detection on a readiness vector (exposed for tests and the simulator). Prophet's rule: a
 * boundary where the gap to the next gradient exceeds `factor` times the mean gap. */
int prophet_steps_detect(const double *ready_us, uint32_t n, double factor, prophet_step_t *steps,
                         uint32_t *n_steps);
/* The rule the learner uses: gaps on a log scale (1 us floor) split into within-step and
 * between-step classes by the threshold of largest between-class variance (Otsu), accepted only
 * when the classes' median gaps differ by at least `factor`. One huge gap does not hide the
 * others (it does with the mean rule). Same outputs and errors as prophet_steps_detect. */
int prophet_steps_detect_robust(const double *ready_us, uint32_t n, double factor,
                                prophet_step_t *steps, uint32_t *n_steps);

/* ---- network model ---------------------------------------------------------------------- */
typedef struct prophet_netmodel prophet_netmodel_t;

typedef enum prophet_net_source {
    PROPHET_NET_DEFAULT = 0, /* nothing measured yet: built-in guess */
    PROPHET_NET_FITTED,      /* fitted from completed NCCL operations */
    PROPHET_NET_EBPF,        /* bandwidth informed by the eBPF probe */
    PROPHET_NET_FIXED,       /* PROPHET_BANDWIDTH / PROPHET_ALPHA_US */
} prophet_net_source_t;

typedef struct prophet_net {
    double alpha_us;      /* per-operation cost */
    double bandwidth_Bps; /* bytes of all-reduce payload per second (algorithm bandwidth) */
    prophet_net_source_t source;
} prophet_net_t;

prophet_netmodel_t *prophet_netmodel_new(const prophet_net_t *initial);
void prophet_netmodel_free(prophet_netmodel_t *m);
/* Pins alpha (>= 0; < 0 = keep fitting it) and/or the bandwidth (> 0; 0 = keep fitting it):
 * PROPHET_ALPHA_US / PROPHET_BANDWIDTH. A model created with source PROPHET_NET_FIXED pins both. */
int prophet_netmodel_fix(prophet_netmodel_t *m, double alpha_us, double bandwidth_Bps);
/* A completed operation (or block) of `bytes` payload that took `dur_us`, `n_ops` NCCL ops fused.
 * bandwidth_Bps everywhere in sched/ is all-reduce payload bytes per second (algorithm
 * bandwidth); probe samples must be converted to that unit by the caller. */
int prophet_netmodel_observe(prophet_netmodel_t *m, uint64_t bytes, uint32_t n_ops, double dur_us);
/* Live throughput from the probe, bytes/s, at time t_us. */
int prophet_netmodel_probe(prophet_netmodel_t *m, double bps, int64_t t_us);
void prophet_netmodel_get(const prophet_netmodel_t *m, prophet_net_t *out);
/* 1 once after the bandwidth moved enough to re-plan (the flag is cleared by reading it). */
int prophet_netmodel_changed(prophet_netmodel_t *m);

/* ---- plans and planners ----------------------------------------------------------------- */
typedef struct prophet_plan {
    uint32_t version; /* increases with every new plan */
    prophet_policy_t policy;
    uint32_t n_calls; /* must equal the profile's n_calls to apply */
    uint32_t n_blocks;
    uint32_t block_first[PROPHET_MAX_CALLS]; /* index of each block's first call, ascending */
    double predicted_iteration_us;
    uint64_t sig_hash; /* hash of the profile's signature sequence it was made for */
} prophet_plan_t;

typedef struct prophet_planner_opts {
    prophet_policy_t policy;
    uint64_t fusion_bytes;
    uint32_t cycle_us;
    uint64_t bucket_bytes;
    uint64_t credit_bytes;
    uint32_t ranks;
} prophet_planner_opts_t;

/* Blocks are always runs of consecutive calls (program order on one stream). */
int prophet_plan_make(const prophet_planner_opts_t *opts, const prophet_profile_t *profile,
                      const prophet_net_t *net, prophet_plan_t *out);
/* The policy that measurements show best, used when PROPHET_POLICY is unset. */
prophet_policy_t prophet_policy_default(void);
uint64_t prophet_sig_hash(const prophet_call_sig_t *sig, uint32_t n);

/* Fixed-size wire form for the plan broadcast; returns bytes written or negative. */
#define PROPHET_PLAN_WIRE_BYTES (64 + 4 * PROPHET_MAX_CALLS)
int prophet_plan_pack(const prophet_plan_t *plan, void *buf, size_t len);
int prophet_plan_unpack(prophet_plan_t *plan, const void *buf, size_t len);

/* ---- release engine --------------------------------------------------------------------- */
/* Maps program-order call indices to blocks. Pure: decisions are a function of the index only. */
typedef struct prophet_engine prophet_engine_t;
prophet_engine_t *prophet_engine_new(void);
void prophet_engine_free(prophet_engine_t *e);
/* Installs the plan used from now on (NULL = the built-in policy: every call its own block). */
int prophet_engine_set_plan(prophet_engine_t *e, const prophet_plan_t *plan);
/* 1 if call `index` closes its block (release the pending block now), 0 if it should be held. */
int prophet_engine_closes_block(const prophet_engine_t *e, uint32_t index);
uint32_t prophet_engine_block_of(const prophet_engine_t *e, uint32_t index);

/* ---- simulator -------------------------------------------------------------------------- */
/* Algorithm bandwidth of a ring all-reduce over links of link_Bps: L * N / (2 (N - 1)). */
double prophet_ring_algbw(double link_Bps, uint32_t ranks);

typedef struct prophet_sim_opts {
    uint32_t ranks;     /* informational: net->bandwidth_Bps is already the algorithm bandwidth */
    int wait_per_layer; /* 1: layer i's next forward waits only for gradient i */
} prophet_sim_opts_t;

typedef struct prophet_sim_result {
    double iteration_us;
    double comm_busy_us;
    uint32_t n_blocks;
} prophet_sim_result_t;

/* Predicted iteration time of `plan` on `profile` (ready offsets, forward_us) over `net`.
 * An all-reduce block of B bytes costs alpha + B / bandwidth; blocks run in order, each starting at
 * max(previous end, its last member ready). */
int prophet_sim_run(const prophet_sim_opts_t *opts, const prophet_profile_t *profile,
                    const prophet_net_t *net, const prophet_plan_t *plan,
                    prophet_sim_result_t *out);

/* Loads a prophet-profile/1 JSON text into a profile (ready_us from the file). errbuf gets a
 * one-line reason on failure. (jansson is allowed in sched/.) */
int prophet_profile_from_json(const char *text, size_t len, prophet_profile_t *out, char *errbuf,
                              size_t errlen);

#endif
