/* Profile learner: period and phase from signatures only (same boundaries whatever the timing),
 * DDP's different first iteration, sub-periods of identical layers, a changed sequence
 * (relearn), deferred readiness, robust offsets under noise. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "prophet/sched.h"
#include "sched_internal.h"

typedef struct stream {
    prophet_call_sig_t sig[512];
    double off[512]; /* true readiness offset of each call in its iteration */
    uint32_t n;
} stream_t;

static void add(stream_t *s, uint64_t bytes, double off)
{
    prophet_call_sig_t *g = &s->sig[s->n];

    memset(g, 0, sizeof(*g));
    g->comm_id = 0;
    g->count = bytes / 4;
    g->dtype = 7;
    g->bytes = bytes;
    s->off[s->n++] = off;
}

/* n distinct tensors, stepwise readiness: steps of 4 calls, 800 us apart. */
static void make_distinct(stream_t *s, uint32_t n, uint64_t base)
{
    s->n = 0;
    for (uint32_t i = 0; i < n; i++)
        add(s, base + 4 * (i + 1) * 1000, (i / 4) * 800.0 + (i % 4) * 3.0);
}

typedef struct run {
    prophet_learner_t *l;
    int64_t clock;
    uint64_t rng;
    uint32_t ready_flags, relearn_flags, starts;
    double noise;
} run_t;

/* Feeds one iteration of `s`; checks indices once locked. Returns the flags seen. */
static int feed_iter(run_t *r, const stream_t *s, int check_index)
{
    int all = 0;

    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t idx;
        double jitter = r->noise * (2 * test_uniform(&r->rng) - 1);
        int f = prophet_learner_observe(r->l, &s->sig[i], r->clock + (int64_t)(s->off[i] + jitter),
                                        &idx);

        CHECK(f >= 0);
        all |= f;
        if (check_index)
            CHECKF(idx == i, "call %u got index %u", i, idx);
        if (f & PROPHET_LEARN_ITER_START)
            CHECK(idx == 0);
    }
    r->clock += 100000;
    return all;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Offsets must match the truth up to one common shift (the first call's own noise moves them
 * all alike, which no plan can notice): residuals around the median error within tol. */
static void check_profile(const prophet_learner_t *l, const stream_t *s, double tol)
{
    const prophet_profile_t *p = prophet_learner_profile(l);
    double e[512], sorted[512], shift;

    CHECK(p);
    CHECKF(p->n_calls == s->n, "profile has %u calls, want %u", p->n_calls, s->n);
    CHECK(p->ready_us[0] == 0);
    for (uint32_t i = 0; i < s->n; i++) {
        CHECK(p->sig[i].bytes == s->sig[i].bytes);
        CHECK(p->priority[i] == s->n - 1 - i);
        e[i] = sorted[i] = p->ready_us[i] - (s->off[i] - s->off[0]);
    }
    qsort(sorted, s->n, sizeof(double), cmp_d);
    shift = sorted[s->n / 2];
    CHECKF(fabs(shift) <= tol, "common shift %.1f", shift);
    for (uint32_t i = 0; i < s->n; i++)
        CHECKF(fabs(e[i] - shift) <= tol, "call %u: %.1f want %.1f (+%.1f)", i, p->ready_us[i],
               s->off[i] - s->off[0], shift);
    CHECK(fabs(p->iteration_us - 100000) < 5 * tol + 1);
    CHECK(p->n_steps >= 1);
}

/* ---- phase anchoring on real call sequences --------------------------------------------- */

typedef struct seq {
    prophet_call_sig_t *sig;
    uint32_t n, cap;
} seq_t;

static void seq_push(seq_t *q, const prophet_call_sig_t *g)
{
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 1024;
        q->sig = realloc(q->sig, q->cap * sizeof(*q->sig));
        CHECK(q->sig);
    }
    q->sig[q->n++] = *g;
}

