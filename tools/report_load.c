/* Reading and validating a prophet-log/1 file for prophet-report. Every problem becomes one line
 * naming the JSON path that is wrong; nothing in a file can crash the reader. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "log_json.h"
#include "report.h"

#define MAX_FILE_BYTES (1ull << 32)

typedef struct ctx {
    char *err;
    size_t errlen;
} ctx_t;

static int fail(ctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    /* One line: text quoted from the log (a JSON parser's "near ..." context) may hold control
     * characters. */
    for (char *p = c->errlen ? c->err : NULL; p && *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    return -1;
}

static json_t *member(ctx_t *c, json_t *obj, const char *where, const char *key, int *rc)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        *rc = fail(c, "%s: missing key \"%s\"", where, key);
    return v;
}

static int get_int(ctx_t *c, json_t *obj, const char *where, const char *key, long long min,
                   long long max, long long *out)
{
    int rc = 0;
    json_t *v = member(c, obj, where, key, &rc);
    if (!v)
        return -1; /* member() reported it */
    if (!json_is_integer(v)) {
        fail(c, "%s.%s: expected an integer", where, key);
        return -1; /* a constant: -O3 then sees *out set whenever 0 is returned */
    }
    long long x = json_integer_value(v);
    if (x < min || x > max) {
        fail(c, "%s.%s: %lld out of range [%lld, %lld]", where, key, x, min, max);
        return -1; /* a constant: -O3 then sees *out set whenever 0 is returned */
    }
    *out = x;
    return 0;
}

/* A number; JSON null is accepted as NaN when nullable. */
static int get_num(ctx_t *c, json_t *obj, const char *where, const char *key, int nullable,
                   double *out)
{
    int rc = 0;
    json_t *v = member(c, obj, where, key, &rc);
    if (!v)
        return -1; /* member() reported it */
    if (nullable && json_is_null(v)) {
        *out = __builtin_nan("");
        return 0;
    }
    if (!json_is_number(v)) {
        fail(c, "%s.%s: expected a number", where, key);
        return -1; /* a constant: -O3 then sees *out set whenever 0 is returned */
    }
    *out = json_number_value(v);
    return 0;
}

static int get_str(ctx_t *c, json_t *obj, const char *where, const char *key, char *out, size_t len)
{
    int rc = 0;
    json_t *v = member(c, obj, where, key, &rc);
    if (!v)
        return -1; /* member() reported it; a constant lets -O3 see that *out is set on 0 */
    if (!json_is_string(v))
        return fail(c, "%s.%s: expected a string", where, key);
    snprintf(out, len, "%s", json_string_value(v));
    return 0;
}

static json_t *get_array(ctx_t *c, json_t *obj, const char *where, const char *key, int *rc)
{
    json_t *v = member(c, obj, where, key, rc);
    if (v && !json_is_array(v)) {
        *rc = fail(c, "%s.%s: expected an array", where, key);
        return NULL;
    }
    return v;
}

#define TIME_MAX (1ll << 62)

static int load_meta(ctx_t *c, json_t *root, rep_log_t *log)
{
    json_t *m = json_object_get(root, "meta");
    if (!m)
        return fail(c, "missing key \"meta\"");
    if (!json_is_object(m))
        return fail(c, "meta: expected an object");
    long long rank, nranks, pid, t0 = 0;
    if (get_int(c, m, "meta", "rank", 0, 1 << 24, &rank) ||
        get_int(c, m, "meta", "nranks", 1, 1 << 24, &nranks) ||
        get_int(c, m, "meta", "pid", 0, 1ll << 31, &pid) ||
        get_str(c, m, "meta", "host", log->host, sizeof(log->host)) ||
        get_str(c, m, "meta", "nccl_version", log->nccl_version, sizeof(log->nccl_version)) ||
        get_str(c, m, "meta", "policy", log->policy, sizeof(log->policy)) ||
        get_str(c, m, "meta", "gate", log->gate, sizeof(log->gate)) ||
        get_int(c, m, "meta", "t0_us", 0, TIME_MAX, &t0))
        return -1;
    if (rank >= nranks)
        return fail(c, "meta.rank: %lld is not below nranks %lld", rank, nranks);
    log->rank = (int)rank;
    log->nranks = (int)nranks;
    log->pid = (int)pid;
    log->t0_us = t0;
    return 0;
}

