/* Internal state of the emulated CUDA driver (libcuda.so.1 test double).
 * Nothing here is exported: the library's version script keeps only cu* and emu[A-Z]* global. */
#ifndef EMU_INTERNAL_H
#define EMU_INTERNAL_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "emu_cuda.h"

#define EMU_MAX_DEVICES 64

/* First statement of an entry point that EMU_FAULT can make fail (emu_fault.c). */
#define EMU_FAULT_POINT(name)                                                                      \
    do {                                                                                           \
        int emu_fault_code_ = CUDA_ERROR_UNKNOWN;                                                  \
        if (emuFaultHit(name, &emu_fault_code_))                                                   \
            return (CUresult)emu_fault_code_;                                                      \
    } while (0)

/* ---- waiting (emu_wait.c) ---------------------------------------------------------------- */
typedef int (*emu_pred_fn)(void *arg);
uint64_t emu_now_ns(void);
void emu_sleep_until_ns(uint64_t deadline_ns);
/* Wake every waiter so that it re-checks its predicate. Call after any state change that a
 * waiter may be waiting for (op done, mark fired, value written). */
void emu_notify(void);
/* Block until pred(arg) is true. poll != 0: the condition may be changed by plain host writes
 * that call no emu function, so re-check at least every poll interval (20 us doubling to the cap).
 * Returns early once a kernel trapped (emu_sticky() != 0): nothing of the context runs any more,
 * so no wait may hang on it; the caller returns the sticky error (host) or drops its op (stream).
 */
void emu_wait(emu_pred_fn pred, void *arg, int poll);

/* ---- pointer sets (emu_registry.c) ------------------------------------------------------- */
struct emu_ptrset {
    void **slots;
    size_t cap, used, live;
};
int emu_ptrset_add(struct emu_ptrset *s, void *p);
int emu_ptrset_has(const struct emu_ptrset *s, const void *p);
int emu_ptrset_del(struct emu_ptrset *s, const void *p);

/* EMU_MEM_IPC: another process's device memory, mapped by cuIpcOpenMemHandle (emu_ipc.c). */
enum emu_mem_kind { EMU_MEM_DEVICE = 1, EMU_MEM_HOST = 2, EMU_MEM_REGISTERED = 3, EMU_MEM_IPC = 4 };
struct emu_alloc {
    uintptr_t base;
    size_t size;
    enum emu_mem_kind kind;
    unsigned flags;
    struct CUctx_st *ctx;
    unsigned long long id;
    size_t map_size; /* a page mapping's length (IPC memory, EMU_CUDA_IPC_MEM device memory); 0:
                      * heap memory */
    int ipc_fd;      /* device memory exported by cuIpcGetMemHandle: its memfd (-1: not exported) */
};
struct emu_alloc_table {
    struct emu_alloc *v;
    size_t n, cap;
};
static inline int emu_mem_is_device(enum emu_mem_kind k)
{
    return k == EMU_MEM_DEVICE || k == EMU_MEM_IPC;
}
int emu_alloc_insert(struct emu_alloc_table *t, const struct emu_alloc *a);
/* Registers an allocation of the calling context (emu_mem.c); map_size: its mapping's length. */
CUresult emu_mem_add(void *p, size_t size, enum emu_mem_kind kind, unsigned flags,
                     struct CUctx_st *ctx, size_t map_size);
/* Removes the allocation that starts exactly at base and has one of the kinds in kind_mask
 * (bits 1 << kind); a copy of it in *out when given. CUDA_ERROR_INVALID_VALUE when none. */
CUresult emu_mem_remove(uintptr_t base, unsigned kind_mask, struct emu_alloc *out);
/* Index of the allocation containing addr, or -1. */
long emu_alloc_find(const struct emu_alloc_table *t, uintptr_t addr);
void emu_alloc_remove_at(struct emu_alloc_table *t, size_t i);