/* The tensors of a prophet-profile/1 file, in its (backward) order, as all-reduce calls. */
static void load_profile(const char *dir, const char *name, prophet_profile_t *p)
{
    char path[1024], err[256];
    FILE *f;
    char *text;
    long len;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "rb");
    CHECKF(f, "cannot open %s", path);
    CHECK(fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0);
    text = malloc((size_t)len);
    CHECK(text && fread(text, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    CHECKF(prophet_profile_from_json(text, (size_t)len, p, err, sizeof(err)) == 0, "%s: %s", path,
           err);
    free(text);
}

/* Buckets of consecutive calls of at most cap bytes (a call larger than cap is its own bucket),
 * taken from `order` (indices into p's calls) and appended as one call each. */
static void add_buckets(seq_t *q, const prophet_profile_t *p, const uint32_t *order, uint64_t cap)
{
    uint64_t acc = 0;

    for (uint32_t i = 0; i < p->n_calls; i++) {
        acc += p->sig[order[i]].bytes;
        if (acc >= cap || i + 1 == p->n_calls) {
            prophet_call_sig_t g = {
                .comm_id = 0, .count = acc / 4, .dtype = 7, .op = 0, .bytes = acc};

            seq_push(q, &g);
            acc = 0;
        }
    }
}

/* Feeds `q` to a fresh learner (no timing: boundaries must not need it). Sub-periods (runs of
 * equal-sized tensors) may lock, even become ready, and break first; whatever the lock, the
 * anchoring it reports must hold at each of its iteration starts. The lock standing at the end
 * must be the true iteration (want_P calls, want_bytes) with every start a whole number of
 * iterations' bytes (and, when the first iteration is like the others, calls) from the first
 * call. */
static void check_anchor(const char *what, const seq_t *q, uint32_t learn_iters, uint32_t want_P,
                         uint64_t want_bytes, int calls_too)
{
    prophet_learner_opts_t o = {.learn_iters = learn_iters, .max_calls = PROPHET_MAX_CALLS};
    prophet_learner_t *l = prophet_learner_new(&o);
    uint64_t cum = 0;
    uint32_t starts = 0, relearns = 0, first_bad = UINT32_MAX;
    int ready = 0;
    const prophet_profile_t *p;

    CHECK(l);
    CHECK(prophet_learner_anchored(l) == 0);
    for (uint32_t i = 0; i < q->n; i++) {
        uint32_t idx;
        int f = prophet_learner_observe(l, &q->sig[i], -1, &idx);

        CHECK(f >= 0);
        if (f & PROPHET_LEARN_RELEARN) { /* a new lock: judge it afresh */
            relearns++;
            ready = 0;
            starts = 0;
            first_bad = UINT32_MAX;
        }
        if (f & PROPHET_LEARN_READY)
            ready = 1;
        if (f & PROPHET_LEARN_ITER_START)
            CHECK(idx == 0);
        if (ready && idx == 0) {
            uint64_t pb = 0;
            int an = prophet_learner_anchored(l);

            p = prophet_learner_profile(l);
            CHECK(p);
            for (uint32_t k = 0; k < p->n_calls; k++)
                pb += p->sig[k].bytes;
            /* the accessor's contract, sub-periods included */
            CHECKF(an != PROPHET_LEARN_ANCHOR_BYTES || cum % pb == 0,
                   "%s: call %u: bytes-anchored period %u starts %llu bytes past a whole one", what,
                   i, p->n_calls, (unsigned long long)(cum % pb));
            CHECKF(an != PROPHET_LEARN_ANCHOR_CALLS || i % p->n_calls == 0,
                   "%s: call %u: calls-anchored period %u starts %u calls past a whole one", what,
                   i, p->n_calls, i % p->n_calls);
            if (first_bad == UINT32_MAX &&
                (p->n_calls != want_P || cum % want_bytes != 0 || (calls_too && i % want_P != 0) ||
                 an != PROPHET_LEARN_ANCHOR_BYTES))
                first_bad = i;
            starts++;
        }
        cum += q->sig[i].bytes;
    }
    p = prophet_learner_profile(l);
    CHECKF(ready && p, "%s: not ready at the end (%u relearns)", what, relearns);
    CHECKF(p->n_calls == want_P, "%s: final period %u, want %u", what, p->n_calls, want_P);
    CHECKF(first_bad == UINT32_MAX,
           "%s: final lock (period %u, anchored %d) starts an iteration at call %u, %u calls from "
           "a whole iteration",
           what, p->n_calls, prophet_learner_anchored(l), first_bad,
           first_bad == UINT32_MAX ? 0 : first_bad % want_P);
    CHECKF(starts >= 8, "%s: only %u iteration starts once ready", what, starts);
    printf("learner: %s: period %u, %u relearns, %u iteration starts once ready\n", what, want_P,
           relearns, starts);
    prophet_learner_free(l);
}

/* Per-tensor hooks: every tensor of the profile, 40 iterations. */
static void check_per_tensor(const char *dir, const char *name)
{
    static prophet_profile_t p;
    seq_t q = {0};
    uint64_t bytes = 0;

    load_profile(dir, name, &p);
    for (uint32_t i = 0; i < p.n_calls; i++) {
        p.sig[i].comm_id = 0;
        p.sig[i].dtype = 7;
        p.sig[i].op = 0;
        bytes += p.sig[i].bytes;
    }
    for (int it = 0; it < 40; it++)
        for (uint32_t i = 0; i < p.n_calls; i++)
            seq_push(&q, &p.sig[i]);
    check_anchor(name, &q, 3, p.n_calls, bytes, 1);
    free(q.sig);
}

/* A per-parameter loop over a transformer's parameters in registration order: `layers`
 * identical layers of 12 tensors (d_model 512, feed-forward 2048: nn.TransformerEncoderLayer),
 * then the head (1000 x 512 and its bias). The head carries 16% of one layer's bytes but 8% of
 * two layers': a two-layer sub-period must not take the head for a job's extra calls (found on
 * the H100: a 6-layer transformer never locked its 74-call iteration in 40 steps). */
static void check_layers(uint32_t layers)
{
    static const uint64_t el[12] = {1536 * 512, 1536, 512 * 512, 512, 2048 * 512, 2048,
                                    512 * 2048, 512,  512,       512, 512,        512};
    prophet_call_sig_t g = {.comm_id = 0, .dtype = 7, .op = 0};
    seq_t q = {0};
    uint64_t bytes = 0;
    char what[64];

    for (int it = 0; it < 30; it++) {
        for (uint32_t L = 0; L < layers; L++)
            for (int j = 0; j < 12; j++) {
                g.count = el[j];
                g.bytes = 4 * el[j];
                seq_push(&q, &g);
                bytes += it == 0 ? g.bytes : 0;
            }
        g.count = 1000 * 512;
        g.bytes = 4 * g.count;
        seq_push(&q, &g);
        bytes += it == 0 ? g.bytes : 0;
        g.count = 1000;
        g.bytes = 4 * g.count;
        seq_push(&q, &g);
        bytes += it == 0 ? g.bytes : 0;
    }
    snprintf(what, sizeof(what), "transformer, %u identical layers and a head", layers);
    check_anchor(what, &q, 4, 12 * layers + 2, bytes, 1);
    free(q.sig);
}

/* DDP: the first iteration's buckets (cap0) follow registration (forward) order, later ones
 * (cap) the backward order; same total bytes, other sizes and count. */
static void check_ddp(const char *dir, const char *name, uint64_t cap0, uint64_t cap)
{
    static prophet_profile_t p;
    static uint32_t fwd[PROPHET_MAX_CALLS], bwd[PROPHET_MAX_CALLS];
    seq_t q = {0}, one = {0};
    uint64_t bytes = 0;
    char what[128];

    load_profile(dir, name, &p);
    for (uint32_t i = 0; i < p.n_calls; i++) {
        fwd[i] = p.n_calls - 1 - i;
        bwd[i] = i;
        bytes += p.sig[i].bytes;
    }
    add_buckets(&q, &p, fwd, cap0);
    add_buckets(&one, &p, bwd, cap);
    for (int it = 1; it < 40; it++)
        for (uint32_t i = 0; i < one.n; i++)
            seq_push(&q, &one.sig[i]);
    snprintf(what, sizeof(what), "%s DDP %llu-byte buckets (first iteration %llu: %u calls)", name,
             (unsigned long long)cap, (unsigned long long)cap0, q.n - 39 * one.n);
    check_anchor(what, &q, 3, one.n, bytes, 0);
    free(q.sig);
    free(one.sig);
}

/* A genuine change of the sequence mid-job (a gradient dropped from iteration 30 on, as when a
 * layer is frozen): the trusted 161-call lock breaks, and the new lock is anchored by bytes at
 * the broken lock's last iteration start, so boundaries fall every 160 calls from the change. */
static void check_change(const char *dir)
{
    static prophet_profile_t p;
    prophet_learner_opts_t o = {.learn_iters = 3, .max_calls = PROPHET_MAX_CALLS};
    prophet_learner_t *l;
    uint32_t idx, P;
    int relearned = 0, starts = 0;

    load_profile(dir, "resnet50.json", &p);
    for (uint32_t i = 0; i < p.n_calls; i++) {
        p.sig[i].comm_id = 0;
        p.sig[i].dtype = 7;
        p.sig[i].op = 0;
    }
    CHECK(l = prophet_learner_new(&o));
    for (int it = 0; it < 90; it++) {
        for (uint32_t i = 0; i < p.n_calls; i++) {
            int f;
            if (it >= 30 && i == 5)
                continue; /* dropped from iteration 30 on */
            f = prophet_learner_observe(l, &p.sig[i], -1, &idx);
            CHECK(f >= 0);
            if (it >= 30 && (f & PROPHET_LEARN_RELEARN))
                relearned = 1;
            if (it < 60)
                continue;
            /* the last 30 iterations: the learner's iterations are the job's */
            CHECKF(!!(f & PROPHET_LEARN_ITER_START) == (i == 0),
                   "changed sequence: iteration %d call %u: ITER_START=%d", it, i,
                   !!(f & PROPHET_LEARN_ITER_START));
            CHECK(prophet_learner_anchored(l) == PROPHET_LEARN_ANCHOR_BYTES);
            starts += i == 0;
        }
    }
    CHECK(relearned && starts == 30);
    CHECK(prophet_learner_profile(l));
    P = prophet_learner_profile(l)->n_calls;
    CHECKF(P == p.n_calls - 1, "changed sequence: period %u, want %u", P, p.n_calls - 1);
    prophet_learner_free(l);
    printf("changed sequence: relearned, period %u anchored by bytes at the change\n", P);
}

typedef struct keyed {
    uint32_t key, count;
} keyed_t;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;

    return x->key != y->key ? (x->key > y->key) - (x->key < y->key)
                            : (x->count > y->count) - (x->count < y->count);
}

