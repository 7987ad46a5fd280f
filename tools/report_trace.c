/* prophet-report --trace: the Chrome trace of one or more logs (one process per rank), built by the
 * same code as the live PROPHET_TRACE=1 output (lib/schedule_log/log_trace.c). */
#include <errno.h>
#include <string.h>

#include "log_trace.h"
#include "report.h"

static void queue_plan(prophet_trace_state_t *st, const rep_plan_t *p)
{
    prophet_trace_plan_t tp = {.from_iteration = p->from_iteration,
                               .version = p->version,
                               .n_blocks = p->n_blocks,
                               .round = (uint32_t)p->round,
                               .mark = p->trial};
    snprintf(tp.policy, sizeof(tp.policy), "%s", p->policy);
    snprintf(tp.candidate, sizeof(tp.candidate), "%s", p->candidate);
    prophet_trace_plan(st, &tp);
}

int rep_trace_write(rep_log_t *const *logs, size_t n, const char *out_path, char *err,
                    size_t errlen)
{
    json_t *root = json_object(), *events = json_array();
    int rc = -1;
    if (!root || !events) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        const rep_log_t *log = logs[k];
        prophet_trace_state_t st;
        prophet_trace_init(&st, log->rank);
        if (prophet_trace_begin(&st, events, log->host, log->nranks)) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        size_t next_plan = 0;
        for (size_t i = 0; i < log->n_iters; i++) {
            for (; next_plan < log->n_plans &&
                   log->plans[next_plan].from_iteration <= log->iters[i].iteration;
                 next_plan++)
                queue_plan(&st, &log->plans[next_plan]);
            if (prophet_trace_iteration(&st, events, log->iters[i].iteration,
                                        rep_step_of(log, log->iters[i].iteration),
                                        log->iters[i].calls, log->iters[i].n)) {
                snprintf(err, errlen, "out of memory");
                goto out;
            }
        }
    }
    if (json_object_set(root, "traceEvents", events) ||
        json_object_set_new(root, "displayTimeUnit", json_string("ms")) ||
        json_object_set_new(
            root, "otherData",
            json_pack("{s:s, s:i}", "format", PROPHET_LOG_FORMAT, "logs", (int)n))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (json_dump_file(root, out_path, JSON_COMPACT) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", out_path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    json_decref(events);
    json_decref(root);
    return rc;
}