static int load_profile(ctx_t *c, json_t *r, const char *where, rep_log_t *log)
{
    long long it, n, ns, seen;
    double iter_us, fwd_us;
    int rc = 0;
    if (get_int(c, r, where, "iteration", 0, TIME_MAX, &it) ||
        get_int(c, r, where, "n_calls", 0, PROPHET_MAX_CALLS, &n) ||
        get_int(c, r, where, "n_steps", 0, PROPHET_MAX_CALLS, &ns) ||
        get_num(c, r, where, "iteration_us", 1, &iter_us) ||
        get_num(c, r, where, "forward_us", 1, &fwd_us) ||
        get_int(c, r, where, "iterations_seen", 0, 1ll << 40, &seen))
        return -1;
    json_t *calls = get_array(c, r, where, "calls", &rc);
    json_t *steps = calls ? get_array(c, r, where, "steps", &rc) : NULL;
    if (!calls || !steps)
        return -1;
    if ((long long)json_array_size(calls) != n)
        return fail(c, "%s.calls: %zu entries but n_calls is %lld", where, json_array_size(calls),
                    n);
    if ((long long)json_array_size(steps) != ns)
        return fail(c, "%s.steps: %zu entries but n_steps is %lld", where, json_array_size(steps),
                    ns);
    prophet_profile_t *p = log->profile;
    if (!p) {
        p = calloc(1, sizeof(*p));
        if (!p)
            return fail(c, "out of memory");
        log->profile = p;
    }
    memset(p, 0, sizeof(*p));
    p->n_calls = (uint32_t)n;
    p->n_steps = (uint32_t)ns;
    p->iteration_us = iter_us;
    p->forward_us = fwd_us;
    p->iterations_seen = (uint32_t)seen;
    for (long long i = 0; i < n; i++) {
        char w[96];
        snprintf(w, sizeof(w), "%s.calls[%lld]", where, i);
        json_t *e = json_array_get(calls, i);
        if (!json_is_object(e))
            return fail(c, "%s: expected an object", w);
        long long idx, comm, count, bytes, dtype, op, prio;
        double ready, spread;
        if (get_int(c, e, w, "index", i, i, &idx) ||
            get_int(c, e, w, "comm_id", 0, TIME_MAX, &comm) ||
            get_int(c, e, w, "count", 0, TIME_MAX, &count) ||
            get_int(c, e, w, "bytes", 0, TIME_MAX, &bytes) ||
            get_int(c, e, w, "dtype", -1, 1 << 20, &dtype) ||
            get_int(c, e, w, "op", -1, 1 << 20, &op) || get_num(c, e, w, "ready_us", 1, &ready) ||
            get_num(c, e, w, "spread_us", 1, &spread) ||
            get_int(c, e, w, "priority", 0, PROPHET_MAX_CALLS, &prio))
            return -1;
        p->sig[i] = (prophet_call_sig_t){.comm_id = (uint64_t)comm,
                                         .count = (uint64_t)count,
                                         .dtype = (int32_t)dtype,
                                         .op = (int32_t)op,
                                         .bytes = (uint64_t)bytes};
        p->ready_us[i] = ready;
        p->spread_us[i] = spread;
        p->priority[i] = (uint32_t)prio;
    }
    for (long long i = 0; i < ns; i++) {
        char w[96];
        snprintf(w, sizeof(w), "%s.steps[%lld]", where, i);
        json_t *e = json_array_get(steps, i);
        if (!json_is_object(e))
            return fail(c, "%s: expected an object", w);
        long long first, last;
        double ready, gap;
        if (get_int(c, e, w, "first", 0, n ? n - 1 : 0, &first) ||
            get_int(c, e, w, "last", first, n ? n - 1 : 0, &last) ||
            get_num(c, e, w, "ready_us", 1, &ready) || get_num(c, e, w, "gap_after_us", 1, &gap))
            return -1;
        p->steps[i] = (prophet_step_t){(uint32_t)first, (uint32_t)last, ready, gap};
    }
    log->profile_iteration = (uint64_t)it;
    log->n_profiles++;
    return 0;
}

