/* The holding engine's state (docs/completion-holding.md, "State"): the tables behind the engine
 * lock and the functions that keep them; nothing here enqueues work on a stream of the job. The
 * communicator table (any number of communicators), the dependency sets (any size), the pool of
 * the engine's own events (shadows), the stream table (the default streams normalised; the legacy
 * stream's implicit synchronisation: H11), the record table (virtual records, and real ones
 * that carry a taint), arming (prophet_hold_armed_) and the fork guard ("Process and scale
 * limits": fork, any number of communicators, dependency sets of any size, streams forgotten with
 * their stream). Types and lock: hold_tables.h. */
#include "holding/hold_tables.h"

#include <stdlib.h>

#include "comm.h"
#include "real_libs/cuda_driver.h"

atomic_int prophet_hold_armed_;
PROPHET_TLS int prophet_hold_depth_;
atomic_int prophet_capture_seen_;

prophet_hold_engine_t prophet_hold_engine = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};
static PROPHET_TLS char hold_thread_key; /* its address names this thread's default stream */

/* ---- fork ------------------------------------------------------------------------------- */

/* A forked child has only the forking thread: the engine's state names the parent's held blocks,
 * streams and events (none of them the child's), and its lock may have been copied while another
 * thread held it. The child's engine is disarmed for good: every wrapper goes straight to the
 * driver, no entry point of the engine takes the lock or releases a parent's block (whose NCCL
 * calls would run on the parent's communicators from the child). The preload itself passes
 * through in such a child (init.c).
 *
 * The reset is one assignment: the parent's tables are dropped, not freed (another thread of the
 * parent may have been changing them when it forked; their memory is the parent's copy), and the
 * child's engine is empty and marked forked. The lock and the condition variable are made anew
 * with pthread_*_init (the assignment zeroes them; POSIX gives a mutex no initial state but that
 * of an initialiser or an init call), and the fast path's flag, which lives in holding.h outside
 * the engine, is cleared. The leaf locks are not made anew: the event sets' (hold_event_set.h)
 * sit behind entry points that return first in a forked child, and the trap kernels'
 * (hold_trap.c) is reached from the scheduler only, which passes through there. */
static void hold_atfork_child(void)
{
    prophet_hold_engine = (prophet_hold_engine_t){.forked = 1};
    pthread_mutex_init(&prophet_hold_engine.lock, NULL);
    pthread_cond_init(&prophet_hold_engine.cond, NULL);
    atomic_store(&prophet_hold_armed_, 0);
}

static void hold_atfork_register(void)
{
    pthread_atfork(NULL, NULL, hold_atfork_child);
}

/* Registers the child handler before the engine arms or takes its lock for the first time. */
void prophet_hold_fork_guard(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, hold_atfork_register);
}

/* ---- small helpers ------------------------------------------------------------------------ */

void prophet_hold_rearm(void)
{
    int armed = prophet_hold_engine.nopen > 0 || prophet_hold_engine.nvirt > 0 ||
                prophet_hold_engine.nlive_recs > 0 || prophet_hold_engine.nlive_streams > 0;
    atomic_store_explicit(&prophet_hold_armed_, armed, memory_order_relaxed);
}

/* The engine's state of communicator c, made at the first question about it (any number of
 * communicators; a node's address is stable: prophet_hold_release_or_wait keeps it across an
 * unlock). NULL only when out of memory. */
hold_comm_t *prophet_hold_comm(prophet_comm_t *c)
{
    unsigned b = prophet_hold_hash_ptr(c, HOLD_COMM_BUCKETS);
    hold_comm_t *h;

    for (h = prophet_hold_engine.comms[b]; h; h = h->next)
        if (h->c == c)
            return h;
    if (!(h = calloc(1, sizeof(*h))))
        return NULL;
    h->c = c;
    h->next = prophet_hold_engine.comms[b];
    prophet_hold_engine.comms[b] = h;
    h->all_next = prophet_hold_engine.comm_all;
    prophet_hold_engine.comm_all = h;
    return h;
}

int prophet_hold_gen_before(uint32_t a, uint32_t b) /* a <= b, wrap-safe */
{
    return (int32_t)(b - a) >= 0;
}

/* The block (c, g) has completed on the GPU (X wrote its generation). */
int prophet_hold_complete(const hold_dep_t *d)
{
    uint32_t v = __atomic_load_n(d->c->gpu.gate_host, __ATOMIC_ACQUIRE);
    return prophet_hold_gen_before(d->gen, v);
}

