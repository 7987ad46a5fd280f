/* The CUDA driver entry points that record, wait on, query or synchronise events and streams, and
 * those that enqueue work on a stream (cuda_hook_table.h): exported wrappers with the driver's
 * exact names and prototypes (an entry-point file, like interpose_*.c). docs/design.md,
 * "Interception of the CUDA driver".
 *
 * A wrapper's fast path is one relaxed atomic load (prophet_hold_armed(): nothing held anywhere)
 * and the driver call. Otherwise it asks the holding engine (holding.h) what its kind requires,
 * and calls the driver unless the engine handled the call; the driver call itself runs "inside"
 * (prophet_hold_enter/leave), so that a driver forwarding one entry point to another is not seen
 * twice. Stream creation and interprocess events are told to the engine whether or not anything
 * is held.
 *
 * The driver's own functions are resolved lazily, per entry: from the answer that handed the
 * wrapper out (dlsym of the driver's handle, cuGetProcAddress), else the next definition after this
 * library (a program linked to libcuda.so.1), else cuda_driver.c's handle of PROPHET_CUDA_LIB. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "holding/holding.h"
#include "cuda_api/cuda_hooks.h"
#include "real_libs/cuda_driver.h"
#include "cuda_api/cuda_hook_names.h"
#include "real_libs/dlsym_real.h"
#include "symbol_export.h"
#include "process/init.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h"
#define PROPHET_CUDA_HOOK_UNDEF /* the wrappers define cuda.h's renamed names themselves */
#include "cuda_hook_table.h"