static int load_net(ctx_t *c, json_t *r, const char *where, rep_log_t *log)
{
    rep_net_t n = {0};
    long long t;
    if (get_int(c, r, where, "t_us", 0, TIME_MAX, &t) ||
        get_num(c, r, where, "alpha_us", 1, &n.alpha_us) ||
        get_num(c, r, where, "bandwidth_Bps", 1, &n.bandwidth_Bps) ||
        get_str(c, r, where, "source", n.source, sizeof(n.source)) ||
        get_num(c, r, where, "probe_Bps", 1, &n.probe_Bps))
        return -1;
    n.t_us = t;
    rep_net_t *v = realloc(log->nets, (log->n_nets + 1) * sizeof(*v));
    if (!v)
        return fail(c, "out of memory");
    log->nets = v;
    v[log->n_nets++] = n;
    return 0;
}

/* A closed-loop sample (rank 0): checked (prophet-report does not show samples yet). */
static int load_sample(ctx_t *c, json_t *r, const char *where, rep_log_t *log)
{
    long long it, taken;
    double us;
    char cand[24], clock[8], use[16];

    if (get_int(c, r, where, "iteration", 0, TIME_MAX, &it) ||
        get_int(c, r, where, "taken_at", it, TIME_MAX, &taken) ||
        get_str(c, r, where, "candidate", cand, sizeof(cand)) ||
        get_num(c, r, where, "us", 1, &us) || get_str(c, r, where, "clock", clock, sizeof(clock)) ||
        get_str(c, r, where, "use", use, sizeof(use)))
        return -1;
    if (strcmp(clock, "gpu") && strcmp(clock, "host"))
        return fail(c, "%s.clock: \"%s\" is neither gpu nor host", where, clock);
    (void)log;
    return 0;
}

static int load_plan(ctx_t *c, json_t *r, const char *where, rep_log_t *log)
{
    rep_plan_t p = {0};
    long long from, version, n, nb;
    int rc = 0;
    if (get_int(c, r, where, "from_iteration", 0, TIME_MAX, &from) ||
        get_int(c, r, where, "version", 0, 1ll << 32, &version) ||
        get_str(c, r, where, "policy", p.policy, sizeof(p.policy)) ||
        get_int(c, r, where, "n_calls", 0, PROPHET_MAX_CALLS, &n) ||
        get_int(c, r, where, "n_blocks", 0, PROPHET_MAX_CALLS, &nb) ||
        get_num(c, r, where, "predicted_iteration_us", 1, &p.predicted_us))
        return -1;
    json_t *blocks = get_array(c, r, where, "blocks", &rc);
    if (!blocks)
        return -1;
    if ((long long)json_array_size(blocks) != nb)
        return fail(c, "%s.blocks: %zu entries but n_blocks is %lld", where,
                    json_array_size(blocks), nb);
    long long next = 0;
    for (long long b = 0; b < nb; b++) {
        char w[96];
        long long first, last;
        snprintf(w, sizeof(w), "%s.blocks[%lld]", where, b);
        json_t *e = json_array_get(blocks, b);
        if (!json_is_object(e))
            return fail(c, "%s: expected an object", w);
        if (get_int(c, e, w, "first", next, next, &first) ||
            get_int(c, e, w, "last", first, n ? n - 1 : 0, &last))
            return -1;
        next = last + 1;
    }
    json_t *t = json_object_get(r, "trial");
    if (t && !json_is_object(t))
        return fail(c, "%s.trial: expected an object", where);
    if (t) {
        char w[96];
        json_t *j = json_object_get(t, "judged"), *cu = json_object_get(t, "chosen_us");
        char phase[16];
        snprintf(w, sizeof(w), "%s.trial", where);
        if (get_str(c, t, w, "phase", phase, sizeof(phase)) ||
            get_str(c, t, w, "candidate", p.candidate, sizeof(p.candidate)) ||
            get_int(c, t, w, "round", 0, 1ll << 32, &p.round))
            return -1;
        p.trial = strcmp(phase, "chosen") == 0 ? 2 : 1;
        if (json_is_object(j)) {
            snprintf(w, sizeof(w), "%s.trial.judged", where);
            if (get_str(c, j, w, "candidate", p.judged, sizeof(p.judged)) ||
                get_int(c, j, w, "samples", 0, 1ll << 32, &p.judged_samples) ||
                get_int(c, j, w, "median_us", 0, 1ll << 40, &p.judged_us))
                return -1;
        }
        p.chosen_us = json_is_integer(cu) ? (long long)json_integer_value(cu) : -1;
    }
    p.from_iteration = (uint64_t)from;
    p.version = (uint32_t)version;
    p.n_calls = (uint32_t)n;
    p.n_blocks = (uint32_t)nb;
    rep_plan_t *v = realloc(log->plans, (log->n_plans + 1) * sizeof(*v));
    if (!v)
        return fail(c, "out of memory");
    log->plans = v;
    v[log->n_plans++] = p;
    return 0;
}