int prophet_hold_is_open(const hold_dep_t *d)
{
    hold_comm_t *h = prophet_hold_comm(d->c);
    return h && h->open_gen && prophet_hold_gen_before(h->open_gen, d->gen);
}

int prophet_hold_is_released(const hold_dep_t *d)
{
    return !prophet_hold_is_open(d);
}

/* Adds (c, g) keeping the highest generation per comm; the set grows as needed. -1 only when out
 * of memory. */
int prophet_hold_dep_add(hold_depset_t *s, prophet_comm_t *c, uint32_t g)
{
    for (int i = 0; i < s->n; i++)
        if (s->d[i].c == c) {
            if (prophet_hold_gen_before(s->d[i].gen, g))
                s->d[i].gen = g;
            return 0;
        }
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 4;
        hold_dep_t *d = realloc(s->d, (size_t)cap * sizeof(*d));
        if (!d)
            return -1;
        s->d = d;
        s->cap = cap;
    }
    s->d[s->n++] = (hold_dep_t){c, g};
    if (atomic_load_explicit(&prophet_hold_engine.dep_comm, memory_order_relaxed) != c &&
        !atomic_compare_exchange_strong(&prophet_hold_engine.dep_comm, &(prophet_comm_t *){NULL},
                                        c))
        atomic_store(&prophet_hold_engine.dep_comm, HOLD_MANY);
    return 0;
}

void prophet_hold_dep_del(hold_depset_t *s, int i)
{
    s->d[i] = s->d[--s->n];
}

/* *dst = a copy of *src (dst's own storage reused). -1 when out of memory (dst then holds what
 * fitted: callers make the dependency real instead). */
int prophet_hold_depset_copy(hold_depset_t *dst, const hold_depset_t *src)
{
    dst->n = 0;
    for (int i = 0; i < src->n; i++)
        if (prophet_hold_dep_add(dst, src->d[i].c, src->d[i].gen) != 0)
            return -1;
    return 0;
}

void prophet_hold_depset_free(hold_depset_t *s)
{
    free(s->d);
    *s = (hold_depset_t){0};
}

int prophet_hold_dep_has_open(const hold_depset_t *s)
{
    for (int i = 0; i < s->n; i++)
        if (prophet_hold_is_open(&s->d[i]))
            return 1;
    return 0;
}

/* Drops the entries of released blocks (taints matter only while their block is open). */
void prophet_hold_taint_prune(hold_depset_t *s)
{
    for (int i = s->n; i-- > 0;)
        if (!prophet_hold_is_open(&s->d[i]))
            prophet_hold_dep_del(s, i);
}

void prophet_hold_vdeps_prune(hold_depset_t *s)
{
    for (int i = s->n; i-- > 0;)
        if (prophet_hold_is_released(&s->d[i]) && prophet_hold_complete(&s->d[i]))
            prophet_hold_dep_del(s, i);
}

/* ---- engine events (shadows) ---------------------------------------------------------------- */

CUevent prophet_hold_event_get(void)
{
    CUevent e = NULL;

    if (prophet_hold_engine.pool_n)
        return prophet_hold_engine.pool[--prophet_hold_engine.pool_n];
    if (prophet_cu.EventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return NULL;
    return e;
}

void prophet_hold_event_put(CUevent e)
{
    if (prophet_hold_engine.pool_n == prophet_hold_engine.pool_cap) {
        int cap = prophet_hold_engine.pool_cap ? 2 * prophet_hold_engine.pool_cap : 64;
        CUevent *p = realloc(prophet_hold_engine.pool, (size_t)cap * sizeof(*p));
        if (!p) {
            prophet_hold_enter();
            prophet_cu.EventDestroy(e);
            prophet_hold_leave();
            return;
        }
        prophet_hold_engine.pool = p;
        prophet_hold_engine.pool_cap = cap;
    }
    prophet_hold_engine.pool[prophet_hold_engine.pool_n++] = e;
}

static void hold_shadow_unref(hold_shadow_t *sh)
{
    if (sh && --sh->refs == 0) {
        prophet_hold_event_put(sh->ev); /* waits already issued keep referring to the old record */
        prophet_hold_depset_free(&sh->taint);
        free(sh);
    }
}

/* ---- streams ------------------------------------------------------------------------------ */

int prophet_hold_stream_live(const hold_stream_t *s)
{
    return s->vdeps.n > 0 || s->taint.n > 0;
}

/* Drops a stream's dependencies on blocks that are no longer open. */
void prophet_hold_stream_prune(hold_stream_t *h)
{
    HOLD_STREAM_CHANGE(h, {
        prophet_hold_vdeps_prune(&h->vdeps);
        prophet_hold_taint_prune(&h->taint);
    });
}

unsigned prophet_hold_hash_ptr(const void *p, unsigned n)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ull;
    return (unsigned)(x >> 40) % n;
}

