/* The schedule-log writer (include/prophet/log.h): a lock-free ring on the hot path, a writer
 * thread that turns records into streamed JSON (DIR/prophet-rank<R>.json) and, when asked, a Chrome
 * trace (DIR/prophet-rank<R>.trace.json). Schema: docs/log-schema.md. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log_json.h"
#include "log_ring.h"
#include "log_trace.h"
#include "prophet/log.h"

#define RING_CAPACITY (1u << 15)
#define DRAIN_PERIOD_MS 20
#define STALE_ITERATION_US 200000 /* an iteration untouched this long is written out */
#define MAX_PENDING 16            /* iterations held open at once */
#define STARTS 64 /* iteration starts remembered (bytes_before), by iteration % 64 */

typedef enum cold_kind { COLD_PROFILE, COLD_NET, COLD_PLAN, COLD_SAMPLE, COLD_START } cold_kind_t;

typedef struct cold_rec {
    struct cold_rec *next;
    cold_kind_t kind;
    uint64_t iteration;
    int64_t t_us;
    double probe_Bps;
    prophet_net_t net;
    uint64_t bytes; /* COLD_START: bytes before the iteration's first call */
    void *body;     /* prophet_profile_t or prophet_plan_t copy */
} cold_rec_t;

typedef struct iter_start {
    uint64_t iteration, bytes_before;
    int used;
} iter_start_t;

typedef struct pending_iter {
    uint64_t iteration;
    prophet_log_call_t *calls;
    size_t n, cap;
    int64_t touched_us;
} pending_iter_t;

struct prophet_log_writer {
    prophet_log_ring_t ring;
    uint64_t iter_begin, iter_end;
    FILE *log, *trace;
    int rank;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int closing;                       /* under mu */
    cold_rec_t *cold_head, *cold_tail; /* under mu */
    /* writer thread only */
    pending_iter_t pending[MAX_PENDING];
    int n_pending;
    uint64_t max_iteration;
    int seen_any;
    uint64_t records_written, calls_written, iterations_written, write_errors, late_records;
    uint64_t last_written_iteration;
    int trace_first;
    prophet_trace_state_t trace_state;
    iter_start_t starts[STARTS]; /* writer thread only */
    int64_t period_bytes;        /* writer thread: bytes of the latest profile's iteration */
    uint64_t observed_bytes;     /* the comm's calling thread only (prophet_log_observed) */
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- output --------------------------------------------------------------------------- */

static void write_record(prophet_log_writer_t *w, json_t *rec)
{
    if (!rec) {
        w->write_errors++;
        return;
    }
    if (fputs(w->records_written ? "," : "", w->log) == EOF ||
        json_dumpf(rec, w->log, JSON_COMPACT | JSON_REAL_PRECISION(10)) != 0 ||
        fputc('\n', w->log) == EOF)
        w->write_errors++;
    else
        w->records_written++;
    json_decref(rec);
}

static void write_trace_events(prophet_log_writer_t *w, json_t *events)
{
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev)
    {
        if (fputs(w->trace_first ? "" : ",\n", w->trace) == EOF ||
            json_dumpf(ev, w->trace, JSON_COMPACT) != 0)
            w->write_errors++;
        w->trace_first = 0;
    }
}

/* The bytes before an iteration's first call, -1 when not recorded. */
static int64_t bytes_before(const prophet_log_writer_t *w, uint64_t iteration)
{
    const iter_start_t *e = &w->starts[iteration % STARTS];
    return e->used && e->iteration == iteration ? (int64_t)e->bytes_before : -1;
}

static void note_start(prophet_log_writer_t *w, uint64_t iteration, uint64_t bytes)
{
    w->starts[iteration % STARTS] = (iter_start_t){iteration, bytes, 1};
}

/* The live trace names an iteration by the job's step only where it begins a step. */
static int64_t live_step(const prophet_log_writer_t *w, int64_t before)
{
    int exact;
    int64_t step = prophet_log_step_of(before, w->period_bytes, &exact);
    return exact ? step : -1;
}

static void write_iteration(prophet_log_writer_t *w, pending_iter_t *p)
{
    uint64_t dropped = atomic_load_explicit(&w->ring.dropped, memory_order_relaxed);
    int64_t before = bytes_before(w, p->iteration);
    write_record(w, prophet_log_json_iteration(p->iteration, p->calls, p->n, dropped, before));
    w->calls_written += p->n;
    w->iterations_written++;
    w->last_written_iteration = p->iteration;
    if (w->trace) {
        json_t *events = json_array();
        int64_t step = live_step(w, before);
        if (!events ||
            prophet_trace_iteration(&w->trace_state, events, p->iteration, step, p->calls, p->n))
            w->write_errors++;
        else
            write_trace_events(w, events);
        json_decref(events);
    }
}