/* ---- global state (emu_init.c) ------------------------------------------------------------ */
#define EMU_QUEUES_MAX 32 /* the most CUDA_DEVICE_MAX_CONNECTIONS the real driver takes */

struct emu_global {
    pthread_mutex_t lock; /* guards everything below except the atomics */
    atomic_int initialized;
    int ndev;
    struct emu_ptrset ctxs, streams, events, graphs;
    struct emu_alloc_table allocs;
    struct CUctx_st *primary[EMU_MAX_DEVICES];
    struct CUctx_st *all_ctxs; /* every context ever made (never freed) */
    atomic_ullong next_id;     /* stream, context, capture and buffer ids */
    atomic_int captures;       /* captures under way that did not begin in RELAXED mode */
    unsigned poll_cap_us;
    int legacy_sync;    /* EMU_CUDA_LEGACY_SYNC, default 1 */
    int inline_record;  /* EMU_CUDA_INLINE_RECORD, default 1: a record on an idle stream fires
                         * in the caller, with no hand-off to the stream thread */
    unsigned record_ns; /* EMU_CUDA_RECORD_NS: host time of a record on an idle stream */
    unsigned record_notiming_ns; /* EMU_CUDA_RECORD_NOTIMING_NS: the same, timing disabled */
    unsigned queue_depth; /* EMU_CUDA_QUEUE_DEPTH, default 1024, 0 = unbounded: most operations a
                           * stream holds pending before a launch blocks the host (push buffer) */
    int event_reuse;      /* EMU_CUDA_EVENT_REUSE, default 0: the handle of the event destroyed last
                           * is the next cuEventCreate's, as a real driver's pool hands it out */
    int ipc_mem;       /* EMU_CUDA_IPC_MEM, default 0: device memory is made of page mappings, which
                        * cuIpcGetMemHandle can share (else heap memory, and it answers NOT_SUPPORTED) */
    atomic_int sticky; /* a kernel trapped: the sticky error every later call returns (0: none);
                        * process-wide (emu_module.c, "A trap") */
    /* CUDA_DEVICE_MAX_CONNECTIONS (or EMU_CUDA_MAX_CONNECTIONS) = K: K hardware queues, streams
     * mapped onto them in turn at creation (emu_stream.c); 0 (unset): one queue per stream */
    int nqueues;
    int free_sync; /* EMU_CUDA_FREE_SYNC, default 1: cuMemFree and cuMemFreeHost first wait for
                    * the context's work, as the real driver's do (emu_mem.c) */
};
extern struct emu_global emu_g;

unsigned long long emu_next_id(void);
/* Waits for every stream of the current context (cuCtxSynchronize, and the implicit
 * synchronisation of a free: emu_mem.c). */
CUresult emu_ctx_sync_current(void);
/* CUDA_SUCCESS when cuInit has run in this process; after a trap, the sticky error. */
CUresult emu_check_init(void);
/* cuInit has run (CUDA_SUCCESS) or not, whatever a trap did (cuCtxGetCurrent keeps working). */
CUresult emu_check_init_only(void);
/* The sticky error of a trapped kernel (CUDA_SUCCESS: none); sets it once (emu_module.c). */
CUresult emu_sticky(void);
void emu_sticky_set(CUresult rc);
/* emu_check_init, then CUDA_ERROR_INVALID_DEVICE unless 0 <= dev < device count. */
CUresult emu_check_dev(CUdevice dev);

/* ---- interprocess events (emu_ipc.c) ------------------------------------------------------
 * An event made with CU_EVENT_INTERPROCESS keeps its records' progress in a page of shared memory
 * (a memfd), which cuIpcOpenEventHandle maps in another process: `recorded` counts the records
 * issued (by any process), `fired` is the number of the latest one that fired. A query, host
 * synchronisation or stream wait on such an event, in either process, is for the record that was
 * the latest when it was made: fired >= that number (records fire in the order they were issued,
 * which holds for records on one stream). */
