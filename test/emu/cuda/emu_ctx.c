/* Contexts: primary contexts per device, created contexts, and the per-thread context stack.
 * Context objects are never freed (a destroyed one is only marked), so a stale handle can be
 * checked without a use-after-free. */
#include <stdlib.h>

#include "emu_internal.h"

#define EMU_CTX_STACK 16

static __thread struct CUctx_st *emu_tls_stack[EMU_CTX_STACK];
static __thread int emu_tls_depth;

/* Is ctx a live context of this process? Caller holds emu_g.lock. */
static int emu_ctx_live_locked(struct CUctx_st *ctx)
{
    return ctx && emu_ptrset_has(&emu_g.ctxs, ctx) && !ctx->destroyed;
}

static int emu_ctx_live(struct CUctx_st *ctx)
{
    pthread_mutex_lock(&emu_g.lock);
    int live = emu_ctx_live_locked(ctx);
    pthread_mutex_unlock(&emu_g.lock);
    return live;
}

int emu_ctx_is_live(struct CUctx_st *ctx)
{
    return emu_ctx_live(ctx);
}

CUresult emu_current_ctx(struct CUctx_st **out)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    struct CUctx_st *ctx = emu_tls_depth ? emu_tls_stack[emu_tls_depth - 1] : NULL;
    if (!ctx || !emu_ctx_live(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *out = ctx;
    return CUDA_SUCCESS;
}

/* Make a context and register it. Caller holds emu_g.lock. */
static struct CUctx_st *emu_ctx_new_locked(CUdevice dev, unsigned flags, int primary)
{
    struct CUctx_st *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return NULL;
    ctx->dev = dev;
    ctx->flags = flags;
    ctx->primary = primary;
    ctx->id = emu_next_id();
    ctx->def = emu_stream_alloc(ctx, 0, 0, 1);
    if (!ctx->def || emu_ptrset_add(&emu_g.ctxs, ctx)) {
        free(ctx->def);
        free(ctx);
        return NULL;
    }
    ctx->all_next = emu_g.all_ctxs;
    emu_g.all_ctxs = ctx;
    return ctx;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult rc = emu_check_dev(dev);
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&emu_g.lock);
    if (!emu_g.primary[dev])
        emu_g.primary[dev] = emu_ctx_new_locked(dev, 0, 1);
    struct CUctx_st *ctx = emu_g.primary[dev];
    if (ctx)
        ctx->retains++;
    pthread_mutex_unlock(&emu_g.lock);
    if (!ctx)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pctx = ctx;
    return CUDA_SUCCESS;
}

