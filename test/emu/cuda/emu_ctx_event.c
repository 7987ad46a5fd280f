/* Context-wide event records and waits (cuCtxRecordEvent, cuCtxWaitEvent).
 * cuCtxRecordEvent(ctx, e): e's new record fires once all work submitted so far to every stream of
 * the context (its default stream and its user streams) has run; it is queued on a stream of the
 * context's own (made at the first call, not a user stream) behind waits for each of them.
 * cuCtxWaitEvent(ctx, e): every stream of the context that exists at the call waits for e's
 * latest record (a real driver makes all later work of the context wait, streams created later
 * included; not modelled). Green contexts are not emulated. */
#include <stdlib.h>

#include "emu_internal.h"

CUresult cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent)
{
    struct CUevent_st *e;
    struct CUstream_st *s;
    CUresult rc = emu_check_init();

    if (rc)
        return rc;
    if (!emu_ctx_is_live(hCtx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((rc = emu_event_ref(hEvent, &e)))
        return rc;
    pthread_mutex_lock(&emu_g.lock);
    if (!hCtx->evs)
        hCtx->evs = emu_stream_alloc(hCtx, CU_STREAM_NON_BLOCKING, 0, 0);
    s = hCtx->evs;
    pthread_mutex_unlock(&emu_g.lock);
    if (!s)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else if (!(rc = emu_stream_wait_ctx(s)))
        rc = emu_event_record_to(hEvent, s, 0);
    emu_event_unref(e);
    return rc;
}

CUresult cuCtxWaitEvent(CUcontext hCtx, CUevent hEvent)
{
    struct CUstream_st **v = NULL;
    struct CUevent_st *e;
    size_t n = 0, cap = 0;
    CUresult rc = emu_check_init();

    if (rc)
        return rc;
    if (!emu_ctx_is_live(hCtx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((rc = emu_event_ref(hEvent, &e)))
        return rc;
    pthread_mutex_lock(&emu_g.lock);
    for (struct CUstream_st *s = hCtx->def; s && !rc;
         s = s == hCtx->def ? hCtx->streams : s->ctx_next) {
        if (n == cap) {
            size_t c2 = cap ? 2 * cap : 8;
            struct CUstream_st **p = realloc(v, c2 * sizeof(*p));
            if (!p) {
                rc = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            v = p;
            cap = c2;
        }
        if (!s->is_default)
            atomic_fetch_add(&s->refs, 1);
        v[n++] = s;
    }
    pthread_mutex_unlock(&emu_g.lock);
    for (size_t i = 0; i < n; i++) {
        CUresult r2 = rc ? CUDA_SUCCESS : emu_stream_wait_event_to(v[i], hEvent);
        if (r2 && !rc)
            rc = r2;
        emu_stream_put(v[i]);
    }
    free(v);
    emu_event_unref(e);
    return rc;
}