struct emu_ipc_shared {
    uint64_t magic;
    _Atomic uint64_t recorded, fired;
};
struct emu_ipc_ev {
    atomic_int refs; /* the event, and each record and wait in flight */
    int fd;          /* the exporter's memfd (-1 in an importing process) */
    struct emu_ipc_shared *sh;
};
/* A new shared page for an event created with CU_EVENT_INTERPROCESS; NULL on failure. */
struct emu_ipc_ev *emu_ipc_ev_new(void);
void emu_ipc_ev_get(struct emu_ipc_ev *x);
void emu_ipc_ev_put(struct emu_ipc_ev *x);
/* Record number n (1-based) of the event fired, or is dropped (failed or captured): fired >= n. */
void emu_ipc_ev_fire(struct emu_ipc_ev *x, uint64_t n);
/* Whether record n has fired (every record up to n: see above). */
int emu_ipc_ev_done(struct emu_ipc_ev *x, uint64_t n);
/* Blocks until emu_ipc_ev_done(x, n): polled, the other process's stream threads fire it. */
void emu_ipc_ev_wait(struct emu_ipc_ev *x, uint64_t n);
/* cuStreamWaitEvent on an interprocess event: later work on s waits for its latest record now
 * (nothing is queued when that one fired already, or none was made). */
struct CUstream_st;
CUresult emu_ipc_wait_op(struct CUstream_st *s, struct emu_ipc_ev *x);
/* With EMU_CUDA_IPC_MEM=1 device memory is an anonymous private mapping (emu_mem.c), which
 * cuIpcGetMemHandle moves into a memfd mapped at the same address (emu_ipc.c). Called by cuMemFree
 * before the mapping is removed: the memfd is closed. */
void emu_ipc_mem_release(const struct emu_alloc *a);

/* ---- operations ------------------------------------------------------------------------- */
/* A mark is one recording of an event: it fires when its stream reaches it. */
struct emu_mark {
    atomic_int refs;
    atomic_int done;
    atomic_ullong t_ns;
    struct emu_ipc_ev *ipc; /* an interprocess event's record (referenced): fires record ipc_seq */
    uint64_t ipc_seq;
};
struct emu_mark *emu_mark_new(void);
void emu_mark_put(struct emu_mark *m);

enum emu_op_kind {
    EMU_OP_COPY,
    EMU_OP_SET8,
    EMU_OP_SET32,
    EMU_OP_HOST_FN,
    EMU_OP_CALLBACK,
    EMU_OP_KERNEL,
    EMU_OP_RECORD,
    EMU_OP_WAIT_EVENT,
    EMU_OP_WAIT_VALUE,
    EMU_OP_WRITE_VALUE,
    EMU_OP_WAIT_SEQ, /* implicit legacy-stream synchronisation */
    EMU_OP_LAUNCH,   /* cuLaunchKernel: fn(params) over the copied parameters */
    EMU_OP_WAIT_IPC, /* cuStreamWaitEvent on an interprocess event: until record seq fired */
};

struct emu_op {
    struct emu_op *next;
    enum emu_op_kind kind;
    uint64_t ticket; /* its place in its stream's hardware queue (1, 2, ...); 0: no queues */
    atomic_ullong *qstarted; /* that queue's count of dispatched operations */
    union {
        struct {
            void *dst;
            const void *src;
            size_t n;
        } copy;
        struct {
            void *dst;
            uint32_t val;
            size_t n;
        } set;
        struct {
            CUhostFn fn;
            void *arg;
        } host;
        struct {
            CUstreamCallback fn;
            void *arg;
            CUstream handle;
        } cb;
        struct {
            void (*fn)(void *);
            void *arg;
            uint64_t ns;
        } kernel;
        struct {
            void (*fn)(void **params);
            void **params; /* one block: the pointer array, then the copied values; owned */
        } launch;
        struct {
            struct emu_mark *mark;
            int timing; /* a record of an event with timing (EMU_CUDA_RECORD_NS applies) */
        } mark;
        struct {
            struct CUstream_st *stream; /* referenced */
            uint64_t seq;
        } seqw;
        struct {
            uint32_t *addr;
            uint32_t val;
            unsigned flags;
        } value;
        struct {
            struct emu_ipc_ev *ipc; /* referenced */
            uint64_t seq;
        } ipcw;
    } u;
};

