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
/* A block never has more members than this: the preload's cap (preload/engine/comm_state.h,
 * PROPHET_BLOCK_MAX). Every planner respects it, so a plan block is released as planned. */
#define PROPHET_PLAN_BLOCK_MAX 64

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
#define PROPHET_LEARN_EXTRA 0x8      /* locked, a call outside the iteration (index UINT32_MAX) */
/* Extras: while a period is locked, a call that is not the next call of the iteration is the
 * job's extra call (a loss or metric all-reduce every k steps, an evaluation phase, a barrier)
 * and leaves the lock in place, as long as the extras since the current iteration began carry at
 * most 1/PROPHET_LEARN_EXTRA_SHARE of an iteration's bytes and number at most
 * PROPHET_LEARN_EXTRA_CALLS. Past either bound the iteration itself changed: the lock breaks
 * (PROPHET_LEARN_RELEARN). */
#define PROPHET_LEARN_EXTRA_SHARE 8
#define PROPHET_LEARN_EXTRA_CALLS 65536
/* A call before a lock that carries less than 1/PROPHET_LEARN_TINY of an iteration's bytes and is
 * not one of the iteration's calls is left out of the bytes that anchor the phase. */
#define PROPHET_LEARN_TINY 1024

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
/* ... or PROPHET_LEARN_ANCHOR_TEMPLATE: the template of a trusted lock that broke came back, in
 * the phase it had (as sure a boundary as a bytes anchor). */
#define PROPHET_LEARN_ANCHOR_TEMPLATE 3
int prophet_learner_anchored(const prophet_learner_t *l);
/* A lock anchored by bytes (or by a kept template) that lasted this many iterations is trusted:
 * when it breaks (the job changed its sequence), the next lock's phase is counted from its last
 * iteration start, and its template is kept rather than rejected (it may come back). */
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
void prophet_netmodel_get(prophet_netmodel_t *m, prophet_net_t *out); /* fits first if needed */
/* 1 once after the bandwidth moved enough to re-plan (the flag is cleared by reading it). */
int prophet_netmodel_changed(prophet_netmodel_t *m);

/* ---- plans and planners ----------------------------------------------------------------- */
/* The closed loop (sched/trials.c) tags each agreed plan with its place in the trials. */
typedef enum prophet_trial_phase {
    PROPHET_TRIAL_OFF = 0, /* a fixed policy (PROPHET_POLICY given, or observe mode) */
    PROPHET_TRIAL_RUNNING, /* the plan is a candidate being timed */
    PROPHET_TRIAL_CHOSEN,  /* the plan is the candidate the last trials kept */
} prophet_trial_phase_t;

typedef struct prophet_plan_trial {
    uint32_t phase;          /* prophet_trial_phase_t */
    uint32_t candidate;      /* PROPHET_CAND_* this plan was made as */
    uint32_t round;          /* trial round (1 = the first; a drift starts the next) */
    uint32_t next_in;        /* iterations from this agreement to the next (0: the default) */
    uint32_t judged;         /* candidate whose trial window closed at this agreement, or NONE */
    uint32_t judged_samples; /* clean iteration times in that window */
    uint32_t judged_us;      /* their median, microseconds */
    uint32_t chosen_us;      /* CHOSEN: the kept candidate's trial figure, microseconds */
} prophet_plan_trial_t;

