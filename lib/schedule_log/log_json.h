/* JSON objects of the schedule-log records (docs/log-schema.md). Built off the hot path. */
#ifndef PROPHET_LOG_JSON_H
#define PROPHET_LOG_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "prophet/log.h"

json_t *prophet_log_json_meta(const prophet_log_meta_t *m, uint64_t iter_begin, uint64_t iter_end,
                              int trace, int64_t t0_us);
json_t *prophet_log_json_profile(uint64_t iteration, const prophet_profile_t *p);
json_t *prophet_log_json_net(int64_t t_us, const prophet_net_t *net, double probe_Bps);
json_t *prophet_log_json_plan(uint64_t from_iteration, const prophet_plan_t *plan);
json_t *prophet_log_json_sample(const prophet_log_sample_t *s);
/* bytes_before < 0: unknown (the key is left out). */
json_t *prophet_log_json_iteration(uint64_t iteration, const prophet_log_call_t *calls, size_t n,
                                   uint64_t dropped_total, int64_t bytes_before);
/* The job's step in which an iteration that has `bytes_before` bytes before it begins, when one
 * iteration all-reduces `period_bytes`; -1 when unknown. *exact (if not NULL) is 1 when it begins
 * where the step does (a whole number of iterations' bytes before it, within 1/256 of one: the
 * job's small extra calls before the learner locked), 0 inside the step (an iteration the learner
 * numbered while it had not found the job's iteration yet). */
int64_t prophet_log_step_of(int64_t bytes_before, int64_t period_bytes, int *exact);
/* qsort order of the calls of an iteration record: index, then communicator, then arrival. */
int prophet_log_call_cmp(const void *a, const void *b);
const char *prophet_log_policy_name(prophet_policy_t p);
const char *prophet_log_net_source_name(prophet_net_source_t s);

#endif