static prophet_call_sig_t sig_of_count(uint32_t count)
{
    prophet_call_sig_t g;

    memset(&g, 0, sizeof(g));
    g.count = count;
    g.dtype = 7;
    g.bytes = 4ull * count;
    return g;
}

/* Two signatures (float tensors of counts *a != *b) that share the search's 32-bit key: a
 * birthday search over 2^19 counts (about 32 pairs expected). */
static void find_collision(uint32_t *a, uint32_t *b)
{
    const uint32_t n = 1u << 19;
    keyed_t *v = malloc(n * sizeof(*v));

    CHECK(v);
    for (uint32_t i = 0; i < n; i++) {
        prophet_call_sig_t g = sig_of_count(i + 1);

        v[i].key = prophet_learner_search_key(&g);
        v[i].count = i + 1;
    }
    qsort(v, n, sizeof(*v), cmp_keyed);
    *a = *b = 0;
    for (uint32_t i = 1; i < n && !*a; i++)
        if (v[i].key == v[i - 1].key) {
            *a = v[i - 1].count;
            *b = v[i].count;
        }
    free(v);
    CHECKF(*a && *b, "no 32-bit key collision among %u signatures", n);
}

/* The period search compares 32-bit keys; two different calls that share one must not make a
 * period out of a stream that is not periodic. Ten distinct calls X, then X with its first call
 * swapped for one of the same key, then X twice: the true runs restart at calls 10 and 20, so
 * the lock (3 equal copies) comes at call 40, not at call 29 as the keys alone would have it. */
