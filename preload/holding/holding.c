/* The holding engine (docs/completion-holding.md): what the CUDA driver wrappers do while an
 * all-reduce is held. It tracks, per stream, the held blocks the stream is *virtually* behind
 * (reached only through event records and waits: `vdeps`) and those it is *materially* behind
 * (real work was enqueued behind a GPU gate on a still open block: `taint`), and per event record
 * (not per handle: a new record of a handle replaces the old one) whether it is virtual.
 *
 * A block is named by its communicator and the generation its release writes into the comm's
 * gate word (c->gpu.gate_host, device-mapped, written by X after the block in release.c): a stream
 * that must really wait for block (c, g) gets cuStreamWaitValue32(gate, g, GEQ), whether the block
 * is still open (a GPU gate) or already released (the same as waiting on its end event, and
 * immune to the recycling of event handles). Blocks of one comm complete in order on X, so one
 * entry per comm (the highest generation) is enough.
 *
 * A virtual record keeps a "shadow": a real event of the engine recorded on the stream at that
 * moment (the stream's real prefix), unless the stream's last real operation was the ready event
 * of a member of a block it depends on (that block's completion implies the prefix). A wait on a
 * virtual record becomes a real wait on the shadow plus the record's dependencies.
 *
 * Locking: one mutex (prophet_hold_lock), taken only on the slow path; lock order is comm lock
 * then engine lock. Releases (which need the comm lock) are done after dropping the engine lock.
 * prophet_hold_armed_ is nonzero while a block is open or a virtual record, a stream dependency
 * or a taint is live. */
#include "holding/holding.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "real_libs/cuda_driver.h"
#include "real_libs/dlsym_real.h"
#include "debug_log/log_line.h"
#include "config/process_config.h"

atomic_int prophet_hold_armed_;
PROPHET_TLS int prophet_hold_depth_;
atomic_int prophet_capture_seen_;

#define HOLD_STREAM_BUCKETS 256
#define HOLD_EVENT_BUCKETS 1024
#define HOLD_COMM_BUCKETS 64

typedef struct hold_dep {
    prophet_comm_t *c;
    uint32_t gen;
} hold_dep_t;

/* A set of blocks, one entry per communicator: grows without bound (heap; d owned by the set,
 * copied with hold_depset_copy, freed with hold_depset_free). */
typedef struct hold_depset {
    int n, cap;
    hold_dep_t *d;
} hold_depset_t;

typedef struct hold_shadow {
    CUevent ev;
    int refs;
    hold_depset_t taint; /* open blocks the stream was materially behind when it was recorded */
} hold_shadow_t;

typedef struct hold_stream {
    struct hold_stream *next;
    CUstream key;  /* normalised: per-thread default streams get a per-thread key */
    CUstream real; /* the handle the driver is called with */
    int legacy;    /* the legacy default stream */
    int blocking;  /* synchronises implicitly with the legacy stream */
    int flags_known;
    hold_depset_t vdeps, taint;
    hold_shadow_t *shadow; /* valid while no real operation was enqueued since */
    prophet_comm_t *cover_c;
    uint32_t cover_gen; /* last real op: the ready event of a member of (cover_c, cover_gen) */
} hold_stream_t;

typedef struct hold_rec {
    struct hold_rec *next;          /* hash chain */
    struct hold_rec *vprev, *vnext; /* list of virtual records */
    CUevent ev;
    int virt;            /* recorded virtually, not yet issued */
    int destroy;         /* cuEventDestroy deferred until issued */
    hold_depset_t deps;  /* virtual: the blocks it covers */
    hold_depset_t taint; /* open blocks it is materially behind */
    hold_shadow_t *sh;   /* virtual: the stream's real prefix (NULL: covered) */
    hold_stream_t *s;    /* virtual: where it was recorded */
} hold_rec_t;

typedef struct hold_comm {
    struct hold_comm *next, *all_next; /* hash chain; list of every comm ever seen */
    prophet_comm_t *c;
    uint32_t open_gen; /* generation of the open block, 0 when none */
    pthread_t owner;
    CUstream stream;   /* normalised key of the open block's members' stream */
    uint32_t released; /* generation of the last released block */
    int foreign_logged;
} hold_comm_t;

static pthread_mutex_t prophet_hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t prophet_hold_cond = PTHREAD_COND_INITIALIZER;
static hold_stream_t *hold_streams[HOLD_STREAM_BUCKETS];
static hold_rec_t *hold_recs[HOLD_EVENT_BUCKETS];
static hold_rec_t *hold_virt_head;
static hold_comm_t *hold_comms[HOLD_COMM_BUCKETS]; /* every comm seen, never freed: no limit */
static hold_comm_t *hold_comm_all;
static int hold_forked; /* this is a forked child: the engine is off for good (hold_atfork_child) */
static int hold_nopen, hold_nvirt, hold_nlive_recs, hold_nlive_streams;
static CUevent *hold_pool;
static int hold_pool_n, hold_pool_cap;
static PROPHET_TLS char hold_thread_key; /* its address names this thread's default stream */
/* Lock-free answers for the scheduler's per-call questions (written under the engine lock, read
 * without it by the thread that issues the calls; what another thread did first is seen through the
 * synchronisation that ordered it first): the only communicator ever named in a dependency set
 * (NULL: none yet; HOLD_MANY: several), and whether any stream is materially behind an open block
 * (streams with a taint, counted in HOLD_STREAM_CHANGE). */
#define HOLD_MANY ((prophet_comm_t *)(uintptr_t)1)
static prophet_comm_t *_Atomic hold_dep_comm;
static int hold_ntainted;
static atomic_int hold_any_taint;
/* Releases c's open block (takes the comm lock): set by comm_life.c, so that this file calls
 * nothing above it (release.c calls prophet_hold_block_released). */
static void (*_Atomic hold_release_fn)(prophet_comm_t *c);

void prophet_hold_set_release(void (*fn)(prophet_comm_t *c))
{
    atomic_store(&hold_release_fn, fn);
}

/* The engine's own CUDA calls pass through the wrappers: it counts as the preload's code. */
#define HOLD_LOCK()                                                                                \
    do {                                                                                           \
        pthread_mutex_lock(&prophet_hold_lock);                                                    \
        prophet_hold_enter();                                                                      \
    } while (0)
#define HOLD_UNLOCK()                                                                              \
    do {                                                                                           \
        prophet_hold_leave();                                                                      \
        pthread_mutex_unlock(&prophet_hold_lock);                                                  \
    } while (0)

/* ---- fork ------------------------------------------------------------------------------- */

/* A forked child has only the forking thread: the engine's state names the parent's held blocks,
 * streams and events (none of them the child's), and its lock may have been copied while another
 * thread held it. The child's engine is disarmed for good: every wrapper goes straight to the
 * driver, no entry point of the engine takes the lock or releases a parent's block (whose NCCL
 * calls would run on the parent's communicators from the child). The preload itself passes
 * through in such a child (init.c). */
static void hold_atfork_child(void)
{
    hold_forked = 1;
    atomic_store(&prophet_hold_armed_, 0);
    pthread_mutex_init(&prophet_hold_lock, NULL);
    pthread_cond_init(&prophet_hold_cond, NULL);
}

static void hold_atfork_register(void)
{
    pthread_atfork(NULL, NULL, hold_atfork_child);
}

/* Registers the child handler before the engine arms or takes its lock for the first time. */
static void hold_fork_guard(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, hold_atfork_register);
}

/* ---- small helpers ------------------------------------------------------------------------ */

static void hold_rearm(void)
{
    int armed = hold_nopen > 0 || hold_nvirt > 0 || hold_nlive_recs > 0 || hold_nlive_streams > 0;
    atomic_store_explicit(&prophet_hold_armed_, armed, memory_order_relaxed);
}

static unsigned hold_hash_ptr(const void *p, unsigned n);

/* The engine's state of communicator c, made at the first question about it (any number of
 * communicators; a node's address is stable: hold_release_or_wait keeps it across an unlock).
 * NULL only when out of memory. */
