/* Chrome Trace Event Format (the JSON that Perfetto and chrome://tracing open) built from log call
 * records. Shared by the live writer (PROPHET_TRACE=1) and `prophet-report --trace`, so both
 * produce the same events. Lanes (tids) of process `rank`:
 *   50+k       iterations complete event per iteration, first arrival to last completion, named by
 *                         the job's step when known
 *   60         plans      instant event (process scope) where a plan starts: its version, policy
 *                         and mark (trial, kept or fixed)
 *   100        arrivals   instant event per intercepted call (host)
 *   101        readiness  instant event per call whose inputs became ready (GPU)
 *   200        gates      async event ("b"/"e") per block, from release to completion (gates
 *                         overlap: every held call of a stream may have one open)
 *   1000+10c+k network comm c: complete event per block, from launch to completion
 * k > 0 only when events would overlap on one lane (each lane stays properly nested). */
#ifndef PROPHET_LOG_TRACE_H
#define PROPHET_LOG_TRACE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "prophet/log.h"

#define PROPHET_TRACE_SUBLANES 8
#define PROPHET_TRACE_MAX_LANES 64
#define PROPHET_TRACE_MAX_PLANS 32 /* plan markers waiting for their first iteration */

/* What a plan is to the job: a fixed policy's plan, a closed-loop candidate being timed (trial),
 * or the candidate a trial round kept. The values of rep_plan_t.trial in prophet-report. */
#define PROPHET_PLAN_FIXED 0
#define PROPHET_PLAN_TRIAL 1
#define PROPHET_PLAN_KEPT 2
const char *prophet_plan_mark_name(int mark); /* "fixed", "trial", "kept" */

typedef struct prophet_trace_lane {
    int tid;
    int64_t end_us;
} prophet_trace_lane_t;

/* A plan, for its marker on the "plans" lane at the start of the first iteration it runs. */
typedef struct prophet_trace_plan {
    uint64_t from_iteration;
    uint32_t version, n_blocks, round;
    int mark; /* PROPHET_PLAN_* */
    char policy[16], candidate[24];
} prophet_trace_plan_t;

typedef struct prophet_trace_state {
    int pid;
    uint64_t next_id; /* ids of async gate events */
    int n_lanes;
    prophet_trace_lane_t lanes[PROPHET_TRACE_MAX_LANES]; /* lanes named so far */
    int n_plans;
    prophet_trace_plan_t plans[PROPHET_TRACE_MAX_PLANS]; /* markers not yet drawn */
} prophet_trace_state_t;

void prophet_trace_init(prophet_trace_state_t *st, int rank);
/* Appends the process-name metadata event. 0 or -ENOMEM. */
int prophet_trace_begin(prophet_trace_state_t *st, json_t *events, const char *host, int nranks);
/* Queues a plan's marker: drawn by the first prophet_trace_iteration() of an iteration at or after
 * its from_iteration (the oldest marker is dropped when PROPHET_TRACE_MAX_PLANS wait). */
void prophet_trace_plan(prophet_trace_state_t *st, const prophet_trace_plan_t *plan);
/* Appends the events of one iteration's calls (any order) to `events`: its span on the
 * "iterations" lane (named by the job's step when step >= 0), the markers of the plans that start
 * here, arrivals, readiness, gates and blocks. 0 or -ENOMEM. */
int prophet_trace_iteration(prophet_trace_state_t *st, json_t *events, uint64_t iteration,
                            int64_t step, const prophet_log_call_t *calls, size_t n);

#endif