static int load_call(ctx_t *c, json_t *e, const char *w, uint64_t iteration, prophet_log_call_t *o)
{
    long long idx, comm, bytes, block, deferred, arr, ready, rel, launch, done;
    if (!json_is_object(e))
        return fail(c, "%s: expected an object", w);
    if (json_is_null(json_object_get(e, "index")))
        idx = UINT32_MAX; /* not known yet: the learner had not found the iteration length */
    else if (get_int(c, e, w, "index", 0, PROPHET_MAX_CALLS - 1, &idx))
        return -1;
    if (get_int(c, e, w, "comm_id", 0, TIME_MAX, &comm) ||
        get_int(c, e, w, "bytes", 0, TIME_MAX, &bytes) ||
        get_int(c, e, w, "block", 0, UINT32_MAX, &block) ||
        get_int(c, e, w, "deferred", 0, 1, &deferred) ||
        get_int(c, e, w, "arrival_us", 0, TIME_MAX, &arr) ||
        get_int(c, e, w, "ready_us", 0, TIME_MAX, &ready) ||
        get_int(c, e, w, "release_us", 0, TIME_MAX, &rel) ||
        get_int(c, e, w, "launch_us", 0, TIME_MAX, &launch) ||
        get_int(c, e, w, "complete_us", 0, TIME_MAX, &done))
        return -1;
    if (launch && done && done < launch)
        return fail(c, "%s: complete_us %lld is before launch_us %lld", w, done, launch);
    *o = (prophet_log_call_t){.iteration = iteration,
                              .index = (uint32_t)idx,
                              .comm_id = (uint64_t)comm,
                              .bytes = (uint64_t)bytes,
                              .block = (uint32_t)block,
                              .arrival_us = arr,
                              .ready_us = ready,
                              .release_us = rel,
                              .launch_us = launch,
                              .complete_us = done,
                              .deferred = (int32_t)deferred};
    return 0;
}

static rep_iter_t *find_iter(rep_log_t *log, uint64_t iteration)
{
    for (size_t i = log->n_iters; i-- > 0;)
        if (log->iters[i].iteration == iteration)
            return &log->iters[i];
    return NULL;
}

static int load_iteration(ctx_t *c, json_t *r, const char *where, rep_log_t *log)
{
    long long it, dropped, before = -1;
    int rc = 0;
    if (get_int(c, r, where, "iteration", 0, TIME_MAX, &it) ||
        get_int(c, r, where, "dropped_total", 0, TIME_MAX, &dropped))
        return -1;
    if (json_object_get(r, "bytes_before") &&
        get_int(c, r, where, "bytes_before", 0, TIME_MAX, &before))
        return -1;
    json_t *calls = get_array(c, r, where, "calls", &rc);
    if (!calls)
        return -1;
    if ((uint64_t)dropped > log->calls_dropped)
        log->calls_dropped = (uint64_t)dropped;
    rep_iter_t *ri = find_iter(log, (uint64_t)it);
    if (!ri) {
        rep_iter_t *v = realloc(log->iters, (log->n_iters + 1) * sizeof(*v));
        if (!v)
            return fail(c, "out of memory");
        log->iters = v;
        ri = &v[log->n_iters++];
        memset(ri, 0, sizeof(*ri));
        ri->iteration = (uint64_t)it;
        ri->bytes_before = ri->step = -1;
    }
    if (ri->bytes_before < 0)
        ri->bytes_before = before;
    size_t n = json_array_size(calls);
    if (ri->n + n > PROPHET_MAX_CALLS * 64)
        return fail(c, "%s.calls: too many calls in iteration %lld", where, it);
    prophet_log_call_t *v = realloc(ri->calls, (ri->n + n + 1) * sizeof(*v));
    if (!v)
        return fail(c, "out of memory");
    ri->calls = v;
    for (size_t i = 0; i < n; i++) {
        char w[96];
        snprintf(w, sizeof(w), "%s.calls[%zu]", where, i);
        if (load_call(c, json_array_get(calls, i), w, (uint64_t)it, &ri->calls[ri->n]))
            return -1;
        ri->n++;
    }
    return 0;
}

