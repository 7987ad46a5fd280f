/* Profile learner: finds the iteration in the program-order stream of schedulable calls and
 * learns each call's readiness offset.
 *
 * Period (signatures only, never time, so every rank finds the same boundaries):
 *  - m[P] counts how many consecutive recent calls equal the call P positions earlier. While
 *    searching, the smallest P with m[P] >= 2P (the last three P-windows are equal) locks.
 *    Updating m[] costs maxc comparisons a call while searching (every call of a comm that never
 *    locks, like Horovod's): they read 32-bit keys in one forward pass, 4 periods at a time, and
 *    a candidate's run is recounted on the full 64-bit keys before it locks.
 *  - Locked, each call is expected to be the template's next one. A call that is not is an
 *    extra of the job (PROPHET_LEARN_EXTRA, index UINT32_MAX: a loss or metric all-reduce every
 *    k steps, an evaluation phase, a barrier), and the lock stays, as long as the extras since
 *    the current iteration began stay small (PROPHET_LEARN_EXTRA_SHARE of an iteration's bytes,
 *    PROPHET_LEARN_EXTRA_CALLS calls). Real loops have such calls at intervals no learning
 *    window sees twice, so the iteration must not be their super-period. Past those bounds the
 *    lock breaks (PROPHET_LEARN_RELEARN: profile dropped) and the search resumes with m[]
 *    recomputed from the history. A lock that broke before it was trusted (a sub-period) has
 *    its template (P and a rotation-invariant hash of its signatures) rejected from then on:
 *    rejection is what makes sub-periods harmless: a model of identical layers repeats one
 *    layer's signatures for a while, locks on it, breaks at the embeddings (large calls, no
 *    extras) and never locks on that layer again, so the whole iteration locks next. A trusted
 *    lock's template is kept instead: when the job comes back to it (after an evaluation phase
 *    with large calls, a few odd steps), it locks again in the phase it had.
 *  - Phase: the periodic region found from m[P] starts at s. PyTorch DDP's first iteration has
 *    other buckets, possibly with a tail equal to the later ones, so s may sit inside the first
 *    stable iteration; but every iteration all-reduces the same gradients, so the first
 *    iteration carries the same total bytes as one period. The boundary is the position in
 *    [s, s + P) at which the bytes since the first call ever observed are a whole number of
 *    periods (unique: bytes are positive); then the same with the tiny calls that are not the
 *    iteration's left out of the bytes (a barrier before the first iteration, a loss logged
 *    before the lock); else, when only the first period differs, the one a whole number of
 *    periods' calls from the first call; else s itself, reported unanchored
 *    (prophet_learner_anchored()). The anchor is always the first call, on every lock: the
 *    phase of a broken lock (a sub-period of equal-sized tensors, say) says nothing about where
 *    iterations start; but a trusted template that comes back keeps its phase. A clean stream
 *    (first iteration like the others) gives 0.
 *
 * Readiness: a window of the last W iterations' ready times. Offsets are taken from each
 * iteration's first call, then every iteration is re-aligned by the median of its offsets'
 * differences to the per-call medians (one late first call does not shift a whole iteration),
 * and the profile holds the per-call median offset and MAD. The profile is (re)built when
 * learn_iters iterations have completed since the lock and then every learn_iters iterations.
 * Every flag (ITER_START, READY, RELEARN) is a function of the signature sequence only, so all
 * ranks see each flag at the same call; only the profile's timing content differs per rank.
 * Known limit: a model of many identical layers looks periodic per layer in its first
 * iterations; that sub-period may even become READY before it breaks (RELEARN) at the end of
 * the layer run. Its template is then rejected for good, so this happens only in the first two
 * or three iterations. A rejected template stays rejected (64 remembered) even if the job later
 * returns to exactly that sequence.
 * Priority: backward produces the last layer's gradient first, so priority = n - 1 - index. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

#define K_COPIES 3
#define MAX_WINDOW 32
#define MIN_WINDOW 8
#define MAX_REJECT 64

typedef struct hist_ent {
    uint64_t h;
    uint64_t cum; /* bytes of all calls before this one since the stream began */
    int64_t ready;
    prophet_call_sig_t sig;
} hist_ent_t;