/* Writes pending iteration `i` and removes it from the table. */
static void flush_pending(prophet_log_writer_t *w, int i)
{
    pending_iter_t p = w->pending[i];
    qsort(p.calls, p.n, sizeof(*p.calls), prophet_log_call_cmp);
    write_iteration(w, &p);
    free(p.calls);
    w->pending[i] = w->pending[--w->n_pending];
}

static int oldest_pending(const prophet_log_writer_t *w)
{
    int best = -1;
    for (int i = 0; i < w->n_pending; i++)
        if (best < 0 || w->pending[i].iteration < w->pending[best].iteration)
            best = i;
    return best;
}

/* Writes the iterations that are complete: two iterations behind the newest one seen, stale, or
 * all of them when closing; always in increasing iteration order. */
static void flush_iterations(prophet_log_writer_t *w, int all)
{
    int64_t now = now_us();
    for (;;) {
        int i = oldest_pending(w);
        if (i < 0)
            return;
        pending_iter_t *p = &w->pending[i];
        if (!all && p->iteration + 2 > w->max_iteration && now - p->touched_us < STALE_ITERATION_US)
            return;
        flush_pending(w, i);
    }
}

static void add_call(prophet_log_writer_t *w, const prophet_log_call_t *c)
{
    if (!w->seen_any || c->iteration > w->max_iteration)
        w->max_iteration = c->iteration;
    w->seen_any = 1;
    if (w->iterations_written && c->iteration <= w->last_written_iteration)
        w->late_records++; /* written again as its own iteration record; readers merge them */
    pending_iter_t *p = NULL;
    for (int i = 0; i < w->n_pending; i++)
        if (w->pending[i].iteration == c->iteration)
            p = &w->pending[i];
    if (!p) {
        if (w->n_pending == MAX_PENDING)
            flush_pending(w, oldest_pending(w));
        p = &w->pending[w->n_pending++];
        memset(p, 0, sizeof(*p));
        p->iteration = c->iteration;
    }
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        prophet_log_call_t *v = realloc(p->calls, cap * sizeof(*v));
        if (!v) {
            w->write_errors++;
            return;
        }
        p->calls = v;
        p->cap = cap;
    }
    p->calls[p->n++] = *c;
    p->touched_us = now_us();
}

/* The plan's marker in the live trace, drawn with the first iteration it runs. */
static void trace_plan(prophet_log_writer_t *w, uint64_t from_iteration, const prophet_plan_t *plan)
{
    const prophet_plan_trial_t *t = &plan->trial;
    prophet_trace_plan_t tp = {.from_iteration = from_iteration,
                               .version = plan->version,
                               .n_blocks = plan->n_blocks,
                               .round = t->round,
                               .mark = t->phase == PROPHET_TRIAL_OFF       ? PROPHET_PLAN_FIXED
                                       : t->phase == PROPHET_TRIAL_RUNNING ? PROPHET_PLAN_TRIAL
                                                                           : PROPHET_PLAN_KEPT};
    snprintf(tp.policy, sizeof(tp.policy), "%s", prophet_log_policy_name(plan->policy));
    snprintf(tp.candidate, sizeof(tp.candidate), "%s",
             t->phase == PROPHET_TRIAL_OFF ? "" : prophet_cand_name(t->candidate));
    prophet_trace_plan(&w->trace_state, &tp);
}

static void write_cold(prophet_log_writer_t *w, cold_rec_t *r)
{
    switch (r->kind) {
    case COLD_PROFILE:
        write_record(w, prophet_log_json_profile(r->iteration, r->body));
        w->period_bytes = 0;
        for (uint32_t i = 0; i < ((prophet_profile_t *)r->body)->n_calls; i++)
            w->period_bytes += (int64_t)((prophet_profile_t *)r->body)->sig[i].bytes;
        break;
    case COLD_NET:
        write_record(w, prophet_log_json_net(r->t_us, &r->net, r->probe_Bps));
        break;
    case COLD_PLAN:
        write_record(w, prophet_log_json_plan(r->iteration, r->body));
        if (w->trace)
            trace_plan(w, r->iteration, r->body);
        break;
    case COLD_START:
        note_start(w, r->iteration, r->bytes);
        break;
    case COLD_SAMPLE:
        write_record(w, prophet_log_json_sample(r->body));
        break;
    }
}