static int load_records(ctx_t *c, json_t *root, rep_log_t *log)
{
    int rc = 0;
    json_t *recs = get_array(c, root, "document", "records", &rc);
    if (!recs)
        return -1;
    size_t i;
    json_t *r;
    json_array_foreach(recs, i, r)
    {
        char where[48], kind[24];
        snprintf(where, sizeof(where), "records[%zu]", i);
        if (!json_is_object(r))
            return fail(c, "%s: expected an object", where);
        if (get_str(c, r, where, "kind", kind, sizeof(kind)))
            return -1;
        if (!strcmp(kind, "profile"))
            rc = load_profile(c, r, where, log);
        else if (!strcmp(kind, "net"))
            rc = load_net(c, r, where, log);
        else if (!strcmp(kind, "plan"))
            rc = load_plan(c, r, where, log);
        else if (!strcmp(kind, "sample"))
            rc = load_sample(c, r, where, log);
        else if (!strcmp(kind, "iteration"))
            rc = load_iteration(c, r, where, log);
        else
            rc = fail(c, "%s.kind: unknown record kind \"%s\"", where, kind);
        if (rc)
            return rc;
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : (x > y);
}

/* The job's step of each iteration: its bytes_before over the bytes of one iteration (the median
 * difference between consecutive iteration starts, else the learned profile's bytes). */
static void number_steps(rep_log_t *log)
{
    int64_t *d = malloc((log->n_iters + 1) * sizeof(*d));
    size_t n = 0;
    if (!d)
        return;
    for (size_t i = 0; i + 1 < log->n_iters; i++) {
        const rep_iter_t *a = &log->iters[i], *b = &log->iters[i + 1];
        if (b->iteration == a->iteration + 1 && a->bytes_before >= 0 &&
            b->bytes_before > a->bytes_before)
            d[n++] = b->bytes_before - a->bytes_before;
    }
    if (n) {
        qsort(d, n, sizeof(*d), cmp_i64);
        log->period_bytes = d[n / 2];
    } else if (log->profile) {
        for (uint32_t k = 0; k < log->profile->n_calls; k++)
            log->period_bytes += (int64_t)log->profile->sig[k].bytes;
    }
    free(d);
    for (size_t i = 0; i < log->n_iters; i++) {
        rep_iter_t *it = &log->iters[i];
        it->step = prophet_log_step_of(it->bytes_before, log->period_bytes, &it->step_exact);
        log->have_steps |= it->step >= 0 && it->step_exact;
    }
}

int64_t rep_step_of(const rep_log_t *log, uint64_t iteration)
{
    const rep_iter_t *below = NULL, *above = NULL;
    for (size_t i = 0; i < log->n_iters; i++) {
        const rep_iter_t *it = &log->iters[i];
        if (it->iteration == iteration && (it->step < 0 || !it->step_exact))
            return -1; /* numbered while the preload learned: no step of its own */
        if (it->step < 0 || !it->step_exact)
            continue;
        if (it->iteration <= iteration)
            below = it;
        else if (!above)
            above = it;
    }
    if (below)
        return below->step + (int64_t)(iteration - below->iteration);
    if (above && above->step >= (int64_t)(above->iteration - iteration))
        return above->step - (int64_t)(above->iteration - iteration);
    return -1;
}

int rep_step_range(const rep_log_t *log, int64_t *first, int64_t *last)
{
    *first = *last = -1;
    for (size_t i = 0; i < log->n_iters; i++) {
        const rep_iter_t *it = &log->iters[i];
        if (it->step < 0 || !it->step_exact)
            continue;
        if (*first < 0)
            *first = it->step;
        *last = it->step;
    }
    return *first >= 0 ? 0 : -1;
}

static int cmp_iter(const void *a, const void *b)
{
    const rep_iter_t *x = a, *y = b;
    return x->iteration < y->iteration ? -1 : (x->iteration > y->iteration);
}

static int read_all(const char *path, char **buf, size_t *len, ctx_t *c)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(c, "cannot open: %s", strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 8);
    while (b) {
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        if (cap >= MAX_FILE_BYTES) {
            free(b);
            fclose(f);
            return fail(c, "file larger than %llu bytes", (unsigned long long)MAX_FILE_BYTES);
        }
        cap *= 2;
        char *nb = realloc(b, cap + 8);
        if (!nb)
            free(b);
        b = nb;
    }
    int ioerr = ferror(f);
    fclose(f);
    if (!b)
        return fail(c, "out of memory");
    if (ioerr) {
        free(b);
        return fail(c, "read error");
    }
    *buf = b;
    *len = n;
    return 0;
}