struct emu_op *emu_op_new(enum emu_op_kind kind);
void emu_op_free(struct emu_op *op);
void emu_op_run(struct emu_op *op);
int emu_value_satisfied(uint32_t cur, uint32_t val, unsigned flags);

/* ---- objects ------------------------------------------------------------------------------ */
struct CUctx_st {
    CUdevice dev;
    unsigned flags;
    int primary;
    int retains;   /* primary only, under emu_g.lock */
    int destroyed; /* under emu_g.lock */
    unsigned long long id;
    struct CUstream_st *def;     /* the NULL / legacy / per-thread stream */
    struct CUstream_st *streams; /* user streams, under emu_g.lock */
    struct CUstream_st *evs;     /* cuCtxRecordEvent's stream, made at its first call */
    struct CUctx_st *all_next;
    /* the device's hardware queues (emu_g.nqueues > 0; emu_stream.c) */
    atomic_uint next_queue;
    atomic_ullong qtickets[EMU_QUEUES_MAX]; /* operations issued into each queue */
    atomic_ullong qstarted[EMU_QUEUES_MAX]; /* ... of them dispatched, in issue order */
};

struct emu_gnode; /* a node of a graph built with cuGraphAdd*Node (emu_graph_exec.c) */
struct CUgraph_st {
    struct emu_op *head, *tail;
    size_t nops;
    unsigned long long capture_id;
    struct emu_gnode *nodes, *last; /* built graphs: nodes in the order added */
};

struct CUstream_st {
    struct CUctx_st *ctx;
    int queue; /* its hardware queue (emu_g.nqueues > 0) */
    unsigned flags;
    int priority;
    int is_default;
    unsigned long long id;
    atomic_int refs;
    pthread_mutex_t lock; /* guards queue, thread, capture */
    pthread_cond_t cond;
    struct emu_op *head, *tail;
    uint64_t submitted;
    atomic_ullong done;      /* operations finished, internal ones included */
    uint64_t user_submitted; /* operations of the caller (not internal waits) */
    atomic_ullong executed;  /* of those, finished */
    int thread_started;
    int stopping;
    pthread_t thread;
    CUstreamCaptureStatus cap_status;
    CUstreamCaptureMode cap_mode; /* the mode the capture began with */
    pthread_t cap_thread;         /* the thread that began it */
    unsigned long long cap_id;
    struct CUgraph_st *cap_graph;
    struct CUstream_st *ctx_next; /* under emu_g.lock */
};

struct CUevent_st {
    unsigned flags;
    atomic_int refs;
    pthread_mutex_t lock;
    struct emu_mark *last;  /* most recent record, NULL if never recorded */
    struct emu_ipc_ev *ipc; /* CU_EVENT_INTERPROCESS, or opened by cuIpcOpenEventHandle */
};

/* events (emu_event.c) */
/* Resolves a handle and takes a reference (CUDA_ERROR_INVALID_HANDLE when unknown). */
CUresult emu_event_get(CUevent h, struct CUevent_st **out);
void emu_event_put(struct CUevent_st *e);
/* A new registered event; it takes over the reference `ipc` (may be NULL). */
CUresult emu_event_new(unsigned flags, struct emu_ipc_ev *ipc, CUevent *out);

/* contexts (emu_ctx.c) */
/* Current context of the calling thread, or NULL (INVALID_CONTEXT) when none is valid. */
CUresult emu_current_ctx(struct CUctx_st **out);