/* The primary context stays usable when its count drops to zero (a real driver would tear it
 * down); a later retain gets the same context back. */
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUresult rc = emu_check_dev(dev);
    if (rc)
        return rc;
    pthread_mutex_lock(&emu_g.lock);
    struct CUctx_st *ctx = emu_g.primary[dev];
    if (!ctx || ctx->retains <= 0)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else
        ctx->retains--;
    pthread_mutex_unlock(&emu_g.lock);
    return rc;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult rc = emu_check_dev(dev);
    if (rc)
        return rc;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&emu_g.lock);
    struct CUctx_st *ctx = emu_g.primary[dev];
    *flags = ctx ? ctx->flags : 0;
    *active = ctx && ctx->retains > 0;
    pthread_mutex_unlock(&emu_g.lock);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    CUresult rc = emu_check_dev(dev);
    if (rc)
        return rc;
    pthread_mutex_lock(&emu_g.lock);
    if (emu_g.primary[dev])
        emu_g.primary[dev]->flags = flags;
    pthread_mutex_unlock(&emu_g.lock);
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                        CUdevice dev)
{
    (void)ctxCreateParams;
    CUresult rc = emu_check_dev(dev);
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (emu_tls_depth >= EMU_CTX_STACK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&emu_g.lock);
    struct CUctx_st *ctx = emu_ctx_new_locked(dev, flags, 0);
    pthread_mutex_unlock(&emu_g.lock);
    if (!ctx)
        return CUDA_ERROR_OUT_OF_MEMORY;
    emu_tls_stack[emu_tls_depth++] = ctx;
    *pctx = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    pthread_mutex_lock(&emu_g.lock);
    if (!emu_ctx_live_locked(ctx) || ctx->primary) {
        pthread_mutex_unlock(&emu_g.lock);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    ctx->destroyed = 1;
    emu_ptrset_del(&emu_g.ctxs, ctx);
    struct CUstream_st *list = ctx->streams;
    ctx->streams = NULL;
    for (struct CUstream_st *s = list; s; s = s->ctx_next)
        emu_ptrset_del(&emu_g.streams, s);
    pthread_mutex_unlock(&emu_g.lock);

    while (list) {
        struct CUstream_st *next = list->ctx_next;
        emu_stream_shutdown(list);
        emu_stream_put(list);
        list = next;
    }
    emu_stream_shutdown(ctx->def);
    if (emu_tls_depth && emu_tls_stack[emu_tls_depth - 1] == ctx)
        emu_tls_depth--;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!ctx) {
        if (emu_tls_depth)
            emu_tls_depth--;
        return CUDA_SUCCESS;
    }
    if (!emu_ctx_live(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!emu_tls_depth)
        emu_tls_depth = 1;
    emu_tls_stack[emu_tls_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    EMU_FAULT_POINT("cuCtxGetCurrent");
    CUresult rc = emu_check_init_only(); /* works after a trap, as on a real GPU */
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = emu_tls_depth ? emu_tls_stack[emu_tls_depth - 1] : NULL;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!emu_ctx_live(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (emu_tls_depth >= EMU_CTX_STACK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    emu_tls_stack[emu_tls_depth++] = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!emu_tls_depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUctx_st *ctx = emu_tls_stack[--emu_tls_depth];
    if (pctx)
        *pctx = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    struct CUctx_st *ctx;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = ctx->dev;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int *flags)
{
    struct CUctx_st *ctx;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&emu_g.lock);
    *flags = ctx->flags;
    pthread_mutex_unlock(&emu_g.lock);
    return CUDA_SUCCESS;
}

/* *ctx, or the current context where it is NULL; INVALID_CONTEXT unless it is live. */
static CUresult emu_ctx_or_current(CUcontext *ctx)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!*ctx && (rc = emu_current_ctx(ctx)))
        return rc;
    return emu_ctx_live(*ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    CUresult rc = emu_ctx_or_current(&ctx);
    if (rc)
        return rc;
    if (!ctxId)
        return CUDA_ERROR_INVALID_VALUE;
    *ctxId = ctx->id;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    CUresult rc = emu_ctx_or_current(&ctx);
    if (rc)
        return rc;
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = 3020;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    struct CUctx_st *ctx;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    struct CUctx_st *ctx;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    if (Flags)
        return CUDA_ERROR_INVALID_VALUE;
    return emu_ctx_live(peerContext) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* Waits for every stream of the current context (the default one included). */
CUresult cuCtxSynchronize(void)
{
    CUresult rc = emu_capture_unsafe_call();
    return rc ? rc : emu_ctx_sync_current();
}

CUresult emu_ctx_sync_current(void)
{
    struct CUctx_st *ctx;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    size_t n = 0, cap = 16;
    struct CUstream_st **v = malloc(cap * sizeof(*v));
    if (!v)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&emu_g.lock);
    for (struct CUstream_st *s = ctx->streams; s; s = s->ctx_next) {
        if (n == cap) {
            struct CUstream_st **nv = realloc(v, cap * 2 * sizeof(*v));
            if (!nv)
                break;
            v = nv;
            cap *= 2;
        }
        atomic_fetch_add(&s->refs, 1);
        v[n++] = s;
    }
    pthread_mutex_unlock(&emu_g.lock);
    for (size_t i = 0; i < n; i++) {
        CUresult r = emu_stream_sync(v[i]);
        if (r && !rc)
            rc = r;
        emu_stream_put(v[i]);
    }
    free(v);
    CUresult r = emu_stream_sync(ctx->def);
    return rc ? rc : r;
}