static void check_key_collision(void)
{
    prophet_learner_opts_t o = {.learn_iters = 4, .max_calls = PROPHET_MAX_CALLS};
    prophet_learner_t *l = prophet_learner_new(&o);
    prophet_call_sig_t x[10];
    uint32_t a, b, idx = 0, first_lock = UINT32_MAX;

    CHECK(l);
    find_collision(&a, &b);
    x[0] = sig_of_count(a);
    for (uint32_t i = 1; i < 10; i++)
        x[i] = sig_of_count((1u << 20) + 1000 * i); /* beyond the searched counts */
    for (uint32_t c = 0; c < 6 * 10 && first_lock == UINT32_MAX; c++) {
        prophet_call_sig_t g = c / 10 == 1 && c % 10 == 0 ? sig_of_count(b) : x[c % 10];

        CHECK(prophet_learner_observe(l, &g, -1, &idx) >= 0);
        if (idx != UINT32_MAX)
            first_lock = c;
    }
    CHECKF(first_lock == 40, "counts %u and %u share a key: first lock at call %u, want 40", a, b,
           first_lock);
    prophet_learner_free(l);
    printf("key collision: counts %u and %u share a search key; the lock waits for call 40\n", a,
           b);
}

/* ---- extras: calls outside the iteration ------------------------------------------------ */