struct prophet_learner {
    uint32_t learn_iters, maxc, hn, w;
    hist_ent_t *hist; /* ring of hn entries, indexed by absolute position */
    /* The search's own copy of the keys, 32 bits each, newest first: skey[sbase + P] is the key
     * P calls back (P = 1..maxc). Each key is stored twice, at r and r + maxc + 1, so that the
     * window is contiguous and read forward, 4 periods at a time (update_runs). */
    uint32_t *skey, sbase;
    uint64_t pos, total_bytes;
    uint32_t *m; /* m[P], P = 1..maxc */
    /* lock */
    int locked;
    uint32_t period, idx;
    uint64_t phase_start, tmpl_hash;
    int anchor;           /* PROPHET_LEARN_ANCHOR_* rule that placed the phase, 0 if none */
    uint32_t lock_iters;  /* iteration starts since the current lock */
    int have_trusted;     /* a trusted lock broke: its last iteration start anchors the next */
    uint64_t trusted_cum; /* bytes before that iteration start */
    uint64_t trusted_pos; /* its position */
    uint64_t iter;
    /* the locked template's keys in iteration order, and sorted (membership) */
    uint64_t *tkey, *tkey_sorted;
    uint64_t period_bytes;
    /* extras since the current iteration began (calls the lock tolerated, PROPHET_LEARN_EXTRA) */
    uint64_t ex_bytes, ex_calls;
    /* the last trusted template that broke without being rejected: a relock on it keeps its
     * phase (the job's iterations start where its template starts) */
    uint64_t kept_hash;
    uint32_t kept_P;
    uint64_t *kept_keys;
    /* rejected templates */
    uint64_t rej[MAX_REJECT];
    uint32_t n_rej, rej_head;
    /* readiness window: slot = iteration % w */
    double *win; /* w x maxc */
    uint64_t win_tag[MAX_WINDOW];
    uint8_t win_used[MAX_WINDOW];
    uint32_t done_iters, since_build;
    int ready;
    prophet_profile_t *profile;
    prophet_call_sig_t *tmpl;
    double *scratch, *scratch2; /* >= max(w, maxc) */
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t sig_key(const prophet_call_sig_t *s)
{
    uint64_t h = mix64(s->comm_id + 0x9e3779b97f4a7c15ull);

    h = mix64(h ^ s->count);
    h = mix64(h ^ ((uint64_t)(uint32_t)s->dtype << 32 | (uint32_t)s->op));
    return mix64(h ^ s->bytes);
}

static hist_ent_t *H(const prophet_learner_t *l, uint64_t p)
{
    return &l->hist[p % l->hn];
}

static uint64_t oldest(const prophet_learner_t *l)
{
    return l->pos > l->hn ? l->pos - l->hn : 0;
}

prophet_learner_t *prophet_learner_new(const prophet_learner_opts_t *opts)
{
    prophet_learner_t *l;
    uint32_t big;

    if (!opts || opts->learn_iters < 2 || opts->max_calls == 0 ||
        opts->max_calls > PROPHET_MAX_CALLS)
        return NULL;
    l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->learn_iters = opts->learn_iters;
    l->maxc = opts->max_calls;
    l->hn = (K_COPIES + 1) * l->maxc + 16;
    l->w = opts->learn_iters < MIN_WINDOW ? MIN_WINDOW : opts->learn_iters;
    if (l->w > MAX_WINDOW)
        l->w = MAX_WINDOW;
    big = l->w > l->maxc ? l->w : l->maxc;
    l->hist = calloc(l->hn, sizeof(*l->hist));
    l->skey = calloc(2 * ((size_t)l->maxc + 1), sizeof(*l->skey));
    l->m = calloc(l->maxc + 1, sizeof(*l->m));
    l->win = calloc((size_t)l->w * l->maxc, sizeof(*l->win));
    l->profile = calloc(1, sizeof(*l->profile));
    l->tmpl = calloc(l->maxc, sizeof(*l->tmpl));
    l->tkey = calloc(l->maxc, sizeof(*l->tkey));
    l->tkey_sorted = calloc(l->maxc, sizeof(*l->tkey_sorted));
    l->kept_keys = calloc(l->maxc, sizeof(*l->kept_keys));
    l->scratch = calloc(big, sizeof(double));
    l->scratch2 = calloc(big, sizeof(double));
    if (!l->hist || !l->skey || !l->m || !l->win || !l->profile || !l->tmpl || !l->tkey ||
        !l->tkey_sorted || !l->kept_keys || !l->scratch || !l->scratch2) {
        prophet_learner_free(l);
        return NULL;
    }
    return l;
}

void prophet_learner_free(prophet_learner_t *l)
{
    if (!l)
        return;
    free(l->hist);
    free(l->skey);
    free(l->m);
    free(l->win);
    free(l->profile);
    free(l->tmpl);
    free(l->tkey);
    free(l->tkey_sorted);
    free(l->kept_keys);
    free(l->scratch);
    free(l->scratch2);
    free(l);
}

uint64_t prophet_learner_iteration(const prophet_learner_t *l)
{
    return l ? l->iter : 0;
}

int prophet_learner_anchored(const prophet_learner_t *l)
{
    return l && l->locked ? l->anchor : 0;
}

const prophet_profile_t *prophet_learner_profile(const prophet_learner_t *l)
{
    return l && l->ready ? l->profile : NULL;
}

/* Rotation-invariant hash of the P calls ending at position `end` (inclusive). */
static uint64_t template_hash(const prophet_learner_t *l, uint64_t end, uint32_t P)
{
    uint64_t h = mix64(P), i;

    for (i = 0; i < P; i++)
        h += mix64(H(l, end - i)->h);
    return h;
}

static int rejected(const prophet_learner_t *l, uint64_t th)
{
    for (uint32_t i = 0; i < l->n_rej; i++)
        if (l->rej[i] == th)
            return 1;
    return 0;
}

static void reject(prophet_learner_t *l, uint64_t th)
{
    if (rejected(l, th))
        return;
    l->rej[l->rej_head] = th;
    l->rej_head = (l->rej_head + 1) % MAX_REJECT;
    if (l->n_rej < MAX_REJECT)
        l->n_rej++;
}

static double *slot_of(prophet_learner_t *l, uint64_t iter)
{
    return &l->win[(size_t)(iter % l->w) * l->maxc];
}

static void slot_open(prophet_learner_t *l, uint64_t iter)
{
    double *r = slot_of(l, iter);

    for (uint32_t i = 0; i < l->period; i++)
        r[i] = NAN;
    l->win_tag[iter % l->w] = iter;
    l->win_used[iter % l->w] = 1;
}

static int slot_valid(const prophet_learner_t *l, uint64_t iter)
{
    return l->win_used[iter % l->w] && l->win_tag[iter % l->w] == iter;
}

/* Builds the profile from the completed iterations newest, newest-1, ... still in the window.
 * Never fails, so that READY depends on the signature sequence only (same call on every rank):
 * a call without any readiness sample inherits its predecessor's offset (0 for all when no
 * iteration has data). */
static void build_profile(prophet_learner_t *l, uint64_t newest)
{
    prophet_profile_t *p = l->profile;
    uint32_t P = l->period, i, k, c, nit = 0;
    uint64_t its[MAX_WINDOW];
    double origin[MAX_WINDOW];
    double *v = l->scratch, *v2 = l->scratch2, span = 0;
    double med1[PROPHET_MAX_CALLS];

    for (k = 0; k < l->w && k <= newest; k++) { /* completed iterations, newest first */
        uint64_t it = newest - k;

        if (slot_valid(l, it) && !isnan(slot_of(l, it)[0]))
            its[nit++] = it;
    }
    /* Pass 1: offsets from each iteration's first call; per-call medians. */
    for (i = 0; i < P; i++) {
        for (k = c = 0; k < nit; k++) {
            const double *r = slot_of(l, its[k]);

            if (!isnan(r[i]))
                v[c++] = r[i] - r[0];
        }
        med1[i] = c ? prophet_median(v, c) : NAN;
    }
    /* Pass 2: re-align each iteration by its median deviation from the per-call medians. */
    for (k = 0; k < nit; k++) {
        const double *r = slot_of(l, its[k]);

        for (i = c = 0; i < P; i++)
            if (!isnan(r[i]) && !isnan(med1[i]))
                v[c++] = r[i] - r[0] - med1[i];
        origin[k] = r[0] + (c ? prophet_median(v, c) : 0);
    }
    for (i = 0; i < P; i++) {
        for (k = c = 0; k < nit; k++) {
            const double *r = slot_of(l, its[k]);

            if (!isnan(r[i]))
                v[c++] = r[i] - origin[k];
        }
        if (c == 0) { /* no sample: as early as the call before it */
            p->ready_us[i] = i ? p->ready_us[i - 1] : 0;
            p->spread_us[i] = 0;
            continue;
        }
        memcpy(v2, v, sizeof(double) * c);
        p->ready_us[i] = prophet_median(v, c);
        p->spread_us[i] = prophet_mad(v2, c, p->ready_us[i]);
    }
    for (i = P; i-- > 0;) /* offsets from the first call */
        p->ready_us[i] -= p->ready_us[0];
    for (i = 0; i < P; i++) {
        p->sig[i] = l->tmpl[i];
        p->priority[i] = P - 1 - i;
        if (p->ready_us[i] > span)
            span = p->ready_us[i];
    }
    p->n_calls = P;
    p->backward_us = span;
    /* Iteration time: median distance between aligned origins of consecutive iterations. */
    for (k = c = 0; k + 1 < nit; k++)
        if (its[k] == its[k + 1] + 1)
            v[c++] = origin[k] - origin[k + 1];
    p->iteration_us = c ? prophet_median(v, c) : 0;
    p->forward_us = p->iteration_us > span ? p->iteration_us - span : 0;
    p->iterations_seen = nit;
    prophet_steps_detect_robust(p->ready_us, P, 2.0, p->steps, &p->n_steps);
}

/* m[P] for the newest position, recomputed from the history. */
static void recompute_runs(prophet_learner_t *l)
{
    uint64_t t = l->pos - 1, lo = oldest(l);
    uint32_t P;

    for (P = 1; P <= l->maxc; P++) {
        uint32_t r = 0;

        while (t >= lo + P + r && H(l, t - r)->h == H(l, t - r - P)->h)
            r++;
        l->m[P] = r;
    }
}

static uint32_t fold_key(uint64_t h)
{
    return (uint32_t)(h ^ h >> 32);
}

uint32_t prophet_learner_search_key(const prophet_call_sig_t *sig)
{
    return fold_key(sig_key(sig));
}

/* Stores the newest key (position pos - 1) in the search's copy. */
static void skey_push(prophet_learner_t *l, uint64_t h)
{
    uint32_t R = l->maxc + 1;

    l->sbase = R - 1 - (uint32_t)((l->pos - 1) % R);
    l->skey[l->sbase] = l->skey[l->sbase + R] = fold_key(h);
}

/* m[P] for the newest position from m[P] for the one before, P = 1..maxc (hot while searching:
 * one forward pass, 4 periods per step where the compiler has vector types). The keys are 32
 * bits, so m[P] may overcount after a collision; verified_run() recounts it before any lock.
 * Returns whether some m[P] reached the lock threshold. */
static int update_runs(prophet_learner_t *l)
{
    uint64_t t = l->pos - 1, lo = oldest(l);
    const uint32_t *k = l->skey + l->sbase;
    uint32_t lim = l->maxc, P = 1, h = k[0], any = 0;

    if (t - lo < lim) /* only periods with a partner in the history */
        lim = (uint32_t)(t - lo);
#if defined(__GNUC__)
    {
        typedef uint32_t v4u_t __attribute__((vector_size(16)));
        typedef int32_t v4s_t __attribute__((vector_size(16)));
        const uint32_t c = K_COPIES - 1;
        v4u_t hv = {h, h, h, h}, one = {1, 1, 1, 1};
        v4u_t need = {c - 1, 2 * c - 1, 3 * c - 1, 4 * c - 1}, step = {4 * c, 4 * c, 4 * c, 4 * c};
        v4s_t hit = {0, 0, 0, 0};

        for (; P + 3 <= lim; P += 4, need += step) {
            v4u_t kv, mv;

            memcpy(&kv, k + P, sizeof(kv));
            memcpy(&mv, l->m + P, sizeof(mv));
            mv = (mv + one) & (v4u_t)(kv == hv);
            hit |= (v4s_t)mv > (v4s_t)need; /* runs compare as signed: SSE2 has no unsigned > */
            memcpy(l->m + P, &mv, sizeof(mv));
        }
        any = (uint32_t)(hit[0] | hit[1] | hit[2] | hit[3]);
    }
#endif
    for (; P <= lim; P++) {
        l->m[P] = k[P] == h ? l->m[P] + 1 : 0;
        any |= (int32_t)l->m[P] >= (int32_t)((K_COPIES - 1) * P);
    }
    /* m[P] for longer periods stays 0: nothing set it since recompute_runs() or creation. */
    return any != 0;
}

/* m[P] recounted on the full keys within the history (at most its current value: the 32-bit
 * keys only overcount, and lock() starts the run no earlier than the history anyway). */
static uint32_t verified_run(prophet_learner_t *l, uint32_t P)
{
    uint64_t t = l->pos - 1, lo = oldest(l);
    uint32_t r = 0;

    while (r < l->m[P] && t >= lo + P + r && H(l, t - r)->h == H(l, t - r - P)->h)
        r++;
    return l->m[P] = r;
}

/* Closes the iteration that just ended and decides whether the profile is (re)built. */
static int finish_iteration(prophet_learner_t *l)
{
    int flags = 0;

    l->done_iters++;
    l->since_build++;
    if (l->done_iters >= l->learn_iters && (!l->ready || l->since_build >= l->learn_iters)) {
        build_profile(l, l->iter);
        l->ready = 1;
        l->since_build = 0;
        flags |= PROPHET_LEARN_READY;
    }
    return flags;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* Whether key h is one of the locked template's (tkey_sorted holds its P keys). */
static int in_template(const prophet_learner_t *l, uint32_t P, uint64_t h)
{
    return bsearch(&h, l->tkey_sorted, P, sizeof(h), cmp_u64) != NULL;
}

/* A relock on the template of a trusted lock that broke (an evaluation phase longer than the
 * extras allowance, say): the iteration starts where that template started. */
static int kept_phase(const prophet_learner_t *l, uint32_t P, uint64_t s, uint64_t *q_out)
{
    uint64_t t = l->pos - 1;

    if (!l->kept_hash || l->kept_P != P || template_hash(l, t, P) != l->kept_hash)
        return 0;
    for (uint64_t q = s; q < s + P && q + P - 1 <= t; q++) {
        uint32_t j = 0;

        while (j < P && H(l, q + j)->h == l->kept_keys[j])
            j++;
        if (j == P) {
            *q_out = q;
            return 1;
        }
    }
    return 0;
}

/* Bytes rule with the job's tiny extra calls left out (a barrier before the first iteration, a
 * loss or metric all-reduce between two): counted from position ref (the first call ever, or the
 * broken trusted lock's last iteration start) when it is still in the history. A call is a tiny
 * extra when its key is not the template's and it carries less than 1/PROPHET_LEARN_TINY of a
 * period's bytes (DDP's first-iteration buckets, which are no extras, are larger). */
static int tiny_extras_phase(const prophet_learner_t *l, uint32_t P, uint64_t s, uint64_t ref,
                             uint64_t period_bytes, uint64_t *q_out)
{
    uint64_t excl = 0, base;

    if (ref < oldest(l) || ref > s || period_bytes == 0)
        return 0;
    base = H(l, ref)->cum;
    for (uint64_t q = ref; q < s + P; q++) {
        const hist_ent_t *e = H(l, q);

        if (q >= s && (e->cum - base - excl) % period_bytes == 0) {
            *q_out = q;
            return 1;
        }
        if (e->sig.bytes < period_bytes / PROPHET_LEARN_TINY && !in_template(l, P, e->h))
            excl += e->sig.bytes;
    }
    return 0;
}

/* The first call of an iteration for a period P found periodic from position s on (s <= t + 1 - 3P,
 * so [s, s + P) is in the history). Anchored on the first call ever observed, never on an earlier
 * lock: a broken lock may have been a sub-period, whose phase says nothing about the iteration.
 *  - template: a trusted template that broke and comes back keeps its phase.
 *  - bytes: the q in [s, s + P) with a whole number of periods' bytes before it. Within the
 *    periodic run the bytes before q grow by one period's bytes every P calls, so this tests
 *    every phase; q is unique when calls carry bytes (the window's cumulative bytes span less
 *    than one period). It holds for a clean stream and for DDP's first iteration (other buckets,
 *    same bytes); then the same with the job's tiny extra calls left out (tiny_extras_phase).
 *  - calls: else, when the run starts within the first period (s <= P: only the first period's
 *    sizes differ), the q in [s, s + P) with a whole number of periods' calls before it.
 *  - else s itself, unanchored (e.g. after a genuine change of the sequence). */
static uint64_t phase_of(prophet_learner_t *l, uint32_t P, uint64_t s)
{
    uint64_t q, period_bytes = l->period_bytes;

    if (kept_phase(l, P, s, &q)) {
        l->anchor = PROPHET_LEARN_ANCHOR_TEMPLATE;
        return q;
    }
    /* After a genuine change of the sequence (a trusted lock broke), the job's iterations start
     * again at the broken lock's last iteration start: bytes are counted from there. */
    for (q = s; l->have_trusted && period_bytes > 0 && q < s + P; q++) {
        if (H(l, q)->cum >= l->trusted_cum && (H(l, q)->cum - l->trusted_cum) % period_bytes == 0) {
            l->anchor = PROPHET_LEARN_ANCHOR_BYTES;
            return q;
        }
    }

    for (q = s; period_bytes > 0 && q < s + P; q++) {
        if (H(l, q)->cum % period_bytes == 0) {
            l->anchor = PROPHET_LEARN_ANCHOR_BYTES;
            return q;
        }
    }
    if (tiny_extras_phase(l, P, s, l->have_trusted ? l->trusted_pos : 0, period_bytes, &q)) {
        l->anchor = PROPHET_LEARN_ANCHOR_BYTES;
        return q;
    }
    if (s <= P) {
        l->anchor = PROPHET_LEARN_ANCHOR_CALLS;
        return s + (P - s % P) % P;
    }
    l->anchor = 0;
    return s;
}

static int lock(prophet_learner_t *l, uint32_t P)
{
    uint64_t t = l->pos - 1, lo = oldest(l), s, k, q;
    uint32_t j, c;
    int flags = 0;

    s = t + 1 - l->m[P] - P;
    if (s < lo)
        s = lo;
    for (j = 0; j < P; j++) /* the template's keys, for membership (rotation-invariant) */
        l->tkey_sorted[j] = H(l, t - j)->h;
    qsort(l->tkey_sorted, P, sizeof(l->tkey_sorted[0]), cmp_u64);
    l->period_bytes = l->total_bytes - H(l, t + 1 - P)->cum;
    k = phase_of(l, P, s);
    l->locked = 1;
    l->lock_iters = 0;
    l->period = P;
    l->idx = (uint32_t)((t - k) % P);
    l->phase_start = t - l->idx;
    l->tmpl_hash = template_hash(l, t, P);
    for (j = 0; j < P; j++) {
        const hist_ent_t *e = H(l, t - (l->idx + P - j) % P);

        l->tmpl[j] = e->sig;
        l->tkey[j] = e->h;
    }
    l->ex_bytes = l->ex_calls = 0;
    l->iter += l->w; /* fresh numbers, with room for the iterations found in the history */
    l->ready = 0;
    l->done_iters = l->since_build = 0;
    memset(l->win_used, 0, sizeof(l->win_used));
    /* Complete iterations still in the history count as observed. */
    for (c = 1; c < l->w && l->phase_start >= (uint64_t)c * P + (k > lo ? k : lo); c++) {
        uint64_t start = l->phase_start - (uint64_t)c * P;
        double *r;

        slot_open(l, l->iter - c);
        r = slot_of(l, l->iter - c);
        for (j = 0; j < P; j++)
            r[j] = H(l, start + j)->ready >= 0 ? (double)H(l, start + j)->ready : NAN;
        l->done_iters++;
    }
    slot_open(l, l->iter);
    for (q = l->phase_start; q <= t; q++)
        if (H(l, q)->ready >= 0)
            slot_of(l, l->iter)[q - l->phase_start] = (double)H(l, q)->ready;
    if (l->done_iters >= l->learn_iters) {
        build_profile(l, l->iter - 1);
        l->ready = 1;
        flags |= PROPHET_LEARN_READY;
    }
    if (l->idx == 0)
        flags |= PROPHET_LEARN_ITER_START;
    return flags;
}

/* Drops the lock. A lock anchored by bytes (or by a kept template) that held for
 * PROPHET_LEARN_TRUSTED_ITERS iterations was the job's iteration, not a sub-period: its last
 * iteration start is a true boundary, and its template is kept (not rejected), so that the job's
 * iteration locks again, in the same phase, when it comes back (after an evaluation phase, a
 * checkpoint, a few odd steps). An untrusted lock was a sub-period or chance: its template is
 * rejected for good. */
static void unlock(prophet_learner_t *l)
{
    int trusted =
        (l->anchor == PROPHET_LEARN_ANCHOR_BYTES || l->anchor == PROPHET_LEARN_ANCHOR_TEMPLATE) &&
        l->lock_iters >= PROPHET_LEARN_TRUSTED_ITERS;

    if (trusted) {
        l->have_trusted = 1;
        l->trusted_cum = H(l, l->phase_start)->cum;
        l->trusted_pos = l->phase_start;
        l->kept_hash = l->tmpl_hash;
        l->kept_P = l->period;
        memcpy(l->kept_keys, l->tkey, sizeof(l->tkey[0]) * l->period);
    } else {
        reject(l, l->tmpl_hash);
    }
    l->locked = 0;
    l->anchor = 0;
    l->ready = 0;
    recompute_runs(l);
}

/* Locked, a call that is not the next one of the template: an extra call of the job (a loss or
 * metric all-reduce every k steps, an evaluation phase) as long as the extras since the current
 * iteration began carry at most 1/PROPHET_LEARN_EXTRA_SHARE of a period's bytes and number at
 * most PROPHET_LEARN_EXTRA_CALLS; past that the core itself changed (or the lock was a
 * sub-period of identical layers, whose other calls are large). A function of the signatures
 * only, like every flag. */
static int extra_tolerated(const prophet_learner_t *l, const prophet_call_sig_t *sig)
{
    /* Only a lock whose phase is anchored (bytes, or a kept template) tolerates extras: that is
     * the job's iteration, the one calls are held for. An unanchored lock holds nothing, and the
     * common one is a sub-period of identical layers whose other calls are small next to its
     * bytes (a transformer's head after two of its layers): tolerated, they would keep it locked
     * for good and the iteration would never be found. */
    if (l->anchor != PROPHET_LEARN_ANCHOR_BYTES && l->anchor != PROPHET_LEARN_ANCHOR_TEMPLATE)
        return 0;
    return (l->ex_bytes + sig->bytes) * PROPHET_LEARN_EXTRA_SHARE <= l->period_bytes &&
           l->ex_calls < PROPHET_LEARN_EXTRA_CALLS;
}

int prophet_learner_observe(prophet_learner_t *l, const prophet_call_sig_t *sig, int64_t ready_us,
                            uint32_t *index)
{
    hist_ent_t *e;
    uint64_t t;
    uint32_t P, lim;
    int flags = 0;

    if (index)
        *index = UINT32_MAX;
    if (!l || !sig)
        return -EINVAL;
    t = l->pos;
    e = H(l, t);
    e->h = sig_key(sig);
    e->sig = *sig;
    e->cum = l->total_bytes;
    e->ready = ready_us;
    l->total_bytes += sig->bytes;
    l->pos++;
    skey_push(l, e->h);

    if (l->locked) {
        uint32_t next = (l->idx + 1) % l->period;

        if (e->h == l->tkey[next]) {
            l->idx = next;
            if (l->idx == 0) {
                l->lock_iters++;
                flags |= finish_iteration(l) | PROPHET_LEARN_ITER_START;
                l->iter++;
                l->phase_start = t;
                l->ex_bytes = l->ex_calls = 0;
                slot_open(l, l->iter);
            }
            if (ready_us >= 0)
                slot_of(l, l->iter)[l->idx] = (double)ready_us;
            if (index)
                *index = l->idx;
            return flags;
        }
        if (extra_tolerated(l, sig)) {
            l->ex_bytes += sig->bytes;
            l->ex_calls++;
            return PROPHET_LEARN_EXTRA;
        }
        unlock(l);
        flags |= PROPHET_LEARN_RELEARN;
    } else if (!update_runs(l)) {
        return flags; /* no period reached the threshold */
    }
    lim = t < l->maxc ? (uint32_t)t : l->maxc;
    for (P = 1; P <= lim; P++) {
        if (l->m[P] >= (K_COPIES - 1) * P && !rejected(l, template_hash(l, t, P)) &&
            verified_run(l, P) >= (K_COPIES - 1) * P) {
            flags |= lock(l, P);
            if (index)
                *index = l->idx;
            break;
        }
    }
    return flags;
}

int prophet_learner_set_ready(prophet_learner_t *l, uint64_t iteration, uint32_t index,
                              int64_t ready_us)
{
    if (!l || ready_us < 0)
        return -EINVAL;
    if (!l->locked || index >= l->period || iteration > l->iter || !slot_valid(l, iteration))
        return -ENOENT; /* not (or no longer) tracked: harmless */
    slot_of(l, iteration)[index] = (double)ready_us;
    return 0;
}
