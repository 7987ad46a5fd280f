/* Chrome Trace Event Format (the JSON that Perfetto and chrome://tracing open) built from log call
 * records. Shared by the live writer (PROPHET_TRACE=1) and `prophet-report --trace`, so both
 * produce the same events. Lanes (tids) of process `rank`: 100        arrivals   instant event per
 * intercepted call (host) 101        readiness  instant event per call whose inputs became ready
 * (GPU) 200        gates      async event ("b"/"e") per block, from release to completion (gates
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

typedef struct prophet_trace_lane {
    int tid;
    int64_t end_us;
} prophet_trace_lane_t;

typedef struct prophet_trace_state {
    int pid;
    uint64_t next_id; /* ids of async gate events */
    int n_lanes;
    prophet_trace_lane_t lanes[PROPHET_TRACE_MAX_LANES]; /* lanes named so far */
} prophet_trace_state_t;

void prophet_trace_init(prophet_trace_state_t *st, int rank);
/* Appends the process-name metadata event. 0 or -ENOMEM. */
int prophet_trace_begin(prophet_trace_state_t *st, json_t *events, const char *host, int nranks);
/* Appends the events of one iteration's calls (any order) to `events`. 0 or -ENOMEM. */
int prophet_trace_iteration(prophet_trace_state_t *st, json_t *events, uint64_t iteration,
                            const prophet_log_call_t *calls, size_t n);

#endif
