/* Trace Event Format events from log call records (see log_trace.h). */
#include "log_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TID_ITERS 50
#define TID_PLANS 60
#define TID_ARRIVALS 100
#define TID_READY 101
#define TID_GATES 200
#define TID_NET 1000

const char *prophet_plan_mark_name(int mark)
{
    return mark == PROPHET_PLAN_TRIAL ? "trial" : mark == PROPHET_PLAN_KEPT ? "kept" : "fixed";
}

void prophet_trace_init(prophet_trace_state_t *st, int rank)
{
    memset(st, 0, sizeof(*st));
    st->pid = rank;
}

static int append(json_t *events, json_t *ev)
{
    if (!ev)
        return -ENOMEM;
    return json_array_append_new(events, ev) ? -ENOMEM : 0;
}

static int add_metadata(prophet_trace_state_t *st, json_t *events, const char *what, int tid,
                        const char *name)
{
    json_t *ev = json_pack("{s:s, s:s, s:i, s:i, s:I, s:{s:s}}", "name", what, "ph", "M", "pid",
                           st->pid, "tid", tid, "ts", (json_int_t)0, "args", "name", name);
    return append(events, ev);
}

/* Names a lane the first time it is used; returns its slot or -1 when the table is full. */
static int lane_slot(prophet_trace_state_t *st, json_t *events, int tid, const char *name)
{
    for (int i = 0; i < st->n_lanes; i++)
        if (st->lanes[i].tid == tid)
            return i;
    if (st->n_lanes == PROPHET_TRACE_MAX_LANES)
        return -1;
    int i = st->n_lanes++;
    st->lanes[i].tid = tid;
    st->lanes[i].end_us = INT64_MIN;
    if (add_metadata(st, events, "thread_name", tid, name))
        return -1;
    json_t *ev =
        json_pack("{s:s, s:s, s:i, s:i, s:I, s:{s:i}}", "name", "thread_sort_index", "ph", "M",
                  "pid", st->pid, "tid", tid, "ts", (json_int_t)0, "args", "sort_index", tid);
    if (append(events, ev))
        return -1;
    return i;
}

/* Picks a sub-lane of `base` on which [start, end] does not overlap the previous event. */
static int pick_tid(prophet_trace_state_t *st, json_t *events, int base, const char *label,
                    int64_t start, int64_t end)
{
    int best = -1;
    for (int k = 0; k < PROPHET_TRACE_SUBLANES; k++) {
        char name[96];
        if (k == 0)
            snprintf(name, sizeof(name), "%s", label);
        else
            snprintf(name, sizeof(name), "%s (%d)", label, k + 1);
        int slot = lane_slot(st, events, base + k, name);
        if (slot < 0)
            break;
        if (st->lanes[slot].end_us <= start) {
            st->lanes[slot].end_us = end;
            return base + k;
        }
        if (best < 0 || st->lanes[slot].end_us < st->lanes[best].end_us)
            best = slot;
    }
    if (best < 0)
        return base;
    if (st->lanes[best].end_us < end)
        st->lanes[best].end_us = end;
    return st->lanes[best].tid;
}

int prophet_trace_begin(prophet_trace_state_t *st, json_t *events, const char *host, int nranks)
{
    char name[160];
    snprintf(name, sizeof(name), "rank %d/%d (%s)", st->pid, nranks, host ? host : "?");
    int err = add_metadata(st, events, "process_name", 0, name);
    if (!err)
        err = lane_slot(st, events, TID_ARRIVALS, "arrivals (host)") < 0 ? -ENOMEM : 0;
    if (!err)
        err = lane_slot(st, events, TID_READY, "readiness (GPU)") < 0 ? -ENOMEM : 0;
    return err;
}

static int cmp_call(const void *a, const void *b)
{
    const prophet_log_call_t *x = a, *y = b;
    if (x->comm_id != y->comm_id)
        return x->comm_id < y->comm_id ? -1 : 1;
    if (x->block != y->block)
        return x->block < y->block ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

static int instant(prophet_trace_state_t *st, json_t *events, int tid, const char *what,
                   uint64_t iteration, const prophet_log_call_t *c, int64_t t)
{
    char name[64];
    if (c->index == UINT32_MAX)
        snprintf(name, sizeof(name), "%s #?", what);
    else
        snprintf(name, sizeof(name), "%s #%u", what, c->index);
    json_t *index = c->index == UINT32_MAX ? json_null() : json_integer(c->index);
    json_t *ev = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:{s:I, s:o, s:I, s:I, s:i, s:i}}",
                           "name", name, "cat", what, "ph", "i", "s", "t", "pid", st->pid, "tid",
                           tid, "ts", (json_int_t)t, "args", "iteration", (json_int_t)iteration,
                           "index", index, "comm", (json_int_t)c->comm_id, "bytes",
                           (json_int_t)c->bytes, "block", (int)c->block, "deferred", c->deferred);
    return append(events, ev);
}