/* Cuts a truncated streamed log after its last complete record line and closes the document.
 * Returns the parsed document or NULL. */
static json_t *recover(const char *text, size_t len)
{
    char *copy = malloc(len + 8);
    json_t *root = NULL;
    if (!copy)
        return NULL;
    size_t end = len;
    for (int tries = 0; tries < 4 && !root; tries++) {
        while (end > 0 && text[end - 1] != '\n')
            end--;
        if (end == 0)
            break;
        memcpy(copy, text, end);
        memcpy(copy + end, "]}", 3);
        root = json_loadb(copy, end + 2, JSON_REJECT_DUPLICATES, NULL);
        end--;
    }
    free(copy);
    return root;
}

static size_t trimmed_len(const char *t, size_t len)
{
    while (len > 0 &&
           (t[len - 1] == ' ' || t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == '\t'))
        len--;
    return len;
}

int rep_load(const char *path, int allow_truncated, rep_log_t *out, char *err, size_t errlen)
{
    ctx_t c = {err, errlen};
    char *text = NULL;
    size_t len = 0;
    json_t *root = NULL;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    out->path = path;
    if (read_all(path, &text, &len, &c))
        return -1;
    if (trimmed_len(text, len) == 0) {
        fail(&c, "empty file (not a prophet-log/1 log)");
        goto out;
    }
    json_error_t je;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        int truncated = je.position >= 0 && (size_t)je.position >= trimmed_len(text, len);
        if (truncated && allow_truncated && (root = recover(text, len)) != NULL) {
            out->recovered = 1;
        } else if (truncated) {
            fail(&c,
                 "truncated at byte %zu (the job was killed or is still running?); "
                 "--allow-truncated reads the complete records",
                 len);
            goto out;
        } else {
            fail(&c, "not valid JSON: %s at line %d column %d", je.text, je.line, je.column);
            goto out;
        }
    }
    if (!json_is_object(root)) {
        fail(&c, "not a prophet-log/1 log: the document is not a JSON object");
        goto out;
    }
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt)) {
        fail(&c, "not a prophet-log/1 log: no \"format\" string");
        goto out;
    }
    if (strcmp(json_string_value(fmt), PROPHET_LOG_FORMAT) != 0) {
        fail(&c, "unsupported format \"%.40s\" (expected \"%s\")", json_string_value(fmt),
             PROPHET_LOG_FORMAT);
        goto out;
    }
    if (load_meta(&c, root, out) || load_records(&c, root, out))
        goto out;
    json_t *complete = json_object_get(root, "complete");
    out->complete = json_is_true(complete);
    json_t *counters = json_object_get(root, "counters");
    if (counters) {
        long long d;
        if (!json_is_object(counters)) {
            fail(&c, "counters: expected an object");
            goto out;
        }
        if (get_int(&c, counters, "counters", "calls_dropped", 0, TIME_MAX, &d))
            goto out;
        if ((uint64_t)d > out->calls_dropped)
            out->calls_dropped = (uint64_t)d;
    }
    if (out->n_iters)
        qsort(out->iters, out->n_iters, sizeof(*out->iters), cmp_iter);
    for (size_t i = 0; i < out->n_iters; i++)
        if (out->iters[i].n)
            qsort(out->iters[i].calls, out->iters[i].n, sizeof(prophet_log_call_t),
                  prophet_log_call_cmp);
    number_steps(out);
    rc = 0;
out:
    json_decref(root);
    free(text);
    if (rc)
        rep_free(out);
    return rc;
}

void rep_free(rep_log_t *log)
{
    for (size_t i = 0; i < log->n_iters; i++)
        free(log->iters[i].calls);
    free(log->iters);
    free(log->nets);
    free(log->plans);
    free(log->profile);
    const char *path = log->path;
    memset(log, 0, sizeof(*log));
    log->path = path;
}
