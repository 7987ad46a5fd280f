/* The holding engine's private header (holding/ only: holding.h is the wing's interface, and
 * nothing outside holding/ includes this file). It keeps docs/completion-holding.md, "State": the
 * types of a block, a set of blocks, a stream, a shadow, an event record and a communicator, the
 * engine lock, and the tables behind it (hold_tables.c).
 *
 * The engine, by concern (each file's opening comment names the part of the contract it keeps):
 *   hold_tables.c          the state: comm table, dependency sets, event pool, stream and record
 *                          tables, the fork guard and arming ("State"; "Process and scale limits")
 *   hold_gates.c           making dependencies real: GPU gates (on released blocks only: the
 *                          hardware queues), issuing virtual records, materialising a stream,
 *                          release-or-wait on the host (H4, H6, H8; "Rank consistency")
 *   hold_enqueue.c         an event record, a stream wait, real work (H2, H3, H4)
 *   hold_sync.c            queries and polls, elapsed time, host synchronisations, frees,
 *                          destroys, stream creation (H5, H6, H8, H11; "Rank-local host events")
 *   hold_blocks.c          the per-communicator engine's side: before a call, joining, a held call,
 *                          a released block (H1, H7, H8)
 *   hold_special_events.c  interprocess events, graph event nodes, context-wide records and waits,
 *                          EXTERNAL records and waits ("Interprocess events"; "Events ordered
 *                          out of the engine's sight")
 *   hold_event_set.c       a set of event handles: the interprocess events and the graph events
 *                          (the same two sections)
 *   hold_trap.c            the trap that stops a context whose held block was dropped ("A dropped
 *                          call")
 *
 * The holding engine (docs/completion-holding.md) is what the CUDA driver wrappers do while an
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
 * Locking: one mutex (prophet_hold_engine.lock), taken only on the slow path; lock order is comm
 * lock then engine lock. Releases (which need the comm lock) are done after dropping the engine
 * lock. prophet_hold_armed_ is nonzero while a block is open or a virtual record, a stream
 * dependency or a taint is live. More locks are leaves (no other lock is taken while one is held):
 * each event set's (hold_event_set.h: the interprocess events, the graph events; taken under the
 * engine lock, never the other way round) and the trap kernels' table's (hold_trap.c). */
#ifndef PROPHET_HOLD_TABLES_H
#define PROPHET_HOLD_TABLES_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "holding/holding.h"
#include "thread_local.h"

#define HOLD_STREAM_BUCKETS 256
#define HOLD_EVENT_BUCKETS 1024
#define HOLD_COMM_BUCKETS 64
#define HOLD_RANGES_MAX 128 /* two buffers for each of a block's 64 members */

typedef struct hold_dep {
    prophet_comm_t *c;
    uint32_t gen;
} hold_dep_t;

/* A set of blocks, one entry per communicator: grows without bound (heap; d owned by the set,
 * copied with prophet_hold_depset_copy, freed with prophet_hold_depset_free). */
typedef struct hold_depset {
    int n, cap;
    hold_dep_t *d;
} hold_depset_t;

typedef struct hold_shadow {
    CUevent ev;
    int refs;
    hold_depset_t taint; /* open blocks the stream was materially behind when it was recorded */
} hold_shadow_t;