/* The cold records queued so far, in order. Returns 1 if there were any. */
static int drain_cold(prophet_log_writer_t *w)
{
    pthread_mutex_lock(&w->mu);
    cold_rec_t *cold = w->cold_head;
    w->cold_head = w->cold_tail = NULL;
    pthread_mutex_unlock(&w->mu);
    int did = cold != NULL;
    while (cold) {
        cold_rec_t *next = cold->next;
        write_cold(w, cold);
        free(cold->body);
        free(cold);
        cold = next;
    }
    return did;
}

/* One pass: cold records, every call record in the ring, then the cold records queued meanwhile,
 * before any iteration is written. An iteration's start (its bytes_before) is queued before any of
 * its calls reaches the ring, so once a call was popped its start is in one of the two passes;
 * with one pass, the start of an iteration whose calls arrived while the ring was being emptied
 * stayed queued while the iteration was written without it (log.writer_stress, now and then
 * under a sanitizer). Returns 1 if anything was done. */
static int drain_once(prophet_log_writer_t *w, int closing)
{
    int did = drain_cold(w);
    prophet_log_call_t c;
    while (prophet_log_ring_pop(&w->ring, &c)) {
        add_call(w, &c);
        did = 1;
    }
    did |= drain_cold(w);
    uint64_t before = w->records_written;
    flush_iterations(w, closing);
    if (did || before != w->records_written) {
        fflush(w->log);
        if (w->trace)
            fflush(w->trace);
    }
    return did;
}

static void *writer_main(void *arg)
{
    prophet_log_writer_t *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        int closing = w->closing;
        pthread_mutex_unlock(&w->mu);
        drain_once(w, 0);
        if (closing)
            break;
        pthread_mutex_lock(&w->mu);
        if (!w->closing) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += DRAIN_PERIOD_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        }
        pthread_mutex_unlock(&w->mu);
    }
    /* Producers are done (close was called): everything left is written by drain_once(w, 1). */
    return NULL;
}

/* ---- API -------------------------------------------------------------------------------- */

static FILE *open_out(const char *dir, int rank, const char *suffix, char *why, int why_len)
{
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/prophet-rank%d%s", dir, rank, suffix);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        snprintf(why, why_len, "log path too long");
        return NULL;
    }
    FILE *f = fopen(path, "w");
    if (!f)
        snprintf(why, why_len, "cannot write %s: %s", path, strerror(errno));
    return f;
}