typedef struct prophet_plan {
    uint32_t version; /* increases with every new plan */
    prophet_policy_t policy;
    uint32_t n_calls; /* must equal the profile's n_calls to apply */
    uint32_t n_blocks;
    uint32_t block_first[PROPHET_MAX_CALLS]; /* index of each block's first call, ascending */
    double predicted_iteration_us;
    uint64_t sig_hash;          /* hash of the profile's signature sequence it was made for */
    prophet_plan_trial_t trial; /* closed loop (zero: PROPHET_TRIAL_OFF) */
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

/* ---- closed loop: plans judged by the iteration time they measure (trials.c) ------------- */
/* Candidates, in the order a trial round tries them and, for equal figures, cheapest last but
 * passthrough first (see prophet_trials_choose). */
typedef enum prophet_cand {
    PROPHET_CAND_OPTIMAL = 0,    /* the DP optimum under the fitted model */
    PROPHET_CAND_PASSTHROUGH,    /* hold nothing */
    PROPHET_CAND_PROPHET,        /* Prophet's rule */
    PROPHET_CAND_FUSION,         /* Horovod-style fusion */
    PROPHET_CAND_BUCKETS,        /* DDP-style buckets */
    PROPHET_CAND_OPTIMAL_ALPHA4, /* the DP optimum with 4x the fitted alpha (launches dearer) */
    PROPHET_CAND_OPTIMAL_BW2,    /* the DP optimum with half the fitted bandwidth */
    PROPHET_CAND_COUNT,
    PROPHET_CAND_NONE = 255
} prophet_cand_t;

/* Iterations between agreements while a round runs: a candidate is in force from agreement K + 2
 * to K + PROPHET_TRIAL_WINDOW + 2; its iterations from K + 2 on that are clean (no broadcast, no
 * measurement iteration, no extra call) and whose GPU time is known by the next agreement are its
 * samples, their median its figure. An iteration's GPU time is known once the next iteration's
 * mark fired, at the earliest at the start of the iteration after that: 7 gives K + 2 .. K + 5
 * with a host that synchronises every step (6 gave 3 samples, 2 when one was a measurement
 * iteration, and most candidates needed a second window). */
#define PROPHET_TRIAL_WINDOW 7
#define PROPHET_TRIAL_MIN_SAMPLES 3 /* fewer: the candidate gets one more window */
#define PROPHET_TRIAL_MAX_WINDOWS 2 /* ... at most; then judged on what it has (none: skipped) */
#define PROPHET_TRIAL_TIE 0.02      /* passthrough is kept unless beaten by more than 2% */
/* ... and by more than the noise: PROPHET_TRIAL_NOISE_Z standard errors of the difference of the
 * two figures, each estimated from its window's samples (1.4826 x MAD / sqrt(samples)) */
#define PROPHET_TRIAL_NOISE_Z 2.0
#define PROPHET_TRIAL_CHECK_EVERY 10 /* iterations between agreements once a choice is made */
/* A kept passthrough holds nothing and has nothing to re-agree until something changes: its
 * agreements back off, each one twice as far from the last, up to PROPHET_TRIAL_CHECK_MAX
 * iterations, and come back to PROPHET_TRIAL_CHECK_EVERY while a drift builds up (under
 * passthrough, one of the iteration time with the bandwidth or the profile starts a round; a DDP
 * job at 4 ranks issued a plan broadcast every 10 iterations for nothing). */
#define PROPHET_TRIAL_CHECK_MAX 40
#define PROPHET_TRIAL_DRIFT_RECENT 5  /* samples in the baseline and in the median compared */
#define PROPHET_TRIAL_DRIFT_TIME 0.25 /* |median - baseline| / baseline: restarts trials */
/* ... and with it, one of these makes the round a full one (else the incumbent is re-timed) */
/* relative change of the network's bandwidth: the fit from NCCL operations' times moves by up to
 * 30% with a bursty host's load and its own alpha/bandwidth trade-off (the soak of
 * test/e2e/soak_trials.py: 65-115 MB/s around 87 at the agreements), and a link worth planning
 * again for changes by 2x or more */
#define PROPHET_TRIAL_DRIFT_NET 0.50
/* ... under a kept passthrough, where the preload hands in the eBPF throughput (no operation is
 * timed, so no fit moves): a slower link takes off only the share of the link the job used (a
 * link at a quarter: 69-77 MB/s to 29), and the host's bursts cost no full round of a held plan */
#define PROPHET_TRIAL_DRIFT_NET_DIRECT 0.30
#define PROPHET_TRIAL_DRIFT_PROFILE 0.25 /* relative change of the profile's backward span */
#define PROPHET_TRIAL_SAMPLES_MAX 32
/* Once a plan is kept (or passthrough is in force), the caller measures one iteration in this
 * many (the preload: PROPHET_SAMPLE_EVERY), so a reading of the profile's backward span comes that
 * often; a profile read out of step once waits up to 1.5 times this for its next reading. */
#define PROPHET_TRIAL_SAMPLE_EVERY 32
/* The network's bandwidth is watched only once the kept plan has been in force this long: the
 * bandwidth the plans are made from (the preload's network model: the fit over the last 64 NCCL
 * operations' times, raised to the eBPF throughput's peak of the last second) still carries the
 * trial windows before the choice for a while, as the eBPF rate does (smoothed over
 * PROPHET_BW_TAU_US, 0.5 s: after 3 time constants 5% of them is left). A baseline taken on the
 * way up read the rest of the climb as a drift: MobileNet-v2 per-tensor at 8 ranks (45 ms
 * iterations) started its trials again after every first round, 3 runs out of 3 at each link
 * speed. */
#define PROPHET_TRIAL_NET_SETTLE_US 1500000.0
#define PROPHET_TRIAL_DRIFT_LASTS 10 /* consecutive samples off a baseline that restart */
/* A drift that lasts shows in the median of the last PROPHET_TRIAL_DRIFT_RECENT samples after
 * RECENT / 2 + 1 of them, restarts after DRIFT_LASTS more, and the new round's first plan is in
 * force by the next agreement + 2: within this many clean iterations of the change (of the
 * bandwidth: of the change or of the end of PROPHET_TRIAL_NET_SETTLE_US, the later). A change
 * within the first RECENT samples after the choice moves their median off the kept plan's trial
 * figure, which becomes the iteration time's baseline (trials.c, time_baseline): it restarts by
 * sample RECENT + DRIFT_LASTS, RECENT - RECENT / 2 - 1 samples (2) later than this bound. */
#define PROPHET_TRIAL_DRIFT_BOUND                                                                  \
    (PROPHET_TRIAL_DRIFT_RECENT / 2 + 1 + PROPHET_TRIAL_DRIFT_LASTS + PROPHET_TRIAL_CHECK_EVERY + 2)
/* ... and under a kept passthrough, whose next agreement may be PROPHET_TRIAL_CHECK_MAX away */
#define PROPHET_TRIAL_DRIFT_BOUND_PT                                                               \
    (PROPHET_TRIAL_DRIFT_RECENT / 2 + 1 + PROPHET_TRIAL_DRIFT_LASTS + PROPHET_TRIAL_CHECK_MAX + 2)
/* The paired duel that ends a round (figures measured minutes apart on a busy host cannot be
 * compared). The first pass's leader (the challenger) is timed in windows that
 * alternate with a defender's: the incumbent (the plan kept before the round) when there is one
 * and it is not the leader, else passthrough; defender first. Each pair gives the relative
 * difference challenger / defender - 1 of two window figures taken side by side, so the host's
 * slow drift cancels out, and a sequential test stops as soon as the answer is clear. (The
 * first pass's leader is its lowest figure, passthrough on an equal one: the defender's
 * preference is the duel's, not a noise allowance on figures taken minutes apart.)
 * - after PROPHET_TRIAL_PAIRS_MIN pairs, the challenger wins when the mean difference plus
 *   PROPHET_TRIAL_PAIR_T[n] standard errors of it (a one-sided 95% Student t) is below -TIE (it is
 *   faster by more than the tie), and the defender wins when the mean minus as much is above
 *   -TIE;
 * - after one pair, only a defender that is clearly ahead wins (the challenger slower by more
 *   than PROPHET_TRIAL_PAIR_CLEAR, beyond NOISE_Z standard errors of the two windows' samples);
 * - after PROPHET_TRIAL_PAIRS_MAX pairs (or as many judged windows twice over) the defender wins:
 *   a challenger replaces the plan in force only when it is faster by more than the noise;
 * - in a re-time, the incumbent also wins once passthrough was slower by more than the tie in each
 *   of PROPHET_TRIAL_PAIRS_MIN pairs or more (sched/trials.c, retime_futile).
 * A leader that won and had a runner-up in the first pass within PROPHET_TRIAL_NEAR of it
 * defends against that runner-up in a second duel, its window that ended the first duel
 * counting as the second's first defender window (among plans that all beat passthrough, which
 * one led a pass of a few samples each is noise: ResNet-50 per-tensor at 8 ranks kept buckets on
 * 153 ms where optimal, 2 ms behind in the first pass, ran at 128 ms); that duel's cap is
 * PROPHET_TRIAL_PAIRS_MIN pairs (both plans beat the plan in force; the stake is small). The window
 * figures a duel compares are rounded to the microsecond, as the log carries them
 * (test/e2e/check_plan.py replays every duel from the log). */
#define PROPHET_TRIAL_PAIRS_MIN 2
#define PROPHET_TRIAL_PAIRS_MAX 4
#define PROPHET_TRIAL_PAIR_CLEAR 0.25
#define PROPHET_TRIAL_NEAR 0.10
/* A round ends within this many iterations of its first agreement: a re-time duel that the
 * incumbent lost, every candidate's first window and its second, the leader's duel and the
 * runner-up's, each window of a duel needing its second, plus the agreement that announces the
 * choice. */
#define PROPHET_TRIAL_DUEL_SLOTS (2 * PROPHET_TRIAL_PAIRS_MAX)
#define PROPHET_TRIAL_ROUND_BOUND                                                                  \
    ((PROPHET_CAND_COUNT + 2 * PROPHET_TRIAL_DUEL_SLOTS + 2 * PROPHET_TRIAL_PAIRS_MIN) *           \
         PROPHET_TRIAL_MAX_WINDOWS * PROPHET_TRIAL_WINDOW +                                        \
     2)

/* What a duel is for (prophet_trials_t.duel.kind). */
#define PROPHET_DUEL_NONE 0
#define PROPHET_DUEL_LEADER 1 /* the first pass's leader against the incumbent or passthrough */
#define PROPHET_DUEL_RUNNER 2 /* the runner-up near the leader against the leader that won */
#define PROPHET_DUEL_RETIME                                                                        \
    3 /* passthrough against the incumbent, after the time drifted alone                           \
       */

/* Readings of the profile's backward span in its baseline (one at each of the first measurement
 * iterations under the kept plan; their medians). */
#define PROPHET_TRIAL_PROFILE_BASE 3

/* The trials' state, by concern. Each sub-struct is one part of the closed loop's state machine
 * (sched/trials.c): the window being timed, the first pass, the duel running, the plan kept, the
 * drift watch over it and the profile's readings. */

/* The window of the candidate being timed (a first-pass window or a duel's). */
typedef struct prophet_trials_window {
    uint32_t windows;                     /* windows the current candidate had */
    double us[PROPHET_TRIAL_SAMPLES_MAX]; /* the current window's samples */
    uint32_t n;
} prophet_trials_window_t;

/* The first pass: every candidate of the round timed once, in trial order. */
typedef struct prophet_trials_pass {
    uint32_t order[PROPHET_CAND_COUNT], n_order, pos; /* the candidates; the one timed */
    double fig[PROPHET_CAND_COUNT];                   /* median iteration time, < 0 untried */
    uint32_t nfig[PROPHET_CAND_COUNT];                /* ... and its samples */
    uint32_t runner;                                  /* the runner-up near the leader, or NONE */
    uint32_t last;  /* the last candidate timed (the defender-to-be), or NONE */
    double last_se; /* the standard error of its window's figure */
} prophet_trials_pass_t;

/* The duel running (kind != PROPHET_DUEL_NONE): challenger and defender in alternating windows. */
typedef struct prophet_trials_duel {
    uint32_t kind;     /* PROPHET_DUEL_* */
    uint32_t c, d;     /* challenger, defender */
    uint32_t pairs;    /* pairs compared */
    uint32_t slots;    /* windows judged in this duel */
    double d_us, d_se; /* the defender's last window (< 0: none pending), its std error */
    double cf[PROPHET_TRIAL_PAIRS_MAX], df[PROPHET_TRIAL_PAIRS_MAX]; /* the pairs */
    double pair1_se; /* the first pair's standard error from its windows' samples */
    double c_se;     /* the standard error of the challenger's last window */
    int begun;       /* set when a duel begins; cleared by the caller that logs it */
} prophet_trials_duel_t;

/* The plan a round kept, and the one kept before it. */
typedef struct prophet_trials_kept {
    uint32_t chosen;    /* the candidate kept (NONE: none yet) */
    double chosen_us;   /* its figure (median of its duel windows) */
    double since_us;    /* iteration time summed since the choice */
    uint32_t incumbent; /* the plan kept before this round (PROPHET_CAND_NONE: first round);
                         * passthrough once it beat the incumbent in a re-time */
    uint32_t before;    /* the candidate kept before this round, for drift.calm */
} prophet_trials_kept_t;

/* The drift watch over the kept plan: its baselines, the last samples, and what a drift starts. */
typedef struct prophet_trials_drift {
    double base_us, base_net; /* baselines under the kept plan (< 0 until taken) */
    double base_ref_us;       /* the figure the time baseline is checked against (time_baseline) */
    double recent[PROPHET_TRIAL_DRIFT_RECENT], recent_net[PROPHET_TRIAL_DRIFT_RECENT];
    uint32_t n_recent, n_recent_net;
    uint32_t run;          /* consecutive samples off a baseline */
    uint32_t sigs;         /* PROPHET_DRIFT_* bits off at that run's latest sample */
    int restart;           /* a drift was seen: the next agreement begins a new round */
    const char *reason;    /* what drifted (prophet_drift_name of the run's signals) */
    int time_only;         /* the restart's drift was the iteration time's alone: a re-time */
    int rebased;           /* a time drift under a kept passthrough: new baselines, no round */
    uint32_t calm;         /* restarts in a row that kept the incumbent */
    uint32_t quiet_checks; /* agreements of a kept passthrough with no drift building */
} prophet_trials_drift_t;

/* The profile's backward span, read at the measurement iterations (sched/trials.c,
 * profile_read): its baseline's readings, and a share of the iteration time for each. */
typedef struct prophet_trials_profile {
    double base[PROPHET_TRIAL_PROFILE_BASE], base_share[PROPHET_TRIAL_PROFILE_BASE];
    uint32_t n_base;
    double ref_backward; /* the baseline's span (median of its readings) */
    double ref_share;    /* the baseline's span as a share of the iteration time (median) */
    double last;         /* the span read last (a reading: a span other than the one before) */
    double cur_share;    /* ... its share of the iteration time (median of the last samples) */
    int cur_off;         /* ... out of step with its baseline */
    uint32_t off_before; /* consecutive readings out of step before it */
} prophet_trials_profile_t;

typedef struct prophet_trials {
    uint32_t phase;                /* prophet_trial_phase_t; OFF until the first round begins */
    uint32_t round;                /* rounds begun */
    uint32_t current;              /* the candidate being timed (or kept) */
    prophet_trials_window_t win;   /* the window being timed */
    prophet_trials_pass_t pass;    /* the round's first pass */
    prophet_trials_duel_t duel;    /* the duel running, if any */
    prophet_trials_kept_t kept;    /* the plan kept, and the one before it */
    prophet_trials_drift_t drift;  /* the drift watch over the kept plan */
    prophet_trials_profile_t prof; /* the profile's backward span against its baseline */
} prophet_trials_t;
/* After each restart in a row that kept the incumbent, a drift must last twice as long before it
 * restarts the trials again, up to 2^PROPHET_TRIAL_CALM_MAX times PROPHET_TRIAL_DRIFT_LASTS. */
#define PROPHET_TRIAL_CALM_MAX 4
uint32_t prophet_trials_drift_lasts(const prophet_trials_t *t);

const char *prophet_cand_name(uint32_t cand); /* "optimal", ..., "none" */
/* The signals a drift check watches (prophet_trials_t.drift.sigs). */
#define PROPHET_DRIFT_TIME 1u    /* the kept plan's iteration time */
#define PROPHET_DRIFT_NET 2u     /* the network's bandwidth */
#define PROPHET_DRIFT_PROFILE 4u /* the profile's backward span */
/* "iteration time", "iteration time and profile", ...: the signals in sigs, for the logs. */
const char *prophet_drift_name(uint32_t sigs);
/* The candidate's plan: its policy (opts' other fields) under net, or under the altered net. */
int prophet_cand_plan(uint32_t cand, const prophet_planner_opts_t *opts,
                      const prophet_profile_t *profile, const prophet_net_t *net,
                      prophet_plan_t *out);
/* The order a round tries its candidates in (passthrough first, the DP optima last). */
extern const uint32_t prophet_trials_order[PROPHET_CAND_COUNT];
/* A new round's candidates, in trial order, into out (returns how many). plans has
 * PROPHET_CAND_COUNT + 1 entries: each candidate's plan is made now (prophet_cand_plan) from the
 * fit of the moment, but the incumbent's (inc, the candidate kept before; PROPHET_CAND_NONE in the
 * first round) is plans[PROPHET_CAND_COUNT], the plan as it was agreed, copied to plans[inc]:
 * never made again, never left out. A candidate whose plan partitions the calls like the
 * incumbent's or an earlier one's is one candidate with it: *alias gets bit c for each name
 * merged so. */
uint32_t prophet_trials_candidates(const prophet_planner_opts_t *po, const prophet_profile_t *prof,
                                   const prophet_net_t *net, prophet_plan_t *plans, uint32_t inc,
                                   uint32_t *out, uint32_t *alias);
/* Whether two plans partition the calls alike. */
int prophet_plan_same_blocks(const prophet_plan_t *a, const prophet_plan_t *b);
/* The candidate kept from measured figures (fig[c] < 0 or nfig[c] == 0: not measured): the
 * lowest figure, lower index on equal figures; but passthrough whenever its figure is within
 * `tie` of that plus PROPHET_TRIAL_NOISE_Z standard errors of the difference, from mad[] (the
 * samples' MAD; NULL: no noise) and nfig[] (holding costs the host something, holding nothing
 * costs nothing, and a gain the noise can explain is no gain). PROPHET_CAND_NONE when nothing
 * was measured. */
uint32_t prophet_trials_choose(const double *fig, const double *mad, const uint32_t *nfig,
                               uint32_t n, double tie);
/* One-sided 95% Student t quantiles by pairs compared (index n: n - 1 degrees of freedom). */
extern const double prophet_trials_pair_t[PROPHET_TRIAL_PAIRS_MAX + 1];
/* A duel's verdict from its n pairs of window figures (cf: the challenger's, df: the defender's)
 * and the first pair's standard error of the difference from its windows' samples (relative;
 * < 0: unknown): PROPHET_DUEL_CHALLENGER, PROPHET_DUEL_DEFENDER, or PROPHET_DUEL_GO_ON. The cap
 * (PROPHET_TRIAL_PAIRS_MAX) is the caller's. */
#define PROPHET_DUEL_GO_ON 0
#define PROPHET_DUEL_CHALLENGER 1
#define PROPHET_DUEL_DEFENDER 2
int prophet_trials_duel_verdict(const double *cf, const double *df, uint32_t n, double pair1_se);
void prophet_trials_init(prophet_trials_t *t);
/* 1 when the next agreement must begin a round (none yet, or a drift was seen). */
int prophet_trials_wants_round(const prophet_trials_t *t);
/* Begins a round over cands (distinct, in trial order; n >= 1): a first pass over them, then
 * the duels. A round restarted by a drift of the iteration time alone (drift.time_only) begins with
 * a re-time duel, passthrough against the incumbent: the incumbent still ahead is kept at once
 * (nothing else changed); passthrough ahead goes on with the first pass. The candidate kept
 * before (the incumbent; the caller hands in its plan as it was agreed, not made again) is in
 * every restarted round, added last if cands lacks it; a challenger replaces it only by winning
 * a duel against it. To drop the incumbent (the profile changed), set kept.chosen to
 * PROPHET_CAND_NONE before. */
int prophet_trials_begin(prophet_trials_t *t, const uint32_t *cands, uint32_t n);
/* One clean iteration time of candidate `in_force` (the candidate whose plan ran it), with the
 * network's bandwidth then (bytes/s, what the plans would be made from: the preload hands in its
 * network model's, or under a kept passthrough, which times no operation, the eBPF throughput,
 * judged by PROPHET_TRIAL_DRIFT_NET_DIRECT; < 0: none) and the profile's backward span (<= 0:
 * unknown). In a round, a sample of the candidate being timed joins its window; once chosen,
 * samples feed the drift check, which sets drift.restart. Returns PROPHET_TRIAL_SAMPLE_*. */
#define PROPHET_TRIAL_SAMPLE_IGNORED 0 /* not the candidate being timed, or not a figure */
#define PROPHET_TRIAL_SAMPLE_WINDOW 1  /* joined the window of the candidate being timed */
#define PROPHET_TRIAL_SAMPLE_DRIFT 2   /* fed the kept plan's drift check */
int prophet_trials_sample(prophet_trials_t *t, uint32_t in_force, double iter_us, double net_Bps,
                          double backward_us);
/* At an agreement: closes the current window and decides which candidate the next plan is,
 * filling *out (candidate, phase, round, next_in, the judged figure). */
void prophet_trials_decide(prophet_trials_t *t, prophet_plan_trial_t *out);

/* ---- the closed loop as one unit (closed_loop.c) ------------------------------------------
 * Measurements in, the plan to agree out. The caller (the preload's rank 0) times each iteration
 * and hands in the samples; at each agreement it asks for the plan to broadcast. The unit holds
 * the trials and every candidate's plan of the round, the incumbent's as it was agreed. Pure: no
 * clock, no CUDA, no logging; what happened is reported in prophet_loop_events_t for the caller
 * to log. test/sched/test_closed_loop.c drives it on traces (test/sched/loop_traces). */
typedef struct prophet_closed_loop prophet_closed_loop_t;

typedef struct prophet_loop_events {
    int round_begun;                    /* a round began at this agreement */
    uint32_t round;                     /* its number */
    uint32_t cands[PROPHET_CAND_COUNT]; /* its first pass, in order */
    uint32_t n_cands;
    uint32_t alias;              /* bit c: candidate c merged into one with the same blocks */
    uint32_t incumbent;          /* the plan kept before it, or PROPHET_CAND_NONE */
    int retime;                  /* it begins by re-timing the incumbent against passthrough */
    int duel_begun;              /* a duel began at this agreement */
    uint32_t duel_kind;          /* PROPHET_DUEL_* */
    uint32_t duel_c, duel_d;     /* challenger, defender */
    double duel_c_us, duel_d_us; /* their first-pass figures (< 0: none) */
} prophet_loop_events_t;

prophet_closed_loop_t *prophet_closed_loop_new(void);
void prophet_closed_loop_free(prophet_closed_loop_t *l);
/* The learner relearned: no round, no incumbent. */
void prophet_closed_loop_reset(prophet_closed_loop_t *l);
/* One clean iteration time of the candidate whose plan ran it (prophet_trials_sample). */
int prophet_closed_loop_sample(prophet_closed_loop_t *l, uint32_t cand, double iter_us,
                               double net_Bps, double backward_us);
/* What drifted since the last call (NULL: nothing); *restart: 1 when it starts trials at the next
 * agreement, 0 when passthrough was kept on new baselines (prophet_trials_t.drift.rebased). */
const char *prophet_closed_loop_drift(prophet_closed_loop_t *l, int *restart);
/* At an agreement: the plan to broadcast (its trial part filled), for the profile and the fitted
 * network of the moment. 0, or a negative errno (the caller then makes a plan without the loop). */
int prophet_closed_loop_plan(prophet_closed_loop_t *l, const prophet_planner_opts_t *po,
                             const prophet_profile_t *prof, const prophet_net_t *net,
                             prophet_plan_t *out, prophet_loop_events_t *ev);
/* The trials' state, read-only (tests, logs). */
const prophet_trials_t *prophet_closed_loop_trials(const prophet_closed_loop_t *l);

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