static hold_comm_t *hold_comm(prophet_comm_t *c)
{
    unsigned b = hold_hash_ptr(c, HOLD_COMM_BUCKETS);
    hold_comm_t *h;

    for (h = hold_comms[b]; h; h = h->next)
        if (h->c == c)
            return h;
    if (!(h = calloc(1, sizeof(*h))))
        return NULL;
    h->c = c;
    h->next = hold_comms[b];
    hold_comms[b] = h;
    h->all_next = hold_comm_all;
    hold_comm_all = h;
    return h;
}

static int hold_gen_before(uint32_t a, uint32_t b) /* a <= b, wrap-safe */
{
    return (int32_t)(b - a) >= 0;
}

/* The block (c, g) has completed on the GPU (X wrote its generation). */
static int hold_complete(const hold_dep_t *d)
{
    uint32_t v = __atomic_load_n(d->c->gpu.gate_host, __ATOMIC_ACQUIRE);
    return hold_gen_before(d->gen, v);
}

static int hold_is_open(const hold_dep_t *d)
{
    hold_comm_t *h = hold_comm(d->c);
    return h && h->open_gen && hold_gen_before(h->open_gen, d->gen);
}

static int hold_is_released(const hold_dep_t *d)
{
    return !hold_is_open(d);
}

/* Adds (c, g) keeping the highest generation per comm; the set grows as needed. -1 only when out
 * of memory. */
