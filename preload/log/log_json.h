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
json_t *prophet_log_json_iteration(uint64_t iteration, const prophet_log_call_t *calls, size_t n,
                                   uint64_t dropped_total);
/* qsort order of the calls of an iteration record: index, then communicator, then arrival. */
int prophet_log_call_cmp(const void *a, const void *b);
const char *prophet_log_policy_name(prophet_policy_t p);
const char *prophet_log_net_source_name(prophet_net_source_t s);

#endif