/* the deprecated launches (cuLaunch, cuLaunchGrid, ...) are wrapped too */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define PROPHET_CUHOOK_DECLARE(sym, proc, kind, ptsz, cur, params, args, a, b, c)                  \
    typedef CUresult(*prophet_cuhook_fn_##sym) params;                                             \
    PROPHET_EXPORT CUresult sym params;
PROPHET_CUDA_HOOKS(PROPHET_CUHOOK_DECLARE)
#undef PROPHET_CUHOOK_DECLARE

static void *const prophet_cuhook_wrapper[PROPHET_CUHOOK_COUNT] = {
#define PROPHET_CUHOOK_ADDR(sym, ...) (void *)&sym,
    PROPHET_CUDA_HOOKS(PROPHET_CUHOOK_ADDR)
#undef PROPHET_CUHOOK_ADDR
};

static void *_Atomic prophet_cuhook_real_fn[PROPHET_CUHOOK_COUNT];
static atomic_int prophet_cuhook_warned[PROPHET_CUHOOK_COUNT];
static atomic_int prophet_cuhook_abi_warned[PROPHET_CUHOOK_COUNT]; /* by the name's plain entry */

/* prophet_cfg (PROPHET_DEBUG, PROPHET_CUDA_LIB): a process reaches the driver before NCCL, whose
 * first call runs the rest of prophet_init. */
static void prophet_cuhook_init(void)
{
    prophet_init_config();
}

static int prophet_cuhook_is_wrapper(const void *p)
{
    for (int i = 0; i < PROPHET_CUHOOK_COUNT; i++)
        if (prophet_cuhook_wrapper[i] == p)
            return 1;
    return 0;
}

/* The first real function found for an entry stays. */
static void *prophet_cuhook_set_real(int i, void *p)
{
    void *expected = NULL;

    if (!atomic_compare_exchange_strong(&prophet_cuhook_real_fn[i], &expected, p))
        return expected;
    return p;
}

static void *prophet_cuhook_resolve(int i)
{
    const char *name = prophet_cuhook_name(i);
    void *p = atomic_load_explicit(&prophet_cuhook_real_fn[i], memory_order_acquire);
    void *h;

    if (p)
        return p;
    p = prophet_dlsym_real(RTLD_NEXT, name);
    if (!p) {
        prophet_cuhook_init();
        h = prophet_cuda_handle();
        p = h ? prophet_dlsym_real(h, name) : NULL;
    }
    if (!p || prophet_cuhook_is_wrapper(p))
        return NULL;
    return prophet_cuhook_set_real(i, p);
}

static inline void *prophet_cuhook_real(int i)
{
    void *p = atomic_load_explicit(&prophet_cuhook_real_fn[i], memory_order_relaxed);
    return p ? p : prophet_cuhook_resolve(i);
}

static CUresult prophet_cuhook_missing(int i)
{
    prophet_cuhook_init();
    if (!atomic_exchange(&prophet_cuhook_warned[i], 1))
        prophet_msg(PROPHET_LOG_WARN, "%s is not in the CUDA driver: CUDA_ERROR_NOT_FOUND",
                    prophet_cuhook_name(i));
    return CUDA_ERROR_NOT_FOUND;
}

void *prophet_cuhook_dlsym(int i, void *found)
{
    const char *how = "driver's";

    if (!found)
        return NULL;
    prophet_cuhook_init();
    if (prophet_cfg.disable) /* PROPHET_DISABLE=1: the driver's own function, or none */
        return found == prophet_cuhook_wrapper[i] ? prophet_cuhook_resolve(i) : found;
    if (found == prophet_cuhook_wrapper[i]) {
        /* the lookup found this library's export: hand it out only if a driver has the name */
        how = "next";
        if (!prophet_cuhook_resolve(i)) {
            prophet_msg(PROPHET_LOG_TRACE, "dlsym(%s): not in the CUDA driver",
                        prophet_cuhook_name(i));
            return NULL;
        }
    } else {
        prophet_cuhook_set_real(i, found);
    }
    prophet_msg(PROPHET_LOG_TRACE, "dlsym(%s): wrapper (%s symbol)", prophet_cuhook_name(i), how);
    return prophet_cuhook_wrapper[i];
}

/* cuGetProcAddress answered `p`, which no exported symbol of the table names, for a wrapped
 * `symbol` at `version`: entry i is what cuda.h maps the name to. Its wrapper only when `version`
 * is known to get entry i's ABI; else the driver's pointer, unwrapped (its calls bypass the holding
 * engine), with one WARN per name. */
static void *prophet_cuhook_procaddr_unnamed(const char *symbol, void *p, int version, int i)
{
    int w = prophet_cuhook_find_current(symbol, 0);

    if (prophet_cuhook_abi_matches(i, version))
        return prophet_cuhook_wrapper[i];
    if (w < 0)
        w = i;
    if (!atomic_exchange(&prophet_cuhook_abi_warned[w], 1))
        prophet_msg(PROPHET_LOG_WARN,
                    "cuGetProcAddress(%s, version %d): the driver answered with no symbol the "
                    "preload knows, and this cuda.h (CUDA %d) does not know that %s has the ABI "
                    "of %s at that version: handing out the driver's function unwrapped (its "
                    "calls are not seen by the holding engine)",
                    symbol, version, PROPHET_CUDA_HOOK_HEADER_VERSION, symbol,
                    prophet_cuhook_name(i));
    return p;
}

/* cuGetProcAddress answered `p` for `symbol`: the wrapper of the exported symbol at p (the flavour
 * and version the driver chose), or, when p is none of the driver's exports, the wrapper of the
 * symbol cuda.h maps the name to in the flavour asked if `version` is known to get its ABI (else p
 * unwrapped); names not wrapped pass unchanged. */
static void *prophet_cuhook_procaddr(const char *symbol, void *p, int version, cuuint64_t flags)
{
    int ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const char *how = "driver's";
    Dl_info info;
    int i = -1;

    if (!p || !symbol || prophet_cfg.disable)
        return p;
    if (prophet_cuhook_is_wrapper(p)) {
        i = -2;
    } else {
        if (dladdr(p, &info) && info.dli_saddr == p && info.dli_sname) {
            i = prophet_cuhook_find(info.dli_sname);
            if (i >= 0 && !prophet_cuhook_same_proc(i, symbol))
                i = -1;
        }
        if (i >= 0) {
            prophet_cuhook_set_real(i, p);
            p = prophet_cuhook_wrapper[i];
        } else if ((i = prophet_cuhook_find_current(symbol, ptsz)) >= 0) {
            how = "cuda.h's";
            p = prophet_cuhook_procaddr_unnamed(symbol, p, version, i);
            if (p != prophet_cuhook_wrapper[i])
                i = -3;
        }
    }
    if ((i == -1 || i == -3) && strstr(symbol, "BeginCapture"))
        prophet_capture_begun(); /* a capture entry point the wrappers do not know */
    if (i == -1 || i == -3)
        prophet_msg(PROPHET_LOG_TRACE, "cuGetProcAddress(%s, version %d, flags %llu): driver's%s",
                    symbol, version, (unsigned long long)flags,
                    i == -3 ? " (unwrapped: version not known to match)" : "");
    else
        prophet_msg(PROPHET_LOG_TRACE,
                    "cuGetProcAddress(%s, version %d, flags %llu): wrapper %s (%s symbol)", symbol,
                    version, (unsigned long long)flags, i >= 0 ? prophet_cuhook_name(i) : "",
                    i >= 0 ? how : "already");
    return p;
}

/* ---- what each kind asks the engine (holding.h) --------------------------------------------
 * PRE: 1 when the engine handled the call (*rcp is the result); POST: after the driver call;
 * POST_ALWAYS: POST runs on the fast path too. a, b, c: the row's arguments (cuda_hook_table.h). */
#define PROPHET_CUHOOK_PRE_RECORD(ptsz, a, b, c, rcp)                                              \
    ((((c)&CU_EVENT_RECORD_EXTERNAL) ? prophet_hold_record_external((a), (b), (ptsz)) : (void)0),  \
     prophet_hold_event_record((a), (b), (ptsz), (rcp)))
#define PROPHET_CUHOOK_PRE_WAIT(ptsz, a, b, c, rcp)                                                \
    ((((c)&CU_EVENT_WAIT_EXTERNAL) ? prophet_hold_wait_external(b) : (void)0),                     \
     prophet_hold_stream_wait_event((a), (b), (ptsz), (rcp)))
#define PROPHET_CUHOOK_PRE_WORK(ptsz, a, b, c, rcp) (prophet_hold_stream_work((a), (ptsz)), 0)
#define PROPHET_CUHOOK_PRE_CAPTURE_BEGIN PROPHET_CUHOOK_PRE_WORK
#define PROPHET_CUHOOK_PRE_LAUNCH_EX PROPHET_CUHOOK_PRE_WORK
#define PROPHET_CUHOOK_PRE_MULTI_WORK(ptsz, a, b, c, rcp) (prophet_cuhook_multi_work((a), (b)), 0)
#define PROPHET_CUHOOK_PRE_GRAPH_LAUNCH(ptsz, a, b, c, rcp)                                        \
    (prophet_hold_graph_launch((a), (ptsz)), 0)
#define PROPHET_CUHOOK_PRE_SYNC_WORK(ptsz, a, b, c, rcp)                                           \
    (prophet_hold_stream_work(NULL, (ptsz)), prophet_hold_stream_sync(NULL, (ptsz)), 0)
#define PROPHET_CUHOOK_PRE_EVENT_QUERY(ptsz, a, b, c, rcp) prophet_hold_event_query((a), (rcp))
#define PROPHET_CUHOOK_PRE_STREAM_QUERY(ptsz, a, b, c, rcp)                                        \
    prophet_hold_stream_query((a), (ptsz), (rcp))
#define PROPHET_CUHOOK_PRE_ELAPSED(ptsz, a, b, c, rcp) prophet_hold_event_elapsed((a), (b), (rcp))
#define PROPHET_CUHOOK_PRE_EVENT_SYNC(ptsz, a, b, c, rcp) (prophet_hold_event_sync(a), 0)
#define PROPHET_CUHOOK_PRE_STREAM_SYNC(ptsz, a, b, c, rcp)                                         \
    (prophet_hold_stream_sync((a), (ptsz)), 0)
#define PROPHET_CUHOOK_PRE_CTX_SYNC(ptsz, a, b, c, rcp) (prophet_hold_ctx_sync(), 0)
#define PROPHET_CUHOOK_PRE_MEM_FREE(ptsz, a, b, c, rcp)                                            \
    (prophet_hold_mem_free((uintptr_t)(a), (b)), 0)
#define PROPHET_CUHOOK_PRE_CTX_RECORD(ptsz, a, b, c, rcp) (prophet_hold_ctx_record(a), 0)
#define PROPHET_CUHOOK_PRE_CTX_WAIT(ptsz, a, b, c, rcp) (prophet_hold_event_make_real(a), 0)
#define PROPHET_CUHOOK_PRE_EVENT_DESTROY(ptsz, a, b, c, rcp) prophet_hold_event_destroy((a), (rcp))
#define PROPHET_CUHOOK_PRE_STREAM_DESTROY(ptsz, a, b, c, rcp)                                      \
    prophet_hold_stream_destroy((a), (rcp))
#define PROPHET_CUHOOK_PRE_STREAM_CREATE(ptsz, a, b, c, rcp) 0
#define PROPHET_CUHOOK_PRE_GRAPH_EVENT(ptsz, a, b, c, rcp) 0
#define PROPHET_CUHOOK_PRE_GRAPH_NODE(ptsz, a, b, c, rcp) 0
#define PROPHET_CUHOOK_PRE_OTHER(ptsz, a, b, c, rcp) 0
#define PROPHET_CUHOOK_PRE_EVENT_CREATE(ptsz, a, b, c, rcp) 0
#define PROPHET_CUHOOK_PRE_IPC_OPEN_EVENT(ptsz, a, b, c, rcp) 0
#define PROPHET_CUHOOK_PRE_IPC_GET_EVENT(ptsz, a, b, c, rcp) (prophet_hold_ipc_export(a), 0)

/* FIRST: on every path, before anything else (a capture may begin: see prophet_capture_seen_; an
 * interprocess or graph event's handle is forgotten before the driver may reuse it). */
#define PROPHET_CUHOOK_FIRST_CAPTURE_BEGIN(a, b, c) prophet_capture_begun()
#define PROPHET_CUHOOK_FIRST_NONE(a, b, c) ((void)0)
/* an EXTERNAL record or wait (an external event node when captured) names a graph event, whether
 * or not anything is held (the graph may be launched while something is) */
#define PROPHET_CUHOOK_FIRST_RECORD(a, b, c)                                                       \
    (((c)&CU_EVENT_RECORD_EXTERNAL) ? prophet_hold_graph_event(a) : (void)0)
#define PROPHET_CUHOOK_FIRST_WAIT(a, b, c)                                                         \
    (((c)&CU_EVENT_WAIT_EXTERNAL) ? prophet_hold_graph_event(b) : (void)0)
#define PROPHET_CUHOOK_FIRST_WORK PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_LAUNCH_EX PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_MULTI_WORK PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_GRAPH_LAUNCH PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_SYNC_WORK PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_EVENT_QUERY PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_STREAM_QUERY PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_ELAPSED PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_EVENT_SYNC PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_STREAM_SYNC PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_CTX_SYNC PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_MEM_FREE PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_CTX_RECORD PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_CTX_WAIT PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_EVENT_DESTROY(a, b, c) prophet_hold_event_destroying(a)
#define PROPHET_CUHOOK_FIRST_STREAM_DESTROY(a, b, c) prophet_hold_stream_destroying(a)
#define PROPHET_CUHOOK_FIRST_STREAM_CREATE PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_GRAPH_EVENT PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_GRAPH_NODE PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_OTHER PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_EVENT_CREATE PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_IPC_OPEN_EVENT PROPHET_CUHOOK_FIRST_NONE
#define PROPHET_CUHOOK_FIRST_IPC_GET_EVENT PROPHET_CUHOOK_FIRST_NONE

#define PROPHET_CUHOOK_POST_ALWAYS_STREAM_CREATE 1
#define PROPHET_CUHOOK_POST_STREAM_CREATE(rc, ptsz, a, b)                                          \
    do {                                                                                           \
        if ((rc) == CUDA_SUCCESS && (a))                                                           \
            prophet_hold_stream_created(*(a), (b));                                                \
    } while (0)
/* interprocess events are told whether or not anything is held */
#define PROPHET_CUHOOK_POST_ALWAYS_EVENT_CREATE 1
#define PROPHET_CUHOOK_POST_EVENT_CREATE(rc, ptsz, a, b)                                           \
    do {                                                                                           \
        if ((rc) == CUDA_SUCCESS && (a))                                                           \
            prophet_hold_event_created(*(a), (b));                                                 \
    } while (0)
#define PROPHET_CUHOOK_POST_ALWAYS_IPC_OPEN_EVENT 1
#define PROPHET_CUHOOK_POST_IPC_OPEN_EVENT(rc, ptsz, a, b)                                         \
    do {                                                                                           \
        if ((rc) == CUDA_SUCCESS && (a))                                                           \
            prophet_hold_ipc_event(*(a));                                                          \
    } while (0)
#define PROPHET_CUHOOK_POST_ALWAYS_IPC_GET_EVENT 1
#define PROPHET_CUHOOK_POST_IPC_GET_EVENT(rc, ptsz, a, b)                                          \
    do {                                                                                           \
        if ((rc) == CUDA_SUCCESS)                                                                  \
            prophet_hold_ipc_event(a);                                                             \
    } while (0)
/* graph event nodes: told whether or not anything is held (a graph made before holding began may
 * be launched while something is held) */
#define PROPHET_CUHOOK_POST_ALWAYS_GRAPH_EVENT 1
#define PROPHET_CUHOOK_POST_GRAPH_EVENT(rc, ptsz, a, b)                                            \
    do {                                                                                           \
        if ((rc) == CUDA_SUCCESS)                                                                  \
            prophet_hold_graph_event(a);                                                           \
    } while (0)
#define PROPHET_CUHOOK_POST_ALWAYS_GRAPH_NODE 1
#define PROPHET_CUHOOK_POST_GRAPH_NODE(rc, ptsz, a, b)                                             \
    do {                                                                                           \
        if ((rc) == CUDA_SUCCESS)                                                                  \
            prophet_cuhook_graph_node(a);                                                          \
    } while (0)
#define PROPHET_CUHOOK_POST_LAUNCH_EX(rc, ptsz, a, b)                                              \
    do {                                                                                           \
        if ((rc) == CUDA_SUCCESS)                                                                  \
            prophet_cuhook_launch_events((b), (ptsz));                                             \
    } while (0)
#define PROPHET_CUHOOK_POST_NONE(rc, ptsz, a, b) ((void)0)
#define PROPHET_CUHOOK_POST_RECORD PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_WAIT PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_WORK PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_MULTI_WORK PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_GRAPH_LAUNCH PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_CAPTURE_BEGIN PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_SYNC_WORK PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_EVENT_QUERY PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_STREAM_QUERY PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_ELAPSED PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_EVENT_SYNC PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_STREAM_SYNC PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_CTX_SYNC PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_MEM_FREE PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_CTX_RECORD PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_CTX_WAIT PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_EVENT_DESTROY PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_STREAM_DESTROY PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_OTHER PROPHET_CUHOOK_POST_NONE
#define PROPHET_CUHOOK_POST_ALWAYS_RECORD 0
#define PROPHET_CUHOOK_POST_ALWAYS_WAIT 0
#define PROPHET_CUHOOK_POST_ALWAYS_WORK 0
#define PROPHET_CUHOOK_POST_ALWAYS_LAUNCH_EX 0
#define PROPHET_CUHOOK_POST_ALWAYS_MULTI_WORK 0
#define PROPHET_CUHOOK_POST_ALWAYS_GRAPH_LAUNCH 0
#define PROPHET_CUHOOK_POST_ALWAYS_CAPTURE_BEGIN 0
#define PROPHET_CUHOOK_POST_ALWAYS_SYNC_WORK 0
#define PROPHET_CUHOOK_POST_ALWAYS_EVENT_QUERY 0
#define PROPHET_CUHOOK_POST_ALWAYS_STREAM_QUERY 0
#define PROPHET_CUHOOK_POST_ALWAYS_ELAPSED 0
#define PROPHET_CUHOOK_POST_ALWAYS_EVENT_SYNC 0
#define PROPHET_CUHOOK_POST_ALWAYS_STREAM_SYNC 0
#define PROPHET_CUHOOK_POST_ALWAYS_CTX_SYNC 0
#define PROPHET_CUHOOK_POST_ALWAYS_MEM_FREE 0
#define PROPHET_CUHOOK_POST_ALWAYS_CTX_RECORD 0
#define PROPHET_CUHOOK_POST_ALWAYS_CTX_WAIT 0
#define PROPHET_CUHOOK_POST_ALWAYS_EVENT_DESTROY 0
#define PROPHET_CUHOOK_POST_ALWAYS_STREAM_DESTROY 0
#define PROPHET_CUHOOK_POST_ALWAYS_OTHER 0

/* MULTI_WORK (cuLaunchCooperativeKernelMultiDevice): every launch's stream is real work. */
static void prophet_cuhook_multi_work(const CUDA_LAUNCH_PARAMS *l, unsigned n)
{
    for (unsigned i = 0; l && i < n; i++)
        prophet_hold_stream_work(l[i].hStream, 0);
}

/* GRAPH_NODE: an event record or wait node names a graph event. */
static void prophet_cuhook_graph_node(const CUgraphNodeParams *p)
{
    if (p && p->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD)
        prophet_hold_graph_event(p->eventRecord.event);
    else if (p && p->type == CU_GRAPH_NODE_TYPE_WAIT_EVENT)
        prophet_hold_graph_event(p->eventWait.event);
}

/* LAUNCH_EX: the events its attributes record are real records on the launch's stream. */
static void prophet_cuhook_launch_events(const CUlaunchConfig *config, int ptsz)
{
    for (unsigned i = 0; config && config->attrs && i < config->numAttrs; i++) {
        const CUlaunchAttribute *at = &config->attrs[i];
        if (at->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT)
            prophet_hold_event_recorded(at->value.programmaticEvent.event, config->hStream, ptsz);
        else if (at->id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT)
            prophet_hold_event_recorded(at->value.launchCompletionEvent.event, config->hStream,
                                        ptsz);
    }
}

#define PROPHET_CUHOOK_DEFINE(sym, proc, kind, ptsz, cur, params, args, a, b, c)                   \
    PROPHET_CUHOOK_DEFINE_##kind(sym, kind, ptsz, params, args, a, b, c)
#define PROPHET_CUHOOK_DEFINE_PROCADDR(...) /* written out below */
#define PROPHET_CUHOOK_GENERIC(sym, kind, ptsz, params, args, a, b, c)                             \
    CUresult sym params                                                                            \
    {                                                                                              \
        prophet_cuhook_fn_##sym real_ =                                                            \
            (prophet_cuhook_fn_##sym)prophet_cuhook_real(PROPHET_CUHOOK_##sym);                    \
        CUresult rc_ = CUDA_SUCCESS;                                                               \
                                                                                                   \
        PROPHET_CUHOOK_FIRST_##kind(a, b, c);                                                      \
        if (!real_)                                                                                \
            return prophet_cuhook_missing(PROPHET_CUHOOK_##sym);                                   \
        if (!prophet_hold_armed() || prophet_hold_inside()) {                                      \
            if (!PROPHET_CUHOOK_POST_ALWAYS_##kind)                                                \
                return real_ args;                                                                 \
            rc_ = real_ args;                                                                      \
        } else {                                                                                   \
            if (PROPHET_CUHOOK_PRE_##kind(ptsz, a, b, c, &rc_))                                    \
                return rc_;                                                                        \
            prophet_hold_enter();                                                                  \
            rc_ = real_ args;                                                                      \
            prophet_hold_leave();                                                                  \
        }                                                                                          \
        PROPHET_CUHOOK_POST_##kind(rc_, ptsz, a, b);                                               \
        return rc_;                                                                                \
    }
#define PROPHET_CUHOOK_DEFINE_RECORD PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_WAIT PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_WORK PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_LAUNCH_EX PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_MULTI_WORK PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_GRAPH_LAUNCH PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_CAPTURE_BEGIN PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_SYNC_WORK PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_EVENT_QUERY PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_STREAM_QUERY PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_ELAPSED PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_EVENT_SYNC PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_STREAM_SYNC PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_CTX_SYNC PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_MEM_FREE PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_CTX_RECORD PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_CTX_WAIT PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_EVENT_DESTROY PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_STREAM_DESTROY PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_STREAM_CREATE PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_GRAPH_EVENT PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_GRAPH_NODE PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_OTHER PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_EVENT_CREATE PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_IPC_OPEN_EVENT PROPHET_CUHOOK_GENERIC
#define PROPHET_CUHOOK_DEFINE_IPC_GET_EVENT PROPHET_CUHOOK_GENERIC

PROPHET_CUDA_HOOKS(PROPHET_CUHOOK_DEFINE)

/* ---- cuGetProcAddress: the CUDA runtime's way to every entry point ----------------------------
 * The runtime dlsyms cuGetProcAddress_v2 (answered by cuda_dlsym.c with the wrapper below), asks
 * it for "cuGetProcAddress" (answered with this wrapper again) and from then on asks per function
 * and stream flavour: each answer is swapped for the wrapper of the same symbol. */
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    prophet_cuhook_fn_cuGetProcAddress_v2 real_ =
        (prophet_cuhook_fn_cuGetProcAddress_v2)prophet_cuhook_real(
            PROPHET_CUHOOK_cuGetProcAddress_v2);
    CUresult rc;

    if (!real_)
        return prophet_cuhook_missing(PROPHET_CUHOOK_cuGetProcAddress_v2);
    rc = real_(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == CUDA_SUCCESS && pfn) {
        prophet_cuhook_init();
        *pfn = prophet_cuhook_procaddr(symbol, *pfn, cudaVersion, flags);
    }
    return rc;
}

/* The legacy form (CUDA 11.3 - 11.8), without the symbol status. */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    prophet_cuhook_fn_cuGetProcAddress real_ =
        (prophet_cuhook_fn_cuGetProcAddress)prophet_cuhook_real(PROPHET_CUHOOK_cuGetProcAddress);
    CUresult rc;

    if (!real_)
        return prophet_cuhook_missing(PROPHET_CUHOOK_cuGetProcAddress);
    rc = real_(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS && pfn) {
        prophet_cuhook_init();
        *pfn = prophet_cuhook_procaddr(symbol, *pfn, cudaVersion, flags);
    }
    return rc;
}