static int hold_dep_add(hold_depset_t *s, prophet_comm_t *c, uint32_t g)
{
    for (int i = 0; i < s->n; i++)
        if (s->d[i].c == c) {
            if (hold_gen_before(s->d[i].gen, g))
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
    if (atomic_load_explicit(&hold_dep_comm, memory_order_relaxed) != c &&
        !atomic_compare_exchange_strong(&hold_dep_comm, &(prophet_comm_t *){NULL}, c))
        atomic_store(&hold_dep_comm, HOLD_MANY);
    return 0;
}

static void hold_dep_del(hold_depset_t *s, int i)
{
    s->d[i] = s->d[--s->n];
}

/* *dst = a copy of *src (dst's own storage reused). -1 when out of memory (dst then holds what
 * fitted: callers make the dependency real instead). */
static int hold_depset_copy(hold_depset_t *dst, const hold_depset_t *src)
{
    dst->n = 0;
    for (int i = 0; i < src->n; i++)
        if (hold_dep_add(dst, src->d[i].c, src->d[i].gen) != 0)
            return -1;
    return 0;
}

static void hold_depset_free(hold_depset_t *s)
{
    free(s->d);
    *s = (hold_depset_t){0};
}

static int hold_dep_has_open(const hold_depset_t *s)
{
    for (int i = 0; i < s->n; i++)
        if (hold_is_open(&s->d[i]))
            return 1;
    return 0;
}

/* Drops the entries of released blocks (taints matter only while their block is open). */
static void hold_taint_prune(hold_depset_t *s)
{
    for (int i = s->n; i-- > 0;)
        if (!hold_is_open(&s->d[i]))
            hold_dep_del(s, i);
}

static void hold_vdeps_prune(hold_depset_t *s)
{
    for (int i = s->n; i-- > 0;)
        if (hold_is_released(&s->d[i]) && hold_complete(&s->d[i]))
            hold_dep_del(s, i);
}

/* ---- engine events (shadows) ---------------------------------------------------------------- */

static CUevent hold_event_get(void)
{
    CUevent e = NULL;

    if (hold_pool_n)
        return hold_pool[--hold_pool_n];
    if (prophet_cu.EventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return NULL;
    return e;
}

static void hold_event_put(CUevent e)
{
    if (hold_pool_n == hold_pool_cap) {
        int cap = hold_pool_cap ? 2 * hold_pool_cap : 64;
        CUevent *p = realloc(hold_pool, (size_t)cap * sizeof(*p));
        if (!p) {
            prophet_hold_enter();
            prophet_cu.EventDestroy(e);
            prophet_hold_leave();
            return;
        }
        hold_pool = p;
        hold_pool_cap = cap;
    }
    hold_pool[hold_pool_n++] = e;
}

static void hold_shadow_unref(hold_shadow_t *sh)
{
    if (sh && --sh->refs == 0) {
        hold_event_put(sh->ev); /* waits already issued keep referring to the old record */
        hold_depset_free(&sh->taint);
        free(sh);
    }
}

/* ---- streams ------------------------------------------------------------------------------ */

static int hold_stream_live(const hold_stream_t *s)
{
    return s->vdeps.n > 0 || s->taint.n > 0;
}

/* Keeps the count of streams with dependencies in step (call before and after a change). */
#define HOLD_STREAM_CHANGE(s, ...)                                                                 \
    do {                                                                                           \
        int was_ = hold_stream_live(s), tainted_ = (s)->taint.n > 0;                               \
        __VA_ARGS__;                                                                               \
        hold_nlive_streams += hold_stream_live(s) - was_;                                          \
        if (((s)->taint.n > 0) != tainted_) {                                                      \
            hold_ntainted += (s)->taint.n > 0 ? 1 : -1;                                            \
            atomic_store(&hold_any_taint, hold_ntainted > 0);                                      \
        }                                                                                          \
    } while (0)

/* Drops a stream's dependencies on blocks that are no longer open. */
static void hold_stream_prune(hold_stream_t *h)
{
    HOLD_STREAM_CHANGE(h, {
        hold_vdeps_prune(&h->vdeps);
        hold_taint_prune(&h->taint);
    });
}

static unsigned hold_hash_ptr(const void *p, unsigned n)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ull;
    return (unsigned)(x >> 40) % n;
}

/* The stream a handle names, as seen from this thread. */
static void hold_stream_norm(CUstream s, int ptsz, CUstream *key, CUstream *real, int *legacy,
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

static hold_stream_t *hold_stream_lookup(CUstream key)
{
    for (hold_stream_t *h = hold_streams[hold_hash_ptr(key, HOLD_STREAM_BUCKETS)]; h; h = h->next)
        if (h->key == key)
            return h;
    return NULL;
}

static hold_stream_t *hold_stream_new(CUstream key, CUstream real, int legacy, int perthread)
{
    unsigned b = hold_hash_ptr(key, HOLD_STREAM_BUCKETS);
    hold_stream_t *h = calloc(1, sizeof(*h));

    if (!h)
        return NULL;
    h->key = key;
    h->real = real;
    h->legacy = legacy;
    h->blocking = perthread;
    h->flags_known = legacy || perthread;
    h->next = hold_streams[b];
    hold_streams[b] = h;
    return h;
}

/* Merges the dependencies of `from` into `to` (the legacy stream's implicit synchronisation). */
static void hold_stream_merge(hold_stream_t *to, const hold_stream_t *from)
{
    HOLD_STREAM_CHANGE(to, {
        for (int i = 0; i < from->vdeps.n; i++)
            hold_dep_add(&to->vdeps, from->vdeps.d[i].c, from->vdeps.d[i].gen);
        for (int i = 0; i < from->taint.n; i++)
            hold_dep_add(&to->taint, from->taint.d[i].c, from->taint.d[i].gen);
    });
}

/* The engine's view of stream s before an operation on it; NULL if out of memory. The legacy
 * stream waits for every blocking stream and they wait for it: their dependencies flow. */
static hold_stream_t *hold_stream(CUstream s, int ptsz)
{
    CUstream key, real;
    int legacy, perthread;
    hold_stream_t *h;

    hold_stream_norm(s, ptsz, &key, &real, &legacy, &perthread);
    h = hold_stream_lookup(key);
    if (!h && !(h = hold_stream_new(key, real, legacy, perthread)))
        return NULL;
    if (!h->flags_known) {
        unsigned flags = CU_STREAM_NON_BLOCKING;
        if (prophet_cu.StreamGetFlags)
            prophet_cu.StreamGetFlags(real, &flags);
        h->blocking = !(flags & CU_STREAM_NON_BLOCKING);
        h->flags_known = 1;
    }
    if (h->legacy) {
        for (int b = 0; hold_nlive_streams > 0 && b < HOLD_STREAM_BUCKETS; b++)
            for (hold_stream_t *o = hold_streams[b]; o; o = o->next)
                if (o != h && o->blocking && hold_stream_live(o))
                    hold_stream_merge(h, o);
    } else if (h->blocking) {
        hold_stream_t *l = hold_stream_lookup(CU_STREAM_LEGACY);
        if (l && hold_stream_live(l))
            hold_stream_merge(h, l);
    }
    return h;
}

/* A real operation was enqueued on s: its shadow no longer describes its prefix. */
static void hold_stream_touched(hold_stream_t *h)
{
    hold_shadow_unref(h->shadow);
    h->shadow = NULL;
    h->cover_c = NULL;
}

/* The stream's last real operation is the ready event of a member of a block it depends on:
 * that block's completion implies the stream's prefix, no shadow is needed. */
static int hold_covered(const hold_stream_t *h)
{
    for (int i = 0; h->cover_c && i < h->vdeps.n; i++)
        if (h->vdeps.d[i].c == h->cover_c && hold_gen_before(h->cover_gen, h->vdeps.d[i].gen))
            return 1;
    return 0;
}

/* ---- records ------------------------------------------------------------------------------ */

static hold_rec_t *hold_rec_find(CUevent e)
{
    for (hold_rec_t *r = hold_recs[hold_hash_ptr(e, HOLD_EVENT_BUCKETS)]; r; r = r->next)
        if (r->ev == e)
            return r;
    return NULL;
}

static hold_rec_t *hold_rec_get(CUevent e)
{
    unsigned b = hold_hash_ptr(e, HOLD_EVENT_BUCKETS);
    hold_rec_t *r = hold_rec_find(e);

    if (r)
        return r;
    if (!(r = calloc(1, sizeof(*r))))
        return NULL;
    r->ev = e;
    r->next = hold_recs[b];
    hold_recs[b] = r;
    hold_nlive_recs++;
    return r;
}

static void hold_rec_unvirt(hold_rec_t *r)
{
    if (!r->virt)
        return;
    r->virt = 0;
    if (r->vprev)
        r->vprev->vnext = r->vnext;
    else
        hold_virt_head = r->vnext;
    if (r->vnext)
        r->vnext->vprev = r->vprev;
    r->vprev = r->vnext = NULL;
    hold_nvirt--;
    hold_shadow_unref(r->sh);
    r->sh = NULL;
    r->s = NULL;
    r->deps.n = 0;
}

static void hold_rec_free(hold_rec_t *r)
{
    unsigned b = hold_hash_ptr(r->ev, HOLD_EVENT_BUCKETS);

    hold_rec_unvirt(r);
    for (hold_rec_t **p = &hold_recs[b]; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    hold_nlive_recs--;
    hold_depset_free(&r->deps);
    hold_depset_free(&r->taint);
    free(r);
}

/* A record that carries nothing any more is forgotten. */
static void hold_rec_settle(hold_rec_t *r)
{
    hold_taint_prune(&r->taint);
    if (!r->virt && r->taint.n == 0 && !r->destroy)
        hold_rec_free(r);
}

/* ---- making dependencies real ------------------------------------------------------------- */

/* Stream `real` waits for block d (open or released) unless it has already completed. */
static CUresult hold_gate(CUstream real, const hold_dep_t *d)
{
    uint32_t g;

    if (hold_complete(d))
        return CUDA_SUCCESS;
    g = atomic_load_explicit(&d->c->gated_gen, memory_order_relaxed);
    while ((int32_t)(d->gen - g) > 0 &&
           !atomic_compare_exchange_weak_explicit(&d->c->gated_gen, &g, d->gen,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    return prophet_cu.StreamWaitValue32(real, d->c->gpu.gate_dev, d->gen, CU_STREAM_WAIT_VALUE_GEQ);
}

/* Issues virtual record r for real on its own stream, behind gates on its dependencies. */
static CUresult hold_rec_issue_on_stream(hold_rec_t *r)
{
    CUresult rc = CUDA_SUCCESS, r2;
    hold_stream_t *s = r->s;

    for (int i = 0; i < r->deps.n; i++)
        if ((r2 = hold_gate(s->real, &r->deps.d[i])) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
            rc = r2;
    for (int i = 0; i < r->deps.n; i++)
        if (hold_is_open(&r->deps.d[i]))
            hold_dep_add(&r->taint, r->deps.d[i].c, r->deps.d[i].gen);
    hold_stream_touched(s);
    if ((r2 = prophet_cu.EventRecord(r->ev, s->real)) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
        rc = r2;
    return rc;
}

static void hold_rec_issued(hold_rec_t *r)
{
    hold_rec_unvirt(r);
    if (r->destroy) {
        prophet_cu.EventDestroy(r->ev);
        r->destroy = 0;
        r->taint.n = 0;
    }
    hold_rec_settle(r);
}

/* Real work is about to be enqueued on h (or the host waits for it): its virtual dependencies
 * become GPU gates (still open blocks: the stream is then materially behind them), and its
 * pending virtual records are issued behind those gates. Never releases anything. */
static CUresult hold_materialise(hold_stream_t *h)
{
    CUresult rc = CUDA_SUCCESS, r2;

    if (h->vdeps.n == 0)
        return CUDA_SUCCESS;
    prophet_hold_enter();
    HOLD_STREAM_CHANGE(h, {
        for (int i = 0; i < h->vdeps.n; i++) {
            hold_dep_t *d = &h->vdeps.d[i];
            if ((r2 = hold_gate(h->real, d)) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
                rc = r2;
            if (hold_is_open(d))
                hold_dep_add(&h->taint, d->c, d->gen);
        }
        h->vdeps.n = 0;
    });
    hold_stream_touched(h);
    for (hold_rec_t *r = hold_virt_head, *n; r; r = n) {
        n = r->vnext;
        if (r->s != h)
            continue;
        /* the gates are already in front: a plain record covers them */
        for (int i = 0; i < h->taint.n; i++)
            hold_dep_add(&r->taint, h->taint.d[i].c, h->taint.d[i].gen);
        if ((r2 = prophet_cu.EventRecord(r->ev, h->real)) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
            rc = r2;
        hold_rec_issued(r);
    }
    prophet_hold_leave();
    if (rc != CUDA_SUCCESS)
        prophet_msg(PROPHET_LOG_WARN, "gating stream %p behind a held all-reduce failed (%s)",
                    (void *)h->real, prophet_cuda_errstr(rc));
    return rc;
}

/* ---- releases requested by the wrappers ----------------------------------------------------- */

/* Adds the open blocks among `s` to `out` (one per comm). Called locked. */
static void hold_collect_open(const hold_depset_t *s, hold_depset_t *out)
{
    for (int i = 0; i < s->n; i++)
        if (hold_is_open(&s->d[i]) && hold_dep_add(out, s->d[i].c, s->d[i].gen) != 0)
            prophet_msg(PROPHET_LOG_WARN, "out of memory collecting the held blocks to release");
}

/* Makes sure every block in `open` is released: by this thread at this program-order point when
 * it issued the block, else (another thread issues the comm's calls) by waiting until that
 * thread releases it. Called with the engine lock held; drops it around the releases. */
static void hold_release_or_wait(hold_dep_t *open, int n)
{
    pthread_t self = pthread_self();
    int64_t warn_at = 0; /* read the clock only when a wait begins (not per call) */
    int warned = 0;

    for (int i = 0; i < n; i++) {
        hold_comm_t *h;
        while ((h = hold_comm(open[i].c)) && h->open_gen &&
               hold_gen_before(h->open_gen, open[i].gen)) {
            if (pthread_equal(h->owner, self)) {
                void (*release)(prophet_comm_t *) = atomic_load(&hold_release_fn);
                if (!release)
                    break;
                pthread_mutex_unlock(&prophet_hold_lock);
                release(open[i].c);
                pthread_mutex_lock(&prophet_hold_lock);
                if (h->open_gen && hold_gen_before(h->open_gen, open[i].gen) &&
                    pthread_equal(h->owner, self))
                    break; /* nothing was pending after all (state out of step): do not spin */
                continue;
            }
            if (!h->foreign_logged) {
                h->foreign_logged = 1;
                prophet_msg(PROPHET_LOG_INFO,
                            "comm %lu: a host synchronisation on another thread waits for the "
                            "issuing thread to release block generation %u",
                            (unsigned long)open[i].c->id, open[i].gen);
            }
            if (!warn_at)
                warn_at = prophet_now_us() + (int64_t)prophet_cfg.stall_ms * 1000;
            if (!warned && prophet_now_us() > warn_at) {
                warned = 1;
                prophet_msg(PROPHET_LOG_WARN,
                            "comm %lu: a host synchronisation has waited %u ms for a held block "
                            "that only its issuing thread can release",
                            (unsigned long)open[i].c->id, prophet_cfg.stall_ms);
            }
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 5 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&prophet_hold_cond, &prophet_hold_lock, &ts);
        }
    }
}

/* ---- the interface of holding.h --------------------------------------------------------- */

static int hold_skip(void)
{
    return !prophet_hold_armed() || prophet_hold_inside() || hold_forked;
}

/* Interprocess events (the section at the end of this file). */
static int hold_ipc_has(CUevent e);
static void hold_ipc_record(hold_stream_t *h, CUevent e);

int prophet_hold_event_record(CUevent e, CUstream s, int ptsz, CUresult *rc)
{
    hold_stream_t *h;
    hold_rec_t *r;
    int handled = 0;

    if (hold_skip())
        return 0;
    HOLD_LOCK();
    if (!(h = hold_stream(s, ptsz)))
        goto out;
    hold_stream_prune(h); /* counted: a stream left without dependencies is no longer live */
    r = hold_rec_find(e);
    if (r) { /* a new record of the handle replaces the old one */
        hold_rec_unvirt(r);
        r->taint.n = 0;
    }
    if (hold_ipc_has(e)) { /* another process may wait on it: never virtual */
        hold_ipc_record(h, e);
        goto out;
    }
    if (h->vdeps.n > 0 && !hold_dep_has_open(&h->vdeps)) {
        /* behind released blocks only: really wait for them (cheap) and record for real */
        hold_materialise(h);
    }
    if (h->vdeps.n == 0) {
        if (h->taint.n > 0 && (r = r ? r : hold_rec_get(e)) != NULL)
            (void)hold_depset_copy(&r->taint, &h->taint); /* a real record behind a gate */
        if (r)
            hold_rec_settle(r);
        goto out;
    }
    if (!(r = r ? r : hold_rec_get(e))) {
        hold_materialise(h); /* out of memory: make it real */
        goto out;
    }
    /* virtual: nothing reaches the driver (but the stream's real prefix, unless covered) */
    if (hold_depset_copy(&r->deps, &h->vdeps) || hold_depset_copy(&r->taint, &h->taint)) {
        r->deps.n = 0;
        hold_materialise(h); /* out of memory: make it real */
        hold_rec_settle(r);
        goto out;
    }
    r->s = h;
    r->sh = NULL;
    if (!hold_covered(h)) {
        if (!h->shadow) {
            hold_shadow_t *sh = calloc(1, sizeof(*sh));
            CUresult r2 = CUDA_ERROR_OUT_OF_MEMORY;
            prophet_hold_enter();
            if (sh && (sh->ev = hold_event_get()) != NULL &&
                (r2 = prophet_cu.EventRecord(sh->ev, h->real)) == CUDA_SUCCESS) {
                sh->refs = 1;
                (void)hold_depset_copy(&sh->taint, &h->taint);
                h->shadow = sh;
            } else {
                if (sh && sh->ev)
                    hold_event_put(sh->ev);
                free(sh);
            }
            prophet_hold_leave();
            if (!h->shadow) {
                prophet_msg(PROPHET_LOG_WARN, "recording a stream's prefix failed (%s)",
                            prophet_cuda_errstr(r2));
                hold_materialise(h);
                hold_rec_settle(r);
                goto out; /* the driver records it for real */
            }
        }
        r->sh = h->shadow;
        r->sh->refs++;
    }
    r->virt = 1;
    r->vprev = NULL;
    r->vnext = hold_virt_head;
    if (hold_virt_head)
        hold_virt_head->vprev = r;
    hold_virt_head = r;
    hold_nvirt++;
    *rc = CUDA_SUCCESS;
    handled = 1;
out:
    hold_rearm();
    HOLD_UNLOCK();
    return handled;
}

static int hold_one_queue(void);

/* One hardware queue: a stream may not become virtually behind another thread's open block. Its
 * thread could later gate it on that block from the preload's own path (an NCCL call inside a
 * user group, with the comm lock held, cannot release another thread's block), and the gate would
 * sit ahead of the block's launch in the one queue. So a wait on a virtual record of another
 * thread's open blocks waits on the host for their release here, where no comm lock is held, as a
 * host synchronisation does (rule 6). Called locked; drops the lock while it waits. */
static void hold_one_queue_wait_foreign(CUevent e)
{
    hold_depset_t foreign = {0};
    hold_rec_t *r = hold_rec_find(e);
    pthread_t self = pthread_self();

    if (!r || !r->virt)
        return;
    for (int i = 0; i < r->deps.n; i++) {
        hold_comm_t *hc = hold_comm(r->deps.d[i].c);
        if (hc && hold_is_open(&r->deps.d[i]) && !pthread_equal(hc->owner, self) &&
            hold_dep_add(&foreign, r->deps.d[i].c, r->deps.d[i].gen) != 0)
            prophet_msg(PROPHET_LOG_WARN, "out of memory collecting the held blocks to wait for");
    }
    if (foreign.n)
        hold_release_or_wait(foreign.d, foreign.n);
    hold_depset_free(&foreign);
}

int prophet_hold_stream_wait_event(CUstream s, CUevent e, int ptsz, CUresult *rc)
{
    hold_stream_t *h;
    hold_rec_t *r;
    int handled = 0;

    if (hold_skip())
        return 0;
    HOLD_LOCK();
    if (hold_one_queue())
        hold_one_queue_wait_foreign(e); /* before the stream is looked up: drops the lock */
    if (!(h = hold_stream(s, ptsz)))
        goto out;
    r = hold_rec_find(e);
    if (r)
        hold_rec_settle(r);
    r = hold_rec_find(e);
    if (r && r->virt) {
        int full = 0;
        HOLD_STREAM_CHANGE(h, {
            for (int i = 0; i < r->deps.n; i++)
                full |= hold_dep_add(&h->vdeps, r->deps.d[i].c, r->deps.d[i].gen) != 0;
            for (int i = 0; i < r->taint.n; i++)
                full |= hold_dep_add(&h->taint, r->taint.d[i].c, r->taint.d[i].gen) != 0;
        });
        *rc = CUDA_SUCCESS;
        hold_stream_touched(h);
        if (r->sh) {
            prophet_hold_enter();
            *rc = prophet_cu.StreamWaitEvent(h->real, r->sh->ev, 0);
            prophet_hold_leave();
        }
        if (full) { /* more communicators than the set holds: wait for real */
            hold_materialise(h);
            prophet_hold_enter();
            hold_rec_issue_on_stream(r);
            hold_rec_issued(r);
            *rc = prophet_cu.StreamWaitEvent(h->real, e, 0);
            prophet_hold_leave();
        }
        handled = 1;
        goto out;
    }
    hold_stream_touched(h);
    if (r && r->taint.n > 0)
        HOLD_STREAM_CHANGE(h, {
            for (int i = 0; i < r->taint.n; i++)
                hold_dep_add(&h->taint, r->taint.d[i].c, r->taint.d[i].gen);
        });
out:
    hold_rearm();
    HOLD_UNLOCK();
    return handled;
}

static void hold_work(CUstream s, int ptsz, int may_release);

/* ---- CUDA_DEVICE_MAX_CONNECTIONS=1 ----------------------------------------------------------
 * Every stream's work then goes through one hardware queue in issue order: a GPU gate on an open
 * block (cuStreamWaitValue32) blocks everything issued after it, the block's own launch on X
 * included, which is issued only at its release: a deadlock (preload.hold_one_queue). With one
 * connection, real work on a stream behind an open block releases that block first (by its
 * issuing thread at this program-order point; another thread waits on the host for it, as a host
 * synchronisation does); the gate then waits for a released block, whose launch is ahead of it
 * in the queue. */
static int hold_one_queue(void)
{
    static int v = -1;

    if (v < 0) {
        const char *e = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
        v = e && atoi(e) == 1;
    }
    return v;
}

/* Adds the open blocks h is virtually behind to `out` when one hardware queue is all there is. */
static void hold_one_queue_collect(const hold_stream_t *h, hold_depset_t *out)
{
    if (hold_one_queue())
        hold_collect_open(&h->vdeps, out);
}

void prophet_hold_stream_work(CUstream s, int ptsz)
{
    if (hold_skip())
        return;
    hold_work(s, ptsz, 1);
}

void prophet_hold_work_own(CUstream s, int ptsz)
{
    hold_work(s, ptsz, 0);
}

void prophet_hold_forward_work(CUstream s, int ptsz)
{
    hold_work(s, ptsz, 1);
}

/* Real work on s. When it lands on the members' stream of an open block that this thread issued,
 * no later call of that stream can join the block any more (it is materially behind it): the block
 * is released here, a program-order point of the issuing thread (the same on every rank), so that
 * no host synchronisation of another thread waits for it (Horovod's copy-out after the call). */
static void hold_work(CUstream s, int ptsz, int may_release)
{
    hold_depset_t dead = {0};
    hold_stream_t *h;

    if (!prophet_hold_armed() || hold_forked)
        return;
    HOLD_LOCK();
    if ((h = hold_stream(s, ptsz)) != NULL) {
        for (int i = 0; may_release && i < h->vdeps.n; i++) {
            hold_comm_t *hc = hold_comm(h->vdeps.d[i].c);
            if (hc && hold_is_open(&h->vdeps.d[i]) && hc->stream == h->key &&
                pthread_equal(hc->owner, pthread_self()))
                hold_dep_add(&dead, h->vdeps.d[i].c, h->vdeps.d[i].gen);
        }
        if (may_release)
            hold_one_queue_collect(h, &dead);
        if (dead.n)
            hold_release_or_wait(dead.d, dead.n);
        hold_stream_prune(h);
        hold_materialise(h);
        hold_stream_touched(h);
    }
    hold_rearm();
    HOLD_UNLOCK();
    hold_depset_free(&dead);
}

int prophet_hold_event_query(CUevent e, CUresult *rc)
{
    hold_rec_t *r;
    int handled = 0;

    if (hold_skip())
        return 0;
    HOLD_LOCK();
    if ((r = hold_rec_find(e)) != NULL && r->virt) {
        *rc = CUDA_ERROR_NOT_READY; /* releases nothing: a watchdog never changes the grouping */
        handled = 1;
    }
    HOLD_UNLOCK();
    return handled;
}

int prophet_hold_stream_query(CUstream s, int ptsz, CUresult *rc)
{
    CUstream key, real;
    int legacy, perthread, handled = 0;
    hold_stream_t *h;

    if (hold_skip())
        return 0;
    hold_stream_norm(s, ptsz, &key, &real, &legacy, &perthread);
    HOLD_LOCK();
    if ((h = hold_stream_lookup(key)) != NULL) {
        for (int i = 0; i < h->vdeps.n; i++)
            if (!hold_complete(&h->vdeps.d[i]))
                handled = 1;
        for (hold_rec_t *r = hold_virt_head; r && !handled; r = r->vnext)
            handled = r->s == h;
    }
    if (handled)
        *rc = CUDA_ERROR_NOT_READY;
    HOLD_UNLOCK();
    return handled;
}

int prophet_hold_event_elapsed(CUevent a, CUevent b, CUresult *rc)
{
    hold_rec_t *r;
    int handled = 0;

    if (hold_skip())
        return 0;
    HOLD_LOCK();
    if (((r = hold_rec_find(a)) != NULL && r->virt) ||
        ((r = hold_rec_find(b)) != NULL && r->virt)) {
        *rc = CUDA_ERROR_NOT_READY;
        handled = 1;
    }
    HOLD_UNLOCK();
    return handled;
}

void prophet_hold_event_sync(CUevent e)
{
    hold_depset_t open = {0};
    hold_rec_t *r;

    if (hold_skip())
        return;
    HOLD_LOCK();
    if ((r = hold_rec_find(e)) != NULL) {
        hold_collect_open(&r->deps, &open);
        hold_collect_open(&r->taint, &open);
    }
    hold_release_or_wait(open.d, open.n);
    /* released: the record was issued on X (or its stream); nothing else to do */
    hold_rearm();
    HOLD_UNLOCK();
    hold_depset_free(&open);
}

void prophet_hold_stream_sync(CUstream s, int ptsz)
{
    hold_depset_t open = {0};
    hold_stream_t *h;

    if (hold_skip())
        return;
    HOLD_LOCK();
    if ((h = hold_stream(s, ptsz)) != NULL) {
        hold_collect_open(&h->vdeps, &open);
        hold_collect_open(&h->taint, &open);
        hold_release_or_wait(open.d, open.n);
        hold_stream_prune(h);
        hold_materialise(h); /* the host waits for what the stream is behind */
    }
    hold_rearm();
    HOLD_UNLOCK();
    hold_depset_free(&open);
}

void prophet_hold_ctx_sync(void)
{
    hold_depset_t open = {0};

    if (hold_skip())
        return;
    HOLD_LOCK();
    for (hold_comm_t *hc = hold_comm_all; hc; hc = hc->all_next)
        if (hc->open_gen && hold_dep_add(&open, hc->c, hc->open_gen) != 0)
            prophet_msg(PROPHET_LOG_WARN, "out of memory collecting the held blocks to release");
    hold_release_or_wait(open.d, open.n);
    /* every block is released: the context synchronisation waits for X and the records on it */
    for (int b = 0; hold_nlive_streams > 0 && b < HOLD_STREAM_BUCKETS; b++)
        for (hold_stream_t *h = hold_streams[b]; h; h = h->next)
            hold_stream_prune(h);
    hold_rearm();
    HOLD_UNLOCK();
    hold_depset_free(&open);
}

int prophet_hold_event_destroy(CUevent e, CUresult *rc)
{
    hold_rec_t *r;
    int handled = 0;

    if (hold_skip())
        return 0;
    HOLD_LOCK();
    if ((r = hold_rec_find(e)) != NULL) {
        if (r->virt) {
            r->destroy = 1; /* destroyed once issued */
            *rc = CUDA_SUCCESS;
            handled = 1;
        } else {
            hold_rec_free(r);
        }
    }
    hold_rearm();
    HOLD_UNLOCK();
    return handled;
}

int prophet_hold_stream_destroy(CUstream s, CUresult *rc)
{
    hold_depset_t open = {0};
    hold_stream_t *h;

    (void)rc;
    if (hold_skip())
        return 0;
    HOLD_LOCK();
    if ((h = hold_stream_lookup(s)) != NULL && !h->legacy) {
        /* its virtual records must reach the GPU before it goes: like a synchronisation */
        hold_collect_open(&h->vdeps, &open);
        hold_collect_open(&h->taint, &open);
        hold_release_or_wait(open.d, open.n);
        hold_materialise(h);
        for (hold_rec_t *r = hold_virt_head, *nx; r; r = nx) {
            nx = r->vnext;
            if (r->s == h) {
                prophet_hold_enter();
                hold_rec_issue_on_stream(r);
                prophet_hold_leave();
                hold_rec_issued(r);
            }
        }
        HOLD_STREAM_CHANGE(h, h->vdeps.n = h->taint.n = 0);
        hold_stream_touched(h);
        h->flags_known = 0; /* the handle may be reused for another stream */
    }
    hold_rearm();
    HOLD_UNLOCK();
    hold_depset_free(&open);
    return 0;
}

void prophet_hold_stream_created(CUstream s, unsigned flags)
{
    hold_stream_t *h;

    if (!s || prophet_hold_inside() || hold_forked)
        return;
    hold_fork_guard(); /* the lock is taken here before anything is held */
    HOLD_LOCK();
    if ((h = hold_stream_lookup(s)) != NULL || (h = hold_stream_new(s, s, 0, 0)) != NULL) {
        h->blocking = !(flags & CU_STREAM_NON_BLOCKING);
        h->flags_known = 1;
        HOLD_STREAM_CHANGE(h, h->vdeps.n = h->taint.n = 0);
        hold_stream_touched(h);
    }
    HOLD_UNLOCK();
}

/* ---- the scheduler's side (prophet_preload.h) ------------------------------------------------ */

/* Before a call on comm c is held on stream st (comm lock NOT held): every open block of another
 * communicator that st is behind is released first, and st really waits for them, so that a held
 * member never depends on an open block (no cycle between communicators). */
void prophet_hold_before_call(prophet_comm_t *c, CUstream st)
{
    hold_depset_t open = {0};
    hold_stream_t *h;
    prophet_comm_t *only = atomic_load(&hold_dep_comm);

    /* nothing of another communicator was ever held: st cannot be behind one */
    if (!prophet_hold_armed() || only == NULL || only == c || hold_forked)
        return;
    HOLD_LOCK();
    if ((h = hold_stream(st, 0)) != NULL) {
        for (int i = 0; i < h->vdeps.n; i++)
            if (h->vdeps.d[i].c != c && hold_is_open(&h->vdeps.d[i]))
                hold_dep_add(&open, h->vdeps.d[i].c, h->vdeps.d[i].gen);
        for (int i = 0; i < h->taint.n; i++)
            if (h->taint.d[i].c != c && hold_is_open(&h->taint.d[i]))
                hold_dep_add(&open, h->taint.d[i].c, h->taint.d[i].gen);
        hold_release_or_wait(open.d, open.n);
        /* dependencies on other communicators' (released) blocks become real now */
        int other = 0;
        for (int i = 0; i < h->vdeps.n; i++)
            other |= h->vdeps.d[i].c != c;
        if (other) {
            hold_depset_t mine = {0};
            for (int i = 0; i < h->vdeps.n; i++)
                if (h->vdeps.d[i].c == c)
                    hold_dep_add(&mine, c, h->vdeps.d[i].gen);
            HOLD_STREAM_CHANGE(h, {
                for (int i = h->vdeps.n; i-- > 0;)
                    if (h->vdeps.d[i].c == c)
                        hold_dep_del(&h->vdeps, i);
            });
            hold_materialise(h);
            HOLD_STREAM_CHANGE(h, {
                hold_depset_free(&h->vdeps);
                h->vdeps = mine;
            });
        }
    }
    hold_rearm();
    HOLD_UNLOCK();
    hold_depset_free(&open);
}

/* Rule 7: may a call on st join c's open block (generation gen)? Not when st is materially
 * behind it (real work on st may have read a held result). Comm lock held. */
int prophet_hold_may_join(prophet_comm_t *c, CUstream st, uint32_t gen)
{
    CUstream key, real;
    int legacy, perthread, ok = 1;
    hold_stream_t *h;

    if (!atomic_load(&hold_any_taint) || hold_forked) /* no stream materially behind a block */
        return 1;
    HOLD_LOCK();
    hold_stream_norm(st, 0, &key, &real, &legacy, &perthread);
    if ((h = hold_stream_lookup(key)) != NULL) {
        if (h->legacy || h->blocking)
            h = hold_stream(st, 0);
        for (int i = 0; h && i < h->taint.n; i++)
            if (h->taint.d[i].c == c && hold_gen_before(gen, h->taint.d[i].gen))
                ok = 0;
    }
    HOLD_UNLOCK();
    return ok;
}

/* A call was held on st in c's open block gen (its ready event was just recorded on st). */
void prophet_hold_call_held(prophet_comm_t *c, CUstream st, uint32_t gen)
{
    hold_comm_t *hc;
    hold_stream_t *h;

    if (hold_forked)
        return;
    hold_fork_guard();
    HOLD_LOCK();
    hc = hold_comm(c);
    h = hold_stream(st, 0);
    if (hc && !hc->open_gen) {
        hc->open_gen = gen;
        hc->owner = pthread_self();
        hc->stream = h ? h->key : NULL;
        hold_nopen++;
    }
    if (h) {
        HOLD_STREAM_CHANGE(h, {
            if (hold_dep_add(&h->vdeps, c, gen) != 0)
                prophet_msg(PROPHET_LOG_WARN, "out of memory: a held call's stream is not "
                                              "tracked behind it");
        });
        hold_stream_touched(h);
        h->cover_c = c;
        h->cover_gen = gen;
    }
    hold_rearm();
    HOLD_UNLOCK();
}

/* Issues virtual record r on X after block (c, gen) when nothing else holds it back. */
static void hold_rec_release(hold_rec_t *r, prophet_comm_t *c, int ok)
{
    CUresult rc = CUDA_SUCCESS;

    for (int i = 0; i < r->deps.n; i++)
        if (!hold_is_released(&r->deps.d[i]))
            return; /* still behind another open block */
    hold_taint_prune(&r->taint);
    if (ok && c->gpu.x && r->taint.n == 0) {
        /* on X, after the block: the other blocks (released), the recording stream's prefix */
        for (int i = 0; i < r->deps.n && rc == CUDA_SUCCESS; i++)
            if (r->deps.d[i].c != c)
                rc = hold_gate(c->gpu.x, &r->deps.d[i]);
        if (rc == CUDA_SUCCESS && r->sh)
            rc = prophet_cu.StreamWaitEvent(c->gpu.x, r->sh->ev, 0);
        if (rc == CUDA_SUCCESS)
            rc = prophet_cu.EventRecord(r->ev, c->gpu.x);
        if (rc == CUDA_SUCCESS) {
            hold_rec_issued(r);
            return;
        }
    }
    hold_rec_issue_on_stream(r); /* behind real gates on its own stream */
    hold_rec_issued(r);
}

/* Block gen of c was released: PROPHET_HOLD_ON_X (its generation written on X after it),
 * PROPHET_HOLD_ON_STREAM (launched on the members' stream, generation written there) or
 * PROPHET_HOLD_DROPPED (the gate word is opened here, from the host). Comm lock held, inside the
 * preload. */
void prophet_hold_block_released(prophet_comm_t *c, uint32_t gen, int how)
{
    int ok = how == PROPHET_HOLD_ON_X;
    hold_comm_t *hc;

    HOLD_LOCK();
    hc = hold_comm(c);
    if (hc && hc->open_gen) {
        hc->open_gen = 0;
        hold_nopen--;
    }
    if (hc)
        hc->released = gen;
    if (how == PROPHET_HOLD_DROPPED && c->gpu.gate_host) /* a gated stream must never hang */
        __atomic_store_n(c->gpu.gate_host, gen, __ATOMIC_RELEASE);
    /* taints on this block are over: the gates stay on the GPU (no stream with a dependency or
     * a taint: nothing to prune, and no walk over every bucket per block) */
    for (int b = 0; hold_nlive_streams > 0 && b < HOLD_STREAM_BUCKETS; b++)
        for (hold_stream_t *h = hold_streams[b]; h; h = h->next)
            HOLD_STREAM_CHANGE(h, {
                hold_taint_prune(&h->taint);
                hold_vdeps_prune(&h->vdeps);
            });
    for (hold_rec_t *r = hold_virt_head, *n; r; r = n) {
        n = r->vnext;
        for (int i = 0; i < r->deps.n; i++)
            if (r->deps.d[i].c == c) {
                hold_rec_release(r, c, ok);
                break;
            }
    }
    /* records that are not virtual but still carry a taint (none: no walk) */
    for (int b = 0; hold_nlive_recs > hold_nvirt && b < HOLD_EVENT_BUCKETS; b++)
        for (hold_rec_t *r = hold_recs[b], *n; r; r = n) {
            n = r->next;
            if (!r->virt)
                hold_rec_settle(r);
        }
    hold_rearm();
    pthread_cond_broadcast(&prophet_hold_cond);
    HOLD_UNLOCK();
}

/* ---- interprocess events (docs/completion-holding.md, "Interprocess events") -----------------
 * An event made with CU_EVENT_INTERPROCESS, or opened by cuIpcOpenEventHandle, may be waited on by
 * another process, which never sees a virtual record: its records are always real. The set of
 * such handles has its own lock (a leaf: taken under the engine lock, never the other way round),
 * and is looked up only while prophet_hold_nipc_ is nonzero. */

#define HOLD_IPC_BUCKETS 256

typedef struct hold_ipc {
    struct hold_ipc *next;
    CUevent ev;
} hold_ipc_t;

atomic_int prophet_hold_nipc_;
static pthread_mutex_t hold_ipc_lock = PTHREAD_MUTEX_INITIALIZER;
static hold_ipc_t *hold_ipcs[HOLD_IPC_BUCKETS];
/* An interprocess event could not be remembered (out of memory): every record is then real. */
static atomic_int hold_ipc_untracked;

static hold_ipc_t **hold_ipc_slot(CUevent e)
{
    hold_ipc_t **p = &hold_ipcs[hold_hash_ptr(e, HOLD_IPC_BUCKETS)];

    while (*p && (*p)->ev != e)
        p = &(*p)->next;
    return p;
}

void prophet_hold_ipc_event(CUevent e)
{
    hold_ipc_t **p, *x;

    if (!e || hold_forked) /* a forked child's engine is off: every record real */
        return;
    hold_fork_guard();
    pthread_mutex_lock(&hold_ipc_lock);
    p = hold_ipc_slot(e);
    if (!*p) {
        if ((x = calloc(1, sizeof(*x))) != NULL) {
            x->ev = e;
            *p = x;
            atomic_fetch_add(&prophet_hold_nipc_, 1);
        } else if (!atomic_exchange(&hold_ipc_untracked, 1)) {
            atomic_fetch_add(&prophet_hold_nipc_, 1); /* keeps every record looking */
            prophet_msg(PROPHET_LOG_WARN, "out of memory remembering an interprocess event: "
                                          "every event record is made real from now on");
        }
    }
    pthread_mutex_unlock(&hold_ipc_lock);
}

void prophet_hold_ipc_forget(CUevent e)
{
    hold_ipc_t **p, *x;

    if (hold_forked)
        return;
    pthread_mutex_lock(&hold_ipc_lock);
    p = hold_ipc_slot(e);
    if ((x = *p) != NULL) {
        *p = x->next;
        free(x);
        atomic_fetch_sub(&prophet_hold_nipc_, 1);
    }
    pthread_mutex_unlock(&hold_ipc_lock);
}

static int hold_ipc_has(CUevent e)
{
    int has;

    if (!atomic_load_explicit(&prophet_hold_nipc_, memory_order_relaxed))
        return 0; /* no interprocess event in the process: the common case, no lookup */
    if (atomic_load_explicit(&hold_ipc_untracked, memory_order_relaxed))
        return 1;
    pthread_mutex_lock(&hold_ipc_lock);
    has = *hold_ipc_slot(e) != NULL;
    pthread_mutex_unlock(&hold_ipc_lock);
    return has;
}

/* Adds the open blocks among `s` that this thread issued (it may release them) to `out`. Called
 * locked. */
static void hold_collect_own(const hold_depset_t *s, hold_depset_t *out)
{
    pthread_t self = pthread_self();

    for (int i = 0; i < s->n; i++) {
        hold_comm_t *hc = hold_comm(s->d[i].c);
        if (hc && hold_is_open(&s->d[i]) && pthread_equal(hc->owner, self) &&
            hold_dep_add(out, s->d[i].c, s->d[i].gen) != 0)
            prophet_msg(PROPHET_LOG_WARN, "out of memory collecting the held blocks to release");
    }
}

/* A record of interprocess event e on h (engine lock held; the driver records e after it). The
 * other process may synchronise on e, which the engine cannot see: as at a host synchronisation
 * (rule 6) the open blocks that h is behind and that this thread issued are released here, a
 * program-order point, so that no process waits for a block that only a later call of this
 * thread would close. The blocks of other threads are not waited for (a record never blocks the
 * host): h gets GPU gates on every block it is behind (rule 4; an open one then taints h and the
 * record), and the record is real, behind them. */
static void hold_ipc_record(hold_stream_t *h, CUevent e)
{
    hold_depset_t own = {0};
    hold_rec_t *r;

    hold_collect_own(&h->vdeps, &own);
    hold_collect_own(&h->taint, &own);
    hold_release_or_wait(own.d, own.n); /* drops the engine lock around each release */
    hold_depset_free(&own);
    hold_stream_prune(h);
    hold_materialise(h);
    r = hold_rec_find(e);
    if (h->taint.n > 0 && (r || (r = hold_rec_get(e)) != NULL))
        (void)hold_depset_copy(&r->taint, &h->taint); /* a real record behind a gate */
    else if (r)
        hold_rec_settle(r);
}

void prophet_hold_ipc_export(CUevent e)
{
    static atomic_int warned;
    hold_depset_t own = {0};
    hold_rec_t *r;

    if (hold_skip())
        return;
    HOLD_LOCK();
    r = hold_rec_find(e);
    if (r && r->virt) {
        /* made real as at its record (above): its own blocks released, then behind gates */
        hold_collect_own(&r->deps, &own);
        hold_collect_own(&r->taint, &own);
        hold_release_or_wait(own.d, own.n); /* a release issues it on X when nothing else does */
        hold_depset_free(&own);
        if ((r = hold_rec_find(e)) != NULL && r->virt) {
            prophet_hold_enter();
            hold_rec_issue_on_stream(r);
            prophet_hold_leave();
            hold_rec_issued(r);
        }
        if (!atomic_exchange(&warned, 1))
            prophet_msg(PROPHET_LOG_WARN,
                        "cuIpcGetEventHandle: event %p was recorded virtually behind a held "
                        "all-reduce (its creation with CU_EVENT_INTERPROCESS was not seen: an "
                        "unwrapped cuEventCreate); recorded for real now, and never virtually "
                        "again",
                        (void *)e);
    }
    hold_rearm();
    HOLD_UNLOCK();
}

/* ---- issue 37, item 3: context-wide records and waits, graph event nodes, events recorded by
 * launches, EXTERNAL flags (holding.h) ------------------------------------------------------ */

static CUevent *hold_graph_events; /* every event named by a graph event node (never shrinks) */
static int hold_graph_nevents, hold_graph_cap;

/* Makes e's record real (locked; drops the lock around releases). */
static void hold_event_make_real_locked(CUevent e)
{
    hold_depset_t open = {0};
    hold_rec_t *r = hold_rec_find(e);

    if (!r || (!r->virt && r->taint.n == 0))
        return;
    hold_collect_open(&r->deps, &open);
    hold_collect_open(&r->taint, &open);
    hold_release_or_wait(open.d, open.n); /* the releases issue the record (on X) */
    hold_depset_free(&open);
    if ((r = hold_rec_find(e)) != NULL && r->virt)
        hold_materialise(r->s); /* not issued by a release: behind gates on its own stream */
}

void prophet_hold_event_make_real(CUevent e)
{
    if (hold_skip())
        return;
    HOLD_LOCK();
    hold_event_make_real_locked(e);
    hold_rearm();
    HOLD_UNLOCK();
}

/* ---- a block that cannot run: the context traps before its gate opens --------------------------
 * (docs/completion-holding.md, "A dropped call"). A PTX kernel whose only instruction is `trap`
 * makes its context fail for good: measured on an H100 (driver 580), the work queued behind it,
 * on its stream and on every other, never runs (a gate written behind it stays shut, a consumer
 * behind that gate never runs) and every later call but cuCtxGetCurrent returns
 * CUDA_ERROR_LAUNCH_FAILED at once, synchronisations included. The module is JIT-compiled from
 * PTX (ISA 6.0, sm_50: any GPU the driver runs), once per context, at the first block that needs
 * it: nothing is loaded in a run where no call is dropped. */
static const char hold_trap_ptx[] = ".version 6.0\n"
                                    ".target sm_50\n"
                                    ".address_size 64\n"
                                    ".visible .entry prophet_trap()\n"
                                    "{\n"
                                    "\ttrap;\n"
                                    "\tret;\n"
                                    "}\n";

#define HOLD_TRAP_CTXS 16

static pthread_mutex_t hold_trap_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct hold_trap {
    CUcontext ctx;
    CUfunction fn;
} hold_trap_t;
static hold_trap_t hold_traps[HOLD_TRAP_CTXS];
static int hold_ntraps;

/* The driver's own entry points the trap needs (the wrappers' cuLaunchKernel is not wanted: this
 * is the preload's own work). */
typedef struct hold_trap_api {
    __typeof__(&cuModuleLoadData) load;
    __typeof__(&cuModuleGetFunction) get;
    __typeof__(&cuLaunchKernel) launch;
    __typeof__(&cuCtxPushCurrent) push;
    __typeof__(&cuCtxPopCurrent) pop;
} hold_trap_api_t;

static int hold_trap_resolve(hold_trap_api_t *a)
{
    void *h = prophet_cuda_handle();

    if (!h)
        return -1;
    *(void **)&a->load = prophet_dlsym_real(h, "cuModuleLoadData");
    *(void **)&a->get = prophet_dlsym_real(h, "cuModuleGetFunction");
    *(void **)&a->launch = prophet_dlsym_real(h, "cuLaunchKernel");
    *(void **)&a->push = prophet_dlsym_real(h, "cuCtxPushCurrent_v2");
    *(void **)&a->pop = prophet_dlsym_real(h, "cuCtxPopCurrent_v2");
    return a->load && a->get && a->launch && a->push && a->pop ? 0 : -1;
}

/* The trap kernel of the current context ctx, loaded at its first use. */
static CUfunction hold_trap_fn(const hold_trap_api_t *a, CUcontext ctx, CUresult *rc)
{
    CUfunction fn = NULL;
    CUmodule mod = NULL;

    pthread_mutex_lock(&hold_trap_lock);
    for (int i = 0; i < hold_ntraps && !fn; i++)
        if (hold_traps[i].ctx == ctx)
            fn = hold_traps[i].fn;
    if (!fn && (*rc = a->load(&mod, hold_trap_ptx)) == CUDA_SUCCESS &&
        (*rc = a->get(&fn, mod, "prophet_trap")) == CUDA_SUCCESS && hold_ntraps < HOLD_TRAP_CTXS)
        hold_traps[hold_ntraps++] = (hold_trap_t){ctx, fn};
    pthread_mutex_unlock(&hold_trap_lock);
    return fn;
}

/* Launches the trap on st and writes gen into c's gate word behind it. */
static CUresult hold_trap_on(const hold_trap_api_t *a, CUfunction fn, CUstream st,
                             prophet_comm_t *c, uint32_t gen)
{
    CUresult rc = a->launch(fn, 1, 1, 1, 1, 1, 1, 0, st, NULL, NULL);

    if (rc == CUDA_SUCCESS) /* never runs; if it could not even be queued, the gate stays shut */
        prophet_cu.StreamWriteValue32(st, c->gpu.gate_dev, gen, CU_STREAM_WRITE_VALUE_DEFAULT);
    return rc;
}

int prophet_hold_block_poisoned(prophet_comm_t *c, uint32_t gen)
{
    hold_trap_api_t a;
    CUfunction fn = NULL;
    CUstream fresh = NULL;
    CUcontext prev = NULL;
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    int pushed = 0;

    prophet_hold_enter();
    if (hold_trap_resolve(&a) == 0 && c->gpu.ctx && c->gpu.gate_dev &&
        (rc = a.push(c->gpu.ctx)) == CUDA_SUCCESS) {
        pushed = 1;
        fn = hold_trap_fn(&a, c->gpu.ctx, &rc);
    }
    /* on X, behind what it runs (a block NCCL is still running ends at the real Abort first);
     * else on a stream of its own */
    if (fn && (!c->gpu.x || (rc = hold_trap_on(&a, fn, c->gpu.x, c, gen)) != CUDA_SUCCESS) &&
        (rc = prophet_cu.StreamCreate(&fresh, CU_STREAM_NON_BLOCKING)) == CUDA_SUCCESS)
        rc = hold_trap_on(&a, fn, fresh, c, gen); /* the stream is left to the dying context */
    if (pushed)
        a.pop(&prev);
    prophet_hold_leave();
    if (rc == CUDA_SUCCESS) {
        prophet_msg(PROPHET_LOG_WARN,
                    "comm %lu: block generation %u cannot be known to have run: the CUDA context "
                    "is stopped (a trap: CUDA_ERROR_LAUNCH_FAILED from now on) so that no work "
                    "queued behind it reads un-reduced buffers",
                    (unsigned long)c->id, gen);
        prophet_hold_block_released(c, gen, PROPHET_HOLD_ON_STREAM);
        return 0;
    }
    prophet_msg(PROPHET_LOG_WARN,
                "comm %lu: block generation %u cannot be known to have run, and the CUDA context "
                "cannot be stopped (%s): its gate opens; work queued behind it may read "
                "un-reduced buffers",
                (unsigned long)c->id, gen, prophet_cuda_errstr(rc));
    prophet_hold_block_released(c, gen, PROPHET_HOLD_DROPPED);
    return -1;
}

/* Waits on the host until every block in s has completed on the GPU. */
static void hold_wait_complete(const hold_depset_t *s)
{
    long ns = 20 * 1000;

    for (int i = 0; i < s->n; i++)
        while (!hold_complete(&s->d[i])) {
            struct timespec ts = {0, ns};
            nanosleep(&ts, NULL);
            ns = ns < 1000 * 1000 ? 2 * ns : ns;
        }
}

void prophet_hold_ctx_record(CUevent e)
{
    hold_depset_t done = {0};
    hold_rec_t *r;

    if (hold_skip())
        return;
    prophet_hold_ctx_sync(); /* every open block released (by its thread; others waited for) */
    HOLD_LOCK();
    for (hold_comm_t *hc = hold_comm_all; hc; hc = hc->all_next)
        if (hc->released && !hold_complete(&(hold_dep_t){hc->c, hc->released}))
            hold_dep_add(&done, hc->c, hc->released);
    /* records still virtual (a release that could not issue them): behind gates on their stream */
    while (hold_virt_head) {
        hold_rec_t *v = hold_virt_head;
        hold_materialise(v->s);
        if (hold_virt_head == v) /* not issued (out of memory): do not spin */
            break;
    }
    if ((r = hold_rec_find(e)) != NULL) { /* the driver's record replaces it */
        hold_rec_unvirt(r);
        r->taint.n = 0;
        hold_rec_settle(r);
    }
    hold_rearm();
    HOLD_UNLOCK();
    hold_wait_complete(&done); /* the context's record must cover the all-reduces run on X */
    hold_depset_free(&done);
}

void prophet_hold_graph_event(CUevent e)
{
    if (!e || hold_forked || prophet_hold_inside())
        return;
    hold_fork_guard();
    HOLD_LOCK();
    int known = 0;
    for (int i = 0; i < hold_graph_nevents && !known; i++)
        known = hold_graph_events[i] == e;
    if (!known && hold_graph_nevents == hold_graph_cap) {
        int cap = hold_graph_cap ? 2 * hold_graph_cap : 16;
        CUevent *p = realloc(hold_graph_events, (size_t)cap * sizeof(*p));
        if (p) {
            hold_graph_events = p;
            hold_graph_cap = cap;
        }
    }
    if (!known && hold_graph_nevents < hold_graph_cap)
        hold_graph_events[hold_graph_nevents++] = e;
    else if (!known)
        prophet_msg(PROPHET_LOG_WARN, "out of memory: a graph's event node is not tracked");
    HOLD_UNLOCK();
}

void prophet_hold_graph_launch(CUstream s, int ptsz)
{
    if (hold_skip())
        return;
    HOLD_LOCK();
    for (int i = 0; i < hold_graph_nevents; i++) /* the lock is dropped inside: index, re-read */
        hold_event_make_real_locked(hold_graph_events[i]);
    hold_rearm();
    HOLD_UNLOCK();
    hold_work(s, ptsz, 1);
}

void prophet_hold_event_recorded(CUevent e, CUstream s, int ptsz)
{
    hold_stream_t *h;
    hold_rec_t *r;

    if (!e || hold_skip())
        return;
    HOLD_LOCK();
    h = hold_stream(s, ptsz);
    if ((r = hold_rec_find(e)) != NULL) { /* replaced by the launch's record */
        hold_rec_unvirt(r);
        r->taint.n = 0;
    }
    if (h && h->taint.n > 0 && (r = r ? r : hold_rec_get(e)) != NULL)
        (void)hold_depset_copy(&r->taint, &h->taint); /* behind a gate on an open block */
    if (r)
        hold_rec_settle(r);
    hold_rearm();
    HOLD_UNLOCK();
}

void prophet_hold_record_external(CUevent e, CUstream s, int ptsz)
{
    (void)e; /* a graph event already (cuda_hooks.c, FIRST_RECORD) */
    if (!hold_skip())
        hold_work(s, ptsz, 1);
}

void prophet_hold_wait_external(CUevent e)
{
    prophet_hold_event_make_real(e); /* a graph event already (cuda_hooks.c, FIRST_WAIT) */
}
