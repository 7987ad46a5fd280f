/* Schedule-log records. The interposer fills them on the hot path (plain stores into a ring);
 * the writer (preload/log_writer.c) turns them into JSON off the hot path. Schema:
 * docs/log-schema.md. Field names below are the JSON keys. */
#ifndef PROPHET_LOG_H
#define PROPHET_LOG_H

#include <stdint.h>

#include "prophet/sched.h"

#define PROPHET_LOG_FORMAT "prophet-log/1"

/* One schedulable call of one iteration. Times are CLOCK_MONOTONIC microseconds; 0 = unknown. */
typedef struct prophet_log_call {
    uint64_t iteration;
    uint32_t index; /* position in the iteration */
    uint64_t comm_id;
    uint64_t bytes;
    uint32_t block;      /* block number within the iteration */
    int64_t arrival_us;  /* host: the intercepted call was made */
    int64_t ready_us;    /* GPU: its inputs were ready (ready event) */
    int64_t release_us;  /* host: its block was released (launched on the internal stream) */
    int64_t launch_us;   /* GPU: its block started on the internal stream */
    int64_t complete_us; /* GPU: its block completed (gate opened) */
    int32_t deferred;    /* 1 if held by the scheduler, 0 if passed through */
} prophet_log_call_t;

typedef struct prophet_log_writer prophet_log_writer_t;

/* Rank 0 under the closed loop: one iteration's time as a sample of the candidate that ran it. */
typedef struct prophet_log_sample {
    uint64_t iteration; /* the iteration timed */
    uint64_t taken_at;  /* the iteration at whose first call the time was known (and used) */
    uint32_t candidate; /* PROPHET_CAND_* in force for it */
    double us;          /* first call to the next iteration's first call */
    int gpu;            /* 1: between the GPU instants of the marks; 0: host instants */
    int use;            /* PROPHET_TRIAL_SAMPLE_*: what the trials did with it */
} prophet_log_sample_t;

typedef struct prophet_log_meta {
    int rank, nranks;
    int pid;
    const char *hostname;
    const char *nccl_version; /* e.g. "2.28.9" */
    const char *policy;
    const char *gate;
} prophet_log_meta_t;

/* Opens DIR/prophet-rank<R>.json (and .trace.json when trace). NULL + reason on failure. */
prophet_log_writer_t *prophet_log_open(const char *dir, const prophet_log_meta_t *meta,
                                       uint64_t iter_begin, uint64_t iter_end, int trace, char *why,
                                       int why_len);
/* Hot path: copies the record into a lock-free ring; never blocks; drops (and counts) when full. */
void prophet_log_call(prophet_log_writer_t *w, const prophet_log_call_t *c);
/* Cold path (copied): the learned profile, the network model, a newly agreed plan. */
void prophet_log_profile(prophet_log_writer_t *w, uint64_t iteration, const prophet_profile_t *p);
void prophet_log_net(prophet_log_writer_t *w, int64_t t_us, const prophet_net_t *net,
                     double probe_Bps);
void prophet_log_plan(prophet_log_writer_t *w, uint64_t from_iteration, const prophet_plan_t *plan);
void prophet_log_sample(prophet_log_writer_t *w, const prophet_log_sample_t *s);
/* Program order, from the comm's calling thread: a schedulable call the learner placed in the
 * iteration (none of the job's extra calls), of `bytes` payload bytes. Counts the bytes; at an
 * iteration start (iter_start != 0) inside the logged window, the bytes before the call become that
 * iteration's `bytes_before` (a cold record: once per iteration). Every step of a job all-reduces
 * the same bytes, so bytes_before / (bytes of one iteration) is the job's own step number. */
void prophet_log_observed(prophet_log_writer_t *w, uint64_t iteration, uint64_t bytes,
                          int iter_start);
/* Flushes, writes the closing part of the JSON document and frees. Safe to call once at exit. */
void prophet_log_close(prophet_log_writer_t *w);

#endif