/* The stream a handle names, as seen from this thread. */
void prophet_hold_stream_norm(CUstream s, int ptsz, CUstream *key, CUstream *real, int *legacy,
                              int *perthread)
{
    *legacy = 0;
    *perthread = 0;
    if (s == CU_STREAM_PER_THREAD || (s == NULL && ptsz)) {
        *key = (CUstream)(void *)&hold_thread_key;
        *real = CU_STREAM_PER_THREAD;
        *perthread = 1;
    } else if (s == NULL || s == CU_STREAM_LEGACY) {
        *key = CU_STREAM_LEGACY;
        *real = CU_STREAM_LEGACY;
        *legacy = 1;
    } else {
        *key = s;
        *real = s;
    }
}

hold_stream_t *prophet_hold_stream_lookup(CUstream key)
{
    for (hold_stream_t *h =
             prophet_hold_engine.streams[prophet_hold_hash_ptr(key, HOLD_STREAM_BUCKETS)];
         h; h = h->next)
        if (h->key == key)
            return h;
    return NULL;
}

hold_stream_t *prophet_hold_stream_new(CUstream key, CUstream real, int legacy, int perthread)
{
    unsigned b = prophet_hold_hash_ptr(key, HOLD_STREAM_BUCKETS);
    hold_stream_t *h = calloc(1, sizeof(*h));

    if (!h)
        return NULL;
    h->key = key;
    h->real = real;
    h->legacy = legacy;
    h->blocking = perthread;
    h->flags_known = legacy || perthread;
    h->next = prophet_hold_engine.streams[b];
    prophet_hold_engine.streams[b] = h;
    return h;
}

/* Forgets stream h (destroyed by the job: its handle may name another stream later). Nothing
 * refers to it any more: its virtual records were issued, its dependencies cleared. */
void prophet_hold_stream_free(hold_stream_t *h)
{
    hold_stream_t **pp =
        &prophet_hold_engine.streams[prophet_hold_hash_ptr(h->key, HOLD_STREAM_BUCKETS)];

    while (*pp && *pp != h)
        pp = &(*pp)->next;
    if (*pp)
        *pp = h->next;
    HOLD_STREAM_CHANGE(h, h->vdeps.n = h->taint.n = 0);
    hold_shadow_unref(h->shadow);
    prophet_hold_depset_free(&h->vdeps);
    prophet_hold_depset_free(&h->taint);
    free(h);
}

/* Merges the dependencies of `from` into `to` (the legacy stream's implicit synchronisation). */
static void hold_stream_merge(hold_stream_t *to, const hold_stream_t *from)
{
    HOLD_STREAM_CHANGE(to, {
        for (int i = 0; i < from->vdeps.n; i++)
            prophet_hold_dep_add(&to->vdeps, from->vdeps.d[i].c, from->vdeps.d[i].gen);
        for (int i = 0; i < from->taint.n; i++)
            prophet_hold_dep_add(&to->taint, from->taint.d[i].c, from->taint.d[i].gen);
    });
}

/* The engine's view of stream s before an operation on it; NULL if out of memory. The legacy
 * stream waits for every blocking stream and they wait for it: their dependencies flow. */
hold_stream_t *prophet_hold_stream(CUstream s, int ptsz)
{
    CUstream key, real;
    int legacy, perthread;
    hold_stream_t *h;

    prophet_hold_stream_norm(s, ptsz, &key, &real, &legacy, &perthread);
    h = prophet_hold_stream_lookup(key);
    if (!h && !(h = prophet_hold_stream_new(key, real, legacy, perthread)))
        return NULL;
    if (!h->flags_known) {
        unsigned flags = CU_STREAM_NON_BLOCKING;
        if (prophet_cu.StreamGetFlags)
            prophet_cu.StreamGetFlags(real, &flags);
        h->blocking = !(flags & CU_STREAM_NON_BLOCKING);
        h->flags_known = 1;
    }
    if (h->legacy) {
        for (int b = 0; prophet_hold_engine.nlive_streams > 0 && b < HOLD_STREAM_BUCKETS; b++)
            for (hold_stream_t *o = prophet_hold_engine.streams[b]; o; o = o->next)
                if (o != h && o->blocking && prophet_hold_stream_live(o))
                    hold_stream_merge(h, o);
    } else if (h->blocking) {
        hold_stream_t *l = prophet_hold_stream_lookup(CU_STREAM_LEGACY);
        if (l && prophet_hold_stream_live(l))
            hold_stream_merge(h, l);
    }
    return h;
}