typedef struct prophet_hold_stream {
    struct prophet_hold_stream *next;
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

typedef struct prophet_hold_comm {
    struct prophet_hold_comm *next, *all_next; /* hash chain; list of every comm ever seen */
    prophet_comm_t *c;
    uint32_t open_gen; /* generation of the open block, 0 when none */
    pthread_t owner;
    CUstream stream;   /* normalised key of the open block's members' stream */
    uint32_t released; /* generation of the last released block */
    int foreign_logged;
    /* the open block's members' buffers, [lo, hi) each: a free of memory that holds one
     * releases the block (hold_sync.c); nrange > HOLD_RANGES_MAX: not all kept (any free does) */
    int nrange;
    uintptr_t range[HOLD_RANGES_MAX][2];
} hold_comm_t;

/* The engine's state in one object: the engine lock, and every table and count behind it. A
 * forked child drops it whole in one assignment (hold_tables.c, hold_atfork_child). Outside it:
 * what the wrappers read on their fast path (holding.h: prophet_hold_armed_, the per-thread depth,
 * prophet_capture_seen_), per-thread state (this thread's default-stream key, hold_sync.c's poll
 * detection), and the tables of the leaf locks (hold_event_set.h's sets, hold_trap.c's kernels),
 * which a forked child never reaches. */
typedef struct prophet_hold_engine {
    pthread_mutex_t lock; /* the engine lock (HOLD_LOCK); order: comm lock, then this */
    pthread_cond_t cond;  /* broadcast at each release (hold_blocks.c) */
    /* the tables, under the engine lock */
    hold_stream_t *streams[HOLD_STREAM_BUCKETS];
    hold_rec_t *recs[HOLD_EVENT_BUCKETS];
    hold_rec_t *virt_head;                 /* list of virtual records */
    hold_comm_t *comms[HOLD_COMM_BUCKETS]; /* every comm seen, never freed: no limit */
    hold_comm_t *comm_all;                 /* every comm ever seen */
    CUevent *pool;                         /* the engine's own events (shadows), idle */
    int pool_n, pool_cap;
    int nopen, nvirt, nlive_recs, nlive_streams; /* what keeps the engine armed (rearm) */
    int ntainted;                                /* streams with a taint */
    /* a forked child: the engine is off for good (set in the child, read without the lock) */
    int forked;
    /* Lock-free answers for the scheduler's per-call questions (written under the engine lock,
     * read without it by the thread that issues the calls; what another thread did first is seen
     * through the synchronisation that ordered it first): the only communicator ever named in a
     * dependency set (NULL: none yet; HOLD_MANY: several), and whether any stream is materially
     * behind an open block (ntainted > 0, kept in HOLD_STREAM_CHANGE). */
    prophet_comm_t *_Atomic dep_comm;
    atomic_int any_taint;
} prophet_hold_engine_t;
#define HOLD_MANY ((prophet_comm_t *)(uintptr_t)1)

extern prophet_hold_engine_t prophet_hold_engine;

/* The engine's own CUDA calls pass through the wrappers: it counts as the preload's code. */
#define HOLD_LOCK()                                                                                \
    do {                                                                                           \
        pthread_mutex_lock(&prophet_hold_engine.lock);                                             \
        prophet_hold_enter();                                                                      \
    } while (0)
#define HOLD_UNLOCK()                                                                              \
    do {                                                                                           \
        prophet_hold_leave();                                                                      \
        pthread_mutex_unlock(&prophet_hold_engine.lock);                                           \
    } while (0)

/* Keeps the count of streams with dependencies in step (call before and after a change). */
#define HOLD_STREAM_CHANGE(s, ...)                                                                 \
    do {                                                                                           \
        int was_ = prophet_hold_stream_live(s), tainted_ = (s)->taint.n > 0;                       \
        __VA_ARGS__;                                                                               \
        prophet_hold_engine.nlive_streams += prophet_hold_stream_live(s) - was_;                   \
        if (((s)->taint.n > 0) != tainted_) {                                                      \
            prophet_hold_engine.ntainted += (s)->taint.n > 0 ? 1 : -1;                             \
            atomic_store(&prophet_hold_engine.any_taint, prophet_hold_engine.ntainted > 0);        \
        }                                                                                          \
    } while (0)

/* Fork and arming. */
void prophet_hold_fork_guard(void);
void prophet_hold_rearm(void);
int prophet_hold_skip(void);
/* The same test for a query, which leaves this thread's poll detection running (hold_sync.c). */
int prophet_hold_skip_query(void);
/* Engine entries of this thread other than queries (a poll is queries with nothing between). */
extern PROPHET_TLS unsigned long prophet_hold_entries_;
unsigned prophet_hold_hash_ptr(const void *p, unsigned n);
/* Communicators and blocks. */
hold_comm_t *prophet_hold_comm(prophet_comm_t *c);
int prophet_hold_gen_before(uint32_t a, uint32_t b);
int prophet_hold_complete(const hold_dep_t *d);
int prophet_hold_is_open(const hold_dep_t *d);
int prophet_hold_is_released(const hold_dep_t *d);
/* Dependency sets. */
int prophet_hold_dep_add(hold_depset_t *s, prophet_comm_t *c, uint32_t g);
void prophet_hold_dep_del(hold_depset_t *s, int i);
int prophet_hold_depset_copy(hold_depset_t *dst, const hold_depset_t *src);
void prophet_hold_depset_free(hold_depset_t *s);
int prophet_hold_dep_has_open(const hold_depset_t *s);
void prophet_hold_taint_prune(hold_depset_t *s);
void prophet_hold_vdeps_prune(hold_depset_t *s);
/* Engine events (shadows). */
CUevent prophet_hold_event_get(void);
void prophet_hold_event_put(CUevent e);
/* Streams. */
int prophet_hold_stream_live(const hold_stream_t *s);
void prophet_hold_stream_prune(hold_stream_t *h);
void prophet_hold_stream_norm(CUstream s, int ptsz, CUstream *key, CUstream *real, int *legacy,
                              int *perthread);
hold_stream_t *prophet_hold_stream_lookup(CUstream key);
hold_stream_t *prophet_hold_stream_new(CUstream key, CUstream real, int legacy, int perthread);
hold_stream_t *prophet_hold_stream(CUstream s, int ptsz);
void prophet_hold_stream_free(hold_stream_t *h);
void prophet_hold_stream_touched(hold_stream_t *h);
int prophet_hold_covered(const hold_stream_t *h);
/* Records. */
hold_rec_t *prophet_hold_rec_find(CUevent e);
hold_rec_t *prophet_hold_rec_get(CUevent e);
void prophet_hold_rec_virt(hold_rec_t *r);
void prophet_hold_rec_unvirt(hold_rec_t *r);
void prophet_hold_rec_free(hold_rec_t *r);
void prophet_hold_rec_settle(hold_rec_t *r);

#endif