static int block_event(prophet_trace_state_t *st, json_t *events, int tid, const char *cat,
                       uint64_t iteration, const prophet_log_call_t *first, size_t members,
                       uint64_t bytes, int64_t start, int64_t end)
{
    char name[64];
    snprintf(name, sizeof(name), "%s %u (%zu)", cat, first->block, members);
    json_t *index = first->index == UINT32_MAX ? json_null() : json_integer(first->index);
    json_t *ev =
        json_pack("{s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:{s:I, s:I, s:i, s:o, s:I, s:i}}", "name",
                  name, "cat", cat, "ph", "X", "pid", st->pid, "tid", tid, "ts", (json_int_t)start,
                  "dur", (json_int_t)(end - start), "args", "iteration", (json_int_t)iteration,
                  "comm", (json_int_t)first->comm_id, "block", (int)first->block, "first_index",
                  index, "bytes", (json_int_t)bytes, "members", (int)members);
    return append(events, ev);
}

/* Gates overlap freely (every deferred call of a stream has one open at once), so they are async
 * events ("b" at release, "e" at completion) on the gates lane: viewers stack them in rows. */
static int gate_events(prophet_trace_state_t *st, json_t *events, uint64_t iteration,
                       const prophet_log_call_t *first, size_t members, int64_t release,
                       int64_t complete)
{
    char name[64], id[32];
    if (lane_slot(st, events, TID_GATES, "gates") < 0)
        return -ENOMEM;
    snprintf(name, sizeof(name), "gate %u (%zu)", first->block, members);
    snprintf(id, sizeof(id), "0x%llx", (unsigned long long)++st->next_id);
    json_t *b =
        json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:{s:I, s:I, s:i, s:i}}", "name", name,
                  "cat", "gate", "ph", "b", "id", id, "pid", st->pid, "tid", TID_GATES, "ts",
                  (json_int_t)release, "args", "iteration", (json_int_t)iteration, "comm",
                  (json_int_t)first->comm_id, "block", (int)first->block, "members", (int)members);
    json_t *e =
        json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I}", "name", name, "cat", "gate", "ph", "e",
                  "id", id, "pid", st->pid, "tid", TID_GATES, "ts", (json_int_t)complete);
    int err = append(events, b);
    if (!err)
        err = append(events, e);
    else
        json_decref(e);
    return err;
}

static int emit_block(prophet_trace_state_t *st, json_t *events, uint64_t iteration,
                      const prophet_log_call_t *m, size_t n)
{
    int64_t launch = 0, complete = 0, release = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        bytes += m[i].bytes;
        if (m[i].launch_us > 0 && (launch == 0 || m[i].launch_us < launch))
            launch = m[i].launch_us;
        if (m[i].release_us > 0 && (release == 0 || m[i].release_us < release))
            release = m[i].release_us;
        if (m[i].complete_us > complete)
            complete = m[i].complete_us;
    }
    int err = 0;
    if (launch > 0 && complete >= launch) {
        char label[64];
        uint64_t c = m[0].comm_id < 100 ? m[0].comm_id : 99;
        snprintf(label, sizeof(label), "network comm %llu", (unsigned long long)m[0].comm_id);
        int tid = pick_tid(st, events, TID_NET + 10 * (int)c, label, launch, complete);
        err = block_event(st, events, tid, "block", iteration, m, n, bytes, launch, complete);
    }
    if (!err && release > 0 && complete >= release)
        err = gate_events(st, events, iteration, m, n, release, complete);
    return err;
}

void prophet_trace_plan(prophet_trace_state_t *st, const prophet_trace_plan_t *plan)
{
    if (st->n_plans == PROPHET_TRACE_MAX_PLANS) {
        memmove(st->plans, st->plans + 1, sizeof(st->plans[0]) * (PROPHET_TRACE_MAX_PLANS - 1));
        st->n_plans--;
    }
    st->plans[st->n_plans++] = *plan;
}