/* A real operation was enqueued on s: its shadow no longer describes its prefix. */
void prophet_hold_stream_touched(hold_stream_t *h)
{
    hold_shadow_unref(h->shadow);
    h->shadow = NULL;
    h->cover_c = NULL;
}

/* The stream's last real operation is the ready event of a member of a block it depends on:
 * that block's completion implies the stream's prefix, no shadow is needed. */
int prophet_hold_covered(const hold_stream_t *h)
{
    for (int i = 0; h->cover_c && i < h->vdeps.n; i++)
        if (h->vdeps.d[i].c == h->cover_c &&
            prophet_hold_gen_before(h->cover_gen, h->vdeps.d[i].gen))
            return 1;
    return 0;
}

/* ---- records ------------------------------------------------------------------------------ */

hold_rec_t *prophet_hold_rec_find(CUevent e)
{
    for (hold_rec_t *r = prophet_hold_engine.recs[prophet_hold_hash_ptr(e, HOLD_EVENT_BUCKETS)]; r;
         r = r->next)
        if (r->ev == e)
            return r;
    return NULL;
}

hold_rec_t *prophet_hold_rec_get(CUevent e)
{
    unsigned b = prophet_hold_hash_ptr(e, HOLD_EVENT_BUCKETS);
    hold_rec_t *r = prophet_hold_rec_find(e);

    if (r)
        return r;
    if (!(r = calloc(1, sizeof(*r))))
        return NULL;
    r->ev = e;
    r->next = prophet_hold_engine.recs[b];
    prophet_hold_engine.recs[b] = r;
    prophet_hold_engine.nlive_recs++;
    return r;
}

/* r becomes virtual: first on the list of virtual records. */
void prophet_hold_rec_virt(hold_rec_t *r)
{
    r->virt = 1;
    r->vprev = NULL;
    r->vnext = prophet_hold_engine.virt_head;
    if (prophet_hold_engine.virt_head)
        prophet_hold_engine.virt_head->vprev = r;
    prophet_hold_engine.virt_head = r;
    prophet_hold_engine.nvirt++;
}

void prophet_hold_rec_unvirt(hold_rec_t *r)
{
    if (!r->virt)
        return;
    r->virt = 0;
    if (r->vprev)
        r->vprev->vnext = r->vnext;
    else
        prophet_hold_engine.virt_head = r->vnext;
    if (r->vnext)
        r->vnext->vprev = r->vprev;
    r->vprev = r->vnext = NULL;
    prophet_hold_engine.nvirt--;
    hold_shadow_unref(r->sh);
    r->sh = NULL;
    r->s = NULL;
    r->deps.n = 0;
}

void prophet_hold_rec_free(hold_rec_t *r)
{
    unsigned b = prophet_hold_hash_ptr(r->ev, HOLD_EVENT_BUCKETS);

    prophet_hold_rec_unvirt(r);
    for (hold_rec_t **p = &prophet_hold_engine.recs[b]; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    prophet_hold_engine.nlive_recs--;
    prophet_hold_depset_free(&r->deps);
    prophet_hold_depset_free(&r->taint);
    free(r);
}

/* A record that carries nothing any more is forgotten. */
void prophet_hold_rec_settle(hold_rec_t *r)
{
    prophet_hold_taint_prune(&r->taint);
    if (!r->virt && r->taint.n == 0 && !r->destroy)
        prophet_hold_rec_free(r);
}

/* ---- the entry points of holding.h: nothing held, the preload's own code, a forked child -- */

PROPHET_TLS unsigned long prophet_hold_entries_;

int prophet_hold_skip_query(void)
{
    return !prophet_hold_armed() || prophet_hold_inside() || prophet_hold_engine.forked;
}

int prophet_hold_skip(void)
{
    if (prophet_hold_skip_query())
        return 1;
    prophet_hold_entries_++;
    return 0;
}