static prophet_call_sig_t extra_sig(uint64_t count, int32_t dtype, uint64_t elem)
{
    prophet_call_sig_t g = {.comm_id = 0, .count = count, .dtype = dtype, .op = 0};

    g.bytes = count * elem;
    return g;
}

typedef struct extras_run {
    prophet_learner_t *l;
    uint32_t relearns, starts, extras, wrong;
    int ready, judged; /* judged: from the iteration the whole iteration must be locked on */
} extras_run_t;

/* Feeds one call; `want` is its index in the iteration, or UINT32_MAX for an extra. Counts the
 * calls whose flags or index are not what a learner that knows the job would say, once ready. */
static void extras_feed(extras_run_t *r, const prophet_call_sig_t *g, uint32_t want)
{
    uint32_t idx;
    int f = prophet_learner_observe(r->l, g, -1, &idx);

    CHECK(f >= 0);
    r->ready |= !!(f & PROPHET_LEARN_READY);
    if (!r->judged)
        return;
    r->relearns += !!(f & PROPHET_LEARN_RELEARN);
    r->starts += !!(f & PROPHET_LEARN_ITER_START);
    r->extras += !!(f & PROPHET_LEARN_EXTRA);
    if (idx != want || !!(f & PROPHET_LEARN_EXTRA) != (want == UINT32_MAX) ||
        !!(f & PROPHET_LEARN_ITER_START) != (want == 0))
        r->wrong++;
}

/* A real training loop around ResNet-50's per-tensor calls: a barrier before the first
 * iteration, a loss all-reduce after every 10th iteration, three metric all-reduces (one in
 * int64) after every 25th, an evaluation phase of 600 metric calls after iteration 100. The
 * learner locks on the 161 calls, anchored by bytes at the true boundary (the barrier left out),
 * and takes every other call as an extra: no relearn, every index right. Then an evaluation
 * whose calls are large (a confusion matrix: a quarter of an iteration's bytes each) breaks the
 * lock; the iteration locks again when it comes back, in the phase it had (its template was
 * trusted, so it was kept, not rejected). */