/* The iteration's span: first arrival (or readiness) to last completion (or launch). */
static void iteration_bounds(const prophet_log_call_t *v, size_t n, int64_t *start, int64_t *end)
{
    *start = 0;
    *end = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t a = v[i].arrival_us ? v[i].arrival_us : v[i].ready_us;
        int64_t b = v[i].complete_us ? v[i].complete_us : v[i].launch_us;
        if (a > 0 && (*start == 0 || a < *start))
            *start = a;
        if (b > *end)
            *end = b;
    }
    if (*end < *start)
        *end = *start;
}

static int iteration_span(prophet_trace_state_t *st, json_t *events, uint64_t iteration,
                          int64_t step, size_t n, int64_t start, int64_t end)
{
    char name[64];
    if (step >= 0)
        snprintf(name, sizeof(name), "step %lld", (long long)step);
    else
        snprintf(name, sizeof(name), "iteration %llu", (unsigned long long)iteration);
    int tid = pick_tid(st, events, TID_ITERS, "iterations (job steps)", start, end);
    json_t *jstep = step >= 0 ? json_integer((json_int_t)step) : json_null();
    json_t *ev = json_pack("{s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:{s:o, s:I, s:i}}", "name", name,
                           "cat", "iteration", "ph", "X", "pid", st->pid, "tid", tid, "ts",
                           (json_int_t)start, "dur", (json_int_t)(end - start), "args", "step",
                           jstep, "iteration", (json_int_t)iteration, "calls", (int)n);
    return append(events, ev);
}

/* The markers of the queued plans that run from this iteration on (or from an earlier one that
 * was not logged), at the iteration's start. */
static int plan_markers(prophet_trace_state_t *st, json_t *events, uint64_t iteration, int64_t step,
                        int64_t ts)
{
    int kept = 0, err = 0;
    for (int i = 0; i < st->n_plans; i++) {
        const prophet_trace_plan_t *p = &st->plans[i];
        if (p->from_iteration > iteration || err) {
            st->plans[kept++] = *p;
            continue;
        }
        if (lane_slot(st, events, TID_PLANS, "plans") < 0)
            return -ENOMEM;
        char name[128];
        if (p->mark == PROPHET_PLAN_FIXED)
            snprintf(name, sizeof(name), "plan v%u %s", p->version, p->policy);
        else
            snprintf(name, sizeof(name), "plan v%u %s %s (round %u)", p->version,
                     prophet_plan_mark_name(p->mark), p->candidate, p->round);
        int64_t from_step = step >= 0 ? step - (int64_t)(iteration - p->from_iteration) : -1;
        json_t *jstep = from_step >= 0 ? json_integer((json_int_t)from_step) : json_null();
        json_t *ev = json_pack(
            "{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:{s:i, s:s, s:s, s:s, s:i, s:i, s:I, s:o}}",
            "name", name, "cat", "plan", "ph", "i", "s", "p", "pid", st->pid, "tid", TID_PLANS,
            "ts", (json_int_t)ts, "args", "version", (int)p->version, "policy", p->policy, "mark",
            prophet_plan_mark_name(p->mark), "candidate", p->candidate, "round", (int)p->round,
            "blocks", (int)p->n_blocks, "from_iteration", (json_int_t)p->from_iteration,
            "from_step", jstep);
        err = append(events, ev);
    }
    st->n_plans = kept;
    return err;
}

int prophet_trace_iteration(prophet_trace_state_t *st, json_t *events, uint64_t iteration,
                            int64_t step, const prophet_log_call_t *calls, size_t n)
{
    if (n == 0)
        return 0;
    prophet_log_call_t *v = malloc(n * sizeof(*v));
    if (!v)
        return -ENOMEM;
    memcpy(v, calls, n * sizeof(*v));
    qsort(v, n, sizeof(*v), cmp_call);
    int64_t start, end;
    iteration_bounds(v, n, &start, &end);
    int err = 0;
    if (start > 0)
        err = iteration_span(st, events, iteration, step, n, start, end);
    if (!err && start > 0)
        err = plan_markers(st, events, iteration, step, start);
    for (size_t i = 0; i < n && !err; i++) {
        if (v[i].arrival_us > 0)
            err = instant(st, events, TID_ARRIVALS, "arrival", iteration, &v[i], v[i].arrival_us);
        if (!err && v[i].ready_us > 0)
            err = instant(st, events, TID_READY, "ready", iteration, &v[i], v[i].ready_us);
    }
    for (size_t i = 0; i < n && !err;) {
        size_t j = i + 1;
        while (j < n && v[j].comm_id == v[i].comm_id && v[j].block == v[i].block)
            j++;
        err = emit_block(st, events, iteration, &v[i], j - i);
        i = j;
    }
    free(v);
    return err;
}