/* streams (emu_stream.c) */
struct CUstream_st *emu_stream_alloc(struct CUctx_st *ctx, unsigned flags, int priority,
                                     int is_default);
/* Resolve a handle (0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD mean the current context's
 * default stream) and take a reference. */
CUresult emu_stream_get(CUstream h, struct CUstream_st **out);
void emu_stream_put(struct CUstream_st *s);
/* Queue op on s (or record it into the graph while capturing). Takes ownership of op on
 * success. *seq (optional) gets the op's position, 0 when captured. First waits for room in the
 * stream's queue (emu_stream_wait_room). */
CUresult emu_stream_submit(struct CUstream_st *s, struct emu_op *op, uint64_t *seq);
/* emu_stream_submit without the wait for room: for a caller that waited already and holds a lock
 * that the stream's work may need (an event's, while recording it). */
CUresult emu_stream_submit_now(struct CUstream_st *s, struct emu_op *op, uint64_t *seq);
/* The bounded queue (EMU_CUDA_QUEUE_DEPTH = D, a real driver's push buffer): blocks the calling
 * host thread while s holds D or more pending operations (queued or running, internal waits not
 * counted), until it finishes one. Never blocks a stream's own thread (a host function or kernel
 * that launches work), nor for a stream that is being captured or destroyed. Call with no lock
 * held. Threads that launch onto one stream at once may each pass with the last free slot. */
void emu_stream_wait_room(struct CUstream_st *s);
/* Drain the queue and join the stream's thread. */
void emu_stream_shutdown(struct CUstream_st *s);
void emu_stream_wait_seq(struct CUstream_st *s, uint64_t seq);
/* Wait for everything submitted so far (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED while capturing). */
CUresult emu_stream_sync(struct CUstream_st *s);
/* Enqueue op on handle h and wait for it when sync != 0 (used by the synchronous copies). */
CUresult emu_submit_to(CUstream h, struct emu_op *op, int sync);
/* Stream capture's interaction modes (cuThreadExchangeStreamCaptureMode), called first by the
 * "potentially unsafe" entry points modelled here (event and stream query and synchronize, context
 * synchronize, device and pinned host allocation). As the driver does: a thread in GLOBAL mode (the
 * default) may not make them while another thread captures in GLOBAL mode, nor a thread in GLOBAL
 * or THREAD_LOCAL mode while it captures itself (a capture not begun in RELAXED mode); a RELAXED
 * thread may. A refused call invalidates the captures that forbade it and returns
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
CUresult emu_capture_unsafe_call(void);

/* events (emu_event.c): records hEvent (a checked handle) on s, which need not be a registered
 * stream (a context's record stream, emu_ctx_event.c). */
CUresult emu_event_record_to(CUevent hEvent, struct CUstream_st *s, unsigned flags);
/* A checked event handle, referenced (emu_event_unref drops it). */
/* Later work on s waits for hEvent's (a checked handle) latest record. */
CUresult emu_stream_wait_event_to(struct CUstream_st *s, CUevent hEvent);
CUresult emu_event_ref(CUevent h, struct CUevent_st **out);
void emu_event_unref(struct CUevent_st *e);
/* Prepends to s's queue a wait for the work already submitted to every stream of s's context
 * (the default stream and the user streams; emu_stream.c): cuCtxRecordEvent. */
CUresult emu_stream_wait_ctx(struct CUstream_st *s);

/* contexts (emu_ctx.c): whether ctx is a live context */
int emu_ctx_is_live(struct CUctx_st *ctx);

/* graphs (emu_graph.c) */
struct CUgraph_st *emu_graph_new(unsigned long long capture_id);
void emu_graph_free(struct CUgraph_st *g);

/* fork support (emu_init.c) */
void emu_reset_after_fork(void);
void emu_wait_reset_after_fork(void);

#endif