prophet_log_writer_t *prophet_log_open(const char *dir, const prophet_log_meta_t *meta,
                                       uint64_t iter_begin, uint64_t iter_end, int trace, char *why,
                                       int why_len)
{
    char dummy[8];
    if (!why || why_len <= 0) {
        why = dummy;
        why_len = sizeof(dummy);
    }
    why[0] = '\0';
    if (!dir || !*dir || !meta) {
        snprintf(why, why_len, "no log directory or metadata");
        return NULL;
    }
    prophet_log_writer_t *w = calloc(1, sizeof(*w));
    json_t *m = NULL;
    if (!w || prophet_log_ring_init(&w->ring, RING_CAPACITY)) {
        snprintf(why, why_len, "out of memory");
        free(w);
        return NULL;
    }
    w->iter_begin = iter_begin;
    w->iter_end = iter_end;
    w->rank = meta->rank;
    w->trace_first = 1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->log = open_out(dir, meta->rank, ".json", why, why_len);
    if (!w->log)
        goto fail;
    if (trace) {
        w->trace = open_out(dir, meta->rank, ".trace.json", why, why_len);
        if (!w->trace)
            goto fail;
    }
    m = prophet_log_json_meta(meta, iter_begin, iter_end, trace, now_us());
    if (!m) {
        snprintf(why, why_len, "out of memory");
        goto fail;
    }
    fprintf(w->log, "{\"format\":\"%s\",\n\"meta\":", PROPHET_LOG_FORMAT);
    json_dumpf(m, w->log, JSON_COMPACT);
    fputs(",\n\"records\":[\n", w->log);
    if (w->trace) {
        json_t *events = json_array();
        prophet_trace_init(&w->trace_state, meta->rank);
        fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", w->trace);
        if (events && !prophet_trace_begin(&w->trace_state, events, meta->hostname, meta->nranks))
            write_trace_events(w, events);
        json_decref(events);
    }
    if (fflush(w->log) == EOF) {
        snprintf(why, why_len, "cannot write the log: %s", strerror(errno));
        goto fail;
    }
    json_decref(m);
    m = NULL;
    /* The writer thread takes no signal: the application's handlers stay on its own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int started = pthread_create(&w->thread, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started != 0) {
        snprintf(why, why_len, "cannot start the log writer thread");
        goto fail;
    }
    return w;
fail:
    json_decref(m);
    if (w->log)
        fclose(w->log);
    if (w->trace)
        fclose(w->trace);
    prophet_log_ring_fini(&w->ring);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
    return NULL;
}

void prophet_log_call(prophet_log_writer_t *w, const prophet_log_call_t *c)
{
    if (!w || !c || c->iteration < w->iter_begin || c->iteration >= w->iter_end)
        return;
    prophet_log_ring_push(&w->ring, c);
}

static void push_cold(prophet_log_writer_t *w, cold_rec_t *r)
{
    pthread_mutex_lock(&w->mu);
    if (w->cold_tail)
        w->cold_tail->next = r;
    else
        w->cold_head = r;
    w->cold_tail = r;
    pthread_mutex_unlock(&w->mu);
}

static cold_rec_t *new_cold(cold_kind_t kind, const void *body, size_t size)
{
    cold_rec_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->kind = kind;
    if (body) {
        r->body = malloc(size);
        if (!r->body) {
            free(r);
            return NULL;
        }
        memcpy(r->body, body, size);
    }
    return r;
}

void prophet_log_profile(prophet_log_writer_t *w, uint64_t iteration, const prophet_profile_t *p)
{
    if (!w || !p)
        return;
    cold_rec_t *r = new_cold(COLD_PROFILE, p, sizeof(*p));
    if (!r)
        return;
    r->iteration = iteration;
    push_cold(w, r);
}

void prophet_log_net(prophet_log_writer_t *w, int64_t t_us, const prophet_net_t *net,
                     double probe_Bps)
{
    if (!w || !net)
        return;
    cold_rec_t *r = new_cold(COLD_NET, NULL, 0);
    if (!r)
        return;
    r->t_us = t_us;
    r->net = *net;
    r->probe_Bps = probe_Bps;
    push_cold(w, r);
}

void prophet_log_plan(prophet_log_writer_t *w, uint64_t from_iteration, const prophet_plan_t *plan)
{
    if (!w || !plan)
        return;
    cold_rec_t *r = new_cold(COLD_PLAN, plan, sizeof(*plan));
    if (!r)
        return;
    r->iteration = from_iteration;
    push_cold(w, r);
}

void prophet_log_sample(prophet_log_writer_t *w, const prophet_log_sample_t *s)
{
    if (!w || !s)
        return;
    cold_rec_t *r = new_cold(COLD_SAMPLE, s, sizeof(*s));
    if (!r)
        return;
    push_cold(w, r);
}

void prophet_log_observed(prophet_log_writer_t *w, uint64_t iteration, uint64_t bytes,
                          int iter_start)
{
    if (!w)
        return;
    uint64_t before = w->observed_bytes;
    w->observed_bytes += bytes;
    if (!iter_start || iteration < w->iter_begin || iteration >= w->iter_end)
        return;
    cold_rec_t *r = new_cold(COLD_START, NULL, 0);
    if (!r)
        return;
    r->iteration = iteration;
    r->bytes = before;
    push_cold(w, r);
}

void prophet_log_close(prophet_log_writer_t *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->closing = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    drain_once(w, 1);
    uint64_t dropped = atomic_load_explicit(&w->ring.dropped, memory_order_relaxed);
    json_t *counters = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I}", "records_written", (json_int_t)w->records_written,
        "calls_written", (json_int_t)w->calls_written, "iterations_written",
        (json_int_t)w->iterations_written, "calls_dropped", (json_int_t)dropped, "late_records",
        (json_int_t)w->late_records, "write_errors", (json_int_t)w->write_errors);
    fputs("],\n\"counters\":", w->log);
    if (counters)
        json_dumpf(counters, w->log, JSON_COMPACT);
    else
        fputs("{}", w->log);
    fputs(",\n\"complete\":true}\n", w->log);
    json_decref(counters);
    fclose(w->log);
    if (w->trace) {
        fprintf(w->trace,
                "\n],\"otherData\":{\"format\":\"%s\",\"rank\":%d,\"calls_dropped\":%llu}}\n",
                PROPHET_LOG_FORMAT, w->rank, (unsigned long long)dropped);
        fclose(w->trace);
    }
    prophet_log_ring_fini(&w->ring);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}