static void check_extras(const char *dir)
{
    static prophet_profile_t p;
    prophet_learner_opts_t o = {.learn_iters = 3, .max_calls = PROPHET_MAX_CALLS};
    prophet_call_sig_t loss = extra_sig(1, 7, 4), m1 = extra_sig(4, 7, 4), m2 = extra_sig(2, 5, 8),
                       big;
    extras_run_t r = {0};
    uint64_t bytes = 0, issued = 0;
    uint32_t first_ready = 0;

    load_profile(dir, "resnet50.json", &p);
    for (uint32_t i = 0; i < p.n_calls; i++) {
        p.sig[i].comm_id = 0;
        p.sig[i].dtype = 7;
        p.sig[i].op = 0;
        bytes += p.sig[i].bytes;
    }
    big = extra_sig(bytes / 16, 7, 4); /* a quarter of an iteration's bytes */
    CHECK(r.l = prophet_learner_new(&o));
    extras_feed(&r, &loss, UINT32_MAX); /* the barrier */
    for (int it = 0; it < 200; it++) {
        const prophet_profile_t *lp = prophet_learner_profile(r.l);

        if (lp && lp->n_calls == p.n_calls && !first_ready)
            first_ready = (uint32_t)it;
        r.judged = it >= 10;
        for (uint32_t i = 0; i < p.n_calls; i++)
            extras_feed(&r, &p.sig[i], i);
        if (it % 10 == 9) {
            extras_feed(&r, &loss, UINT32_MAX);
            issued += r.judged;
        }
        if (it % 25 == 24) {
            extras_feed(&r, &m1, UINT32_MAX);
            extras_feed(&r, &loss, UINT32_MAX);
            extras_feed(&r, &m2, UINT32_MAX);
            issued += 3 * (uint64_t)r.judged;
        }
        for (int k = 0; it == 100 && k < 200; k++) {
            extras_feed(&r, &m1, UINT32_MAX);
            extras_feed(&r, &loss, UINT32_MAX);
            extras_feed(&r, &m2, UINT32_MAX);
            issued += 3;
        }
    }
    CHECKF(r.ready && first_ready && first_ready <= 10, "extras: ready from iteration %u",
           first_ready);
    CHECKF(r.relearns == 0 && r.wrong == 0 && r.extras == issued,
           "extras: %u relearns, %u calls with a wrong index or flag, %u extras of %llu",
           r.relearns, r.wrong, r.extras, (unsigned long long)issued);
    CHECK(prophet_learner_anchored(r.l) == PROPHET_LEARN_ANCHOR_BYTES);
    printf("extras: ResNet-50 per-tensor, ready at iteration %u, %u extras, no relearn\n",
           first_ready, r.extras);

    /* a large evaluation: the lock breaks at its first call, and comes back in its phase */
    {
        uint32_t idx, relock = UINT32_MAX, wrong = 0, starts = 0;

        CHECK(prophet_learner_observe(r.l, &big, -1, &idx) & PROPHET_LEARN_RELEARN);
        for (int k = 0; k < 5; k++)
            CHECK(prophet_learner_observe(r.l, &big, -1, &idx) >= 0);
        for (int it = 0; it < 12; it++) {
            for (uint32_t i = 0; i < p.n_calls; i++) {
                int f = prophet_learner_observe(r.l, &p.sig[i], -1, &idx);

                CHECK(f >= 0);
                if (relock == UINT32_MAX && idx != UINT32_MAX)
                    relock = (uint32_t)it;
                if (relock != UINT32_MAX &&
                    (idx != i || !!(f & PROPHET_LEARN_ITER_START) != (i == 0)))
                    wrong++;
                starts += !!(f & PROPHET_LEARN_ITER_START);
            }
        }
        CHECKF(prophet_learner_anchored(r.l) == PROPHET_LEARN_ANCHOR_TEMPLATE,
               "after a large evaluation: anchor %d", prophet_learner_anchored(r.l));
        CHECKF(relock <= 4 && wrong == 0 && starts >= 8,
               "after a large evaluation: locked again at iteration %u, %u wrong indices, %u "
               "starts",
               relock, wrong, starts);
        printf("extras: a large evaluation broke the lock; locked again %u iterations later, in "
               "its phase\n",
               relock);
    }
    prophet_learner_free(r.l);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "profiles";
    prophet_learner_opts_t o = {.learn_iters = 4, .max_calls = PROPHET_MAX_CALLS};
    static stream_t a, b, x, bert;
    run_t r;
    int f, it;

    CHECK(prophet_learner_new(NULL) == NULL);
    {
        prophet_learner_opts_t bad = {.learn_iters = 1, .max_calls = 10};

        CHECK(prophet_learner_new(&bad) == NULL);
    }

    /* 1. Clean stream of 30 distinct calls: locks after 3 copies, indices from then on, ready
     *    after learn_iters completed iterations, offsets within the noise. */
    make_distinct(&a, 30, 0);
    memset(&r, 0, sizeof(r));
    r.clock = 1000000; /* negative ready times mean "unknown" */
    r.l = prophet_learner_new(&o);
    r.rng = 5;
    r.noise = 20;
    for (it = 0; it < 3; it++)
        feed_iter(&r, &a, 0);
    CHECK(prophet_learner_profile(r.l) == NULL);
    for (it = 0; it < 8; it++) {
        f = feed_iter(&r, &a, 1);
        CHECK(f & PROPHET_LEARN_ITER_START);
        CHECK(!(f & PROPHET_LEARN_RELEARN));
    }
    check_profile(r.l, &a, 25);

    /* 2. The sequence changes (another model): RELEARN on the first mismatch, profile dropped,
     *    then the new one is learnt. */
    make_distinct(&b, 20, 7);
    f = feed_iter(&r, &b, 0);
    CHECK(f & PROPHET_LEARN_RELEARN);
    CHECK(prophet_learner_profile(r.l) == NULL);
    for (it = 0; it < 10; it++)
        feed_iter(&r, &b, it >= 3);
    check_profile(r.l, &b, 25);
    prophet_learner_free(r.l);

    /* 3. DDP: the first iteration has other buckets (same total bytes) whose last bucket equals
     *    the later iterations' last bucket; the boundary must still be the real one. */
    a.n = 0;
    add(&a, 1 << 20, 0);
    add(&a, 25 << 20, 3000);
    add(&a, 20 << 20, 6000);
    add(&a, 24 << 20, 9000);
    add(&a, 9 << 20, 12000); /* 79 MiB */
    x.n = 0;
    add(&x, 30 << 20, 5000);
    add(&x, 26 << 20, 8000);
    add(&x, 14 << 20, 11000);
    add(&x, 9 << 20, 12000); /* same tail bucket, 79 MiB */
    memset(&r, 0, sizeof(r));
    r.clock = 1000000; /* negative ready times mean "unknown" */
    r.l = prophet_learner_new(&o);
    r.rng = 9;
    r.noise = 10;
    feed_iter(&r, &x, 0);
    for (it = 0; it < 3; it++)
        feed_iter(&r, &a, 0);
    for (it = 0; it < 6; it++)
        CHECK(feed_iter(&r, &a, 1) & PROPHET_LEARN_ITER_START);
    check_profile(r.l, &a, 15);
    prophet_learner_free(r.l);

    /* 4. Identical layers (BERT-like): 3 head calls, 8 x the same 4-call layer, 2 embedding
     *    calls. Sub-periods lock and break, then the whole iteration is found. */
    bert.n = 0;
    add(&bert, 3072, 0);
    add(&bert, 3072 * 768, 10);
    add(&bert, 768 * 4, 20);
    for (int k = 0; k < 8; k++) {
        add(&bert, 768 * 768 * 4, 500.0 + 700 * k);
        add(&bert, 768 * 4, 510.0 + 700 * k);
        add(&bert, 3072 * 768 * 4, 800.0 + 700 * k);
        add(&bert, 3072 * 4, 805.0 + 700 * k);
    }
    add(&bert, 30522 * 768 * 4, 6500);
    add(&bert, 512 * 768 * 4, 6510);
    memset(&r, 0, sizeof(r));
    r.clock = 1000000; /* negative ready times mean "unknown" */
    r.l = prophet_learner_new(&o);
    r.rng = 11;
    r.noise = 5;
    for (it = 0; it < 6; it++)
        feed_iter(&r, &bert, 0);
    for (it = 0; it < 6; it++)
        CHECK(!(feed_iter(&r, &bert, 1) & PROPHET_LEARN_RELEARN));
    check_profile(r.l, &bert, 10);

    /* 5. Deferred readiness: observe with -1, set_ready afterwards (one iteration late). */
    {
        uint64_t iters[64];
        uint32_t n_it = 0;

        for (it = 0; it < 8; it++) {
            uint64_t its = 0;

            for (uint32_t i = 0; i < bert.n; i++) {
                uint32_t idx;

                CHECK(prophet_learner_observe(r.l, &bert.sig[i], -1, &idx) >= 0 && idx == i);
                its = prophet_learner_iteration(r.l);
            }
            iters[n_it++] = its;
            for (uint32_t i = 0; i < bert.n; i++) /* 7 us late everywhere: offsets unchanged */
                CHECK(prophet_learner_set_ready(r.l, its, i, r.clock + (int64_t)bert.off[i] + 7) ==
                      0);
            r.clock += 100000;
        }
        CHECK(iters[1] == iters[0] + 1);
        CHECK(prophet_learner_set_ready(r.l, iters[0] + 1000, 0, 5) == -ENOENT);
        CHECK(prophet_learner_set_ready(r.l, iters[0], 9999, 5) == -ENOENT);
        check_profile(r.l, &bert, 10);
    }
    prophet_learner_free(r.l);

    /* 6. Heavy noise with a late first call in some iterations: medians after re-alignment. */
    make_distinct(&a, 40, 0);
    memset(&r, 0, sizeof(r));
    r.clock = 1000000;
    o.learn_iters = 8;
    r.l = prophet_learner_new(&o);
    r.rng = 13;
    r.noise = 30;
    for (it = 0; it < 14; it++) {
        stream_t s = a;

        if (it % 4 == 1)
            s.off[0] += 400; /* the first call arrives late: its gate was closed */
        feed_iter(&r, &s, it >= 3);
    }
    check_profile(r.l, &a, 30);
    {
        const prophet_profile_t *p = prophet_learner_profile(r.l);

        CHECK(p->spread_us[5] > 0 && p->spread_us[5] < 40);
        CHECKF(p->iterations_seen >= 8, "seen %u", p->iterations_seen);
    }
    prophet_learner_free(r.l);

    /* 7. Boundaries and flags depend on signatures only: two learners, same calls, wildly
     *    different (or missing) timing, identical indices and flags, READY included. */
    {
        prophet_learner_t *l1, *l2;
        uint64_t rng = 17;

        o.learn_iters = 3;
        l1 = prophet_learner_new(&o);
        l2 = prophet_learner_new(&o);
        for (it = 0; it < 12; it++) {
            const stream_t *s = it < 2 ? &x : it < 7 ? &bert : &b;

            for (uint32_t i = 0; i < s->n; i++) {
                uint32_t i1, i2;
                int f1 = prophet_learner_observe(l1, &s->sig[i],
                                                 (int64_t)(test_rand(&rng) % 1000000), &i1);
                int f2 = prophet_learner_observe(l2, &s->sig[i], i % 2 ? -1 : 5, &i2);
                CHECK(f1 >= 0 && f2 >= 0 && f1 == f2 && i1 == i2);
            }
        }
        CHECK(prophet_learner_iteration(l1) == prophet_learner_iteration(l2));
        prophet_learner_free(l1);
        prophet_learner_free(l2);
    }

    /* 8. Real models (per-tensor calls, many tensors of equal size: sub-periods lock and break
     *    first) and DDP-like buckets: once ready, the boundary is a whole number of iterations
     *    from the first call. */
    check_per_tensor(dir, "resnet50.json");
    check_change(dir);
    check_key_collision();
    check_per_tensor(dir, "bert_base.json");
    check_per_tensor(dir, "mobilenet_v2.json");
    check_per_tensor(dir, "vgg16.json");
    check_ddp(dir, "resnet50.json", 25u << 20, 1); /* then per tensor */
    check_ddp(dir, "resnet50.json", 1, 2u << 20);
    check_ddp(dir, "resnet50.json", 25u << 20, 1u << 20);
    check_ddp(dir, "bert_base.json", 25u << 20, 1);
    check_ddp(dir, "mobilenet_v2.json", 256u << 10, 1);
    check_ddp(dir, "vgg16.json", 32u << 10, 1);

    /* 9. The fallbacks. The first iteration has the same calls but a smaller first tensor (not a
     *    tiny one: a tiny call outside the iteration is an extra, case 10): no boundary has whole
     *    iterations' bytes before it, so it is a whole number of iterations' calls from the
     *    first call. */
    make_distinct(&a, 30, 0);
    x = a;
    x.sig[0].bytes = 2000;
    x.sig[0].count = 500;
    memset(&r, 0, sizeof(r));
    r.clock = 1000000;
    o.learn_iters = 3;
    r.l = prophet_learner_new(&o);
    feed_iter(&r, &x, 0);
    for (it = 0; it < 3; it++)
        feed_iter(&r, &a, 0);
    CHECK(prophet_learner_anchored(r.l) == PROPHET_LEARN_ANCHOR_CALLS);
    for (it = 0; it < 4; it++)
        CHECK(feed_iter(&r, &a, 1) & PROPHET_LEARN_ITER_START);
    CHECK(prophet_learner_profile(r.l) && prophet_learner_profile(r.l)->n_calls == 30);
    prophet_learner_free(r.l);
    /*    More than a period of other calls first (no whole iterations of either before the
     *    periodic run): the lock is kept, unanchored, at the start of the run; but when those
     *    calls are tiny (each under 1/PROPHET_LEARN_TINY of an iteration's bytes: a barrier,
     *    metrics), they are left out of the bytes and the run's start is a true boundary. */
    for (int tiny = 0; tiny < 2; tiny++) {
        x.n = 0;
        for (int k = 0; k < 45; k++)
            add(&x, (tiny ? 8 : 2000) + 4 * (uint64_t)k, 0);
        memset(&r, 0, sizeof(r));
        r.clock = 1000000;
        r.l = prophet_learner_new(&o);
        feed_iter(&r, &x, 0);
        for (it = 0; it < 3; it++)
            feed_iter(&r, &a, 0);
        CHECKF(prophet_learner_anchored(r.l) == (tiny ? PROPHET_LEARN_ANCHOR_BYTES : 0),
               "45 %s calls first: anchor %d", tiny ? "tiny" : "other",
               prophet_learner_anchored(r.l));
        for (it = 0; it < 4; it++)
            CHECK(feed_iter(&r, &a, 1) & PROPHET_LEARN_ITER_START);
        CHECK(prophet_learner_profile(r.l) &&
              prophet_learner_anchored(r.l) == (tiny ? PROPHET_LEARN_ANCHOR_BYTES : 0));
        prophet_learner_free(r.l);
    }
    check_extras(dir);
    check_layers(6);
    check_layers(3);
    printf("learner: ok\n");
    return 0;
}
