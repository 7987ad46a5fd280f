/* Events. Each cuEventRecord makes a new mark (refcounted) that fires when its stream reaches
 * it; the event points at its latest mark. Waits hold the mark that was latest at wait time.
 * An interprocess event (CU_EVENT_INTERPROCESS, or opened by cuIpcOpenEventHandle) numbers its
 * records in shared memory instead (emu_ipc.c): queries, host and stream waits are for the record
 * number that was the latest at the time, whichever process recorded it. */
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

struct emu_mark *emu_mark_new(void)
{
    struct emu_mark *m = calloc(1, sizeof(*m));
    if (m)
        atomic_init(&m->refs, 1);
    return m;
}

void emu_mark_put(struct emu_mark *m)
{
    if (m && atomic_fetch_sub(&m->refs, 1) == 1) {
        if (m->ipc)
            emu_ipc_ev_put(m->ipc);
        free(m);
    }
}

/* EMU_CUDA_EVENT_REUSE=1: the last event freed, kept for the next emu_event_new (one deep:
 * a handle destroyed and a new event created right after share their address, as on a real
 * driver, whose events come from a pool). */
static pthread_mutex_t emu_event_spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUevent_st *emu_event_spare;

static struct CUevent_st *emu_event_alloc(void)
{
    pthread_mutex_lock(&emu_event_spare_lock);
    struct CUevent_st *e = emu_event_spare;
    emu_event_spare = NULL;
    pthread_mutex_unlock(&emu_event_spare_lock);
    if (!e)
        return calloc(1, sizeof(*e));
    memset(e, 0, sizeof(*e));
    return e;
}

static void emu_event_free(struct CUevent_st *e)
{
    if (emu_g.event_reuse) {
        pthread_mutex_lock(&emu_event_spare_lock);
        struct CUevent_st *old = emu_event_spare;
        emu_event_spare = e;
        pthread_mutex_unlock(&emu_event_spare_lock);
        e = old;
    }
    free(e);
}

void emu_event_put(struct CUevent_st *e)
{
    if (atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    emu_mark_put(e->last);
    if (e->ipc)
        emu_ipc_ev_put(e->ipc);
    pthread_mutex_destroy(&e->lock);
    emu_event_free(e);
}

CUresult emu_event_get(CUevent h, struct CUevent_st **out)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    pthread_mutex_lock(&emu_g.lock);
    if (h && emu_ptrset_has(&emu_g.events, h)) {
        atomic_fetch_add(&h->refs, 1);
        *out = h;
    } else {
        rc = CUDA_ERROR_INVALID_HANDLE;
    }
    pthread_mutex_unlock(&emu_g.lock);
    return rc;
}

/* The event's latest mark with a reference taken, or NULL if never recorded. */
static struct emu_mark *emu_event_last(struct CUevent_st *e);

CUresult emu_stream_wait_event_to(struct CUstream_st *s, CUevent hEvent)
{
    struct emu_mark *m;
    CUresult rc;

    if (hEvent->ipc) /* an interprocess event: whichever process recorded it last */
        return emu_ipc_wait_op(s, hEvent->ipc);
    m = emu_event_last(hEvent);
    if (!m)
        return CUDA_SUCCESS; /* never recorded: nothing to wait for */
    struct emu_op *op = emu_op_new(EMU_OP_WAIT_EVENT);
    if (!op) {
        emu_mark_put(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->u.mark.mark = m;
    rc = emu_stream_submit(s, op, NULL);
    if (rc)
        emu_op_free(op);
    return rc;
}

CUresult emu_event_ref(CUevent h, struct CUevent_st **out)
{
    return emu_event_get(h, out);
}

void emu_event_unref(struct CUevent_st *e)
{
    emu_event_put(e);
}

static struct emu_mark *emu_event_last(struct CUevent_st *e)
{
    pthread_mutex_lock(&e->lock);
    struct emu_mark *m = e->last;
    if (m)
        atomic_fetch_add(&m->refs, 1);
    pthread_mutex_unlock(&e->lock);
    return m;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    EMU_FAULT_POINT("cuEventCreate");
    struct CUctx_st *ctx;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    unsigned all = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (Flags & ~all) ||
        ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    struct emu_ipc_ev *ipc = NULL;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(ipc = emu_ipc_ev_new()))
        return CUDA_ERROR_OUT_OF_MEMORY;
    return emu_event_new(Flags, ipc, phEvent);
}

CUresult emu_event_new(unsigned flags, struct emu_ipc_ev *ipc, CUevent *out)
{
    struct CUevent_st *e = emu_event_alloc();
    if (!e) {
        if (ipc)
            emu_ipc_ev_put(ipc);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    e->flags = flags;
    e->ipc = ipc;
    atomic_init(&e->refs, 1);
    pthread_mutex_init(&e->lock, NULL);
    pthread_mutex_lock(&emu_g.lock);
    int err = emu_ptrset_add(&emu_g.events, e);
    pthread_mutex_unlock(&emu_g.lock);
    if (err) {
        emu_event_put(e);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = e;
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    pthread_mutex_lock(&emu_g.lock);
    int err = !hEvent || emu_ptrset_del(&emu_g.events, hEvent);
    pthread_mutex_unlock(&emu_g.lock);
    if (err)
        return CUDA_ERROR_INVALID_HANDLE;
    emu_event_put(hEvent);
    return CUDA_SUCCESS;
}

/* Both references an operation between an event and a stream needs; neither is held on failure. */
static CUresult emu_event_stream_get(CUevent hEvent, CUstream hStream, struct CUevent_st **e,
                                     struct CUstream_st **s)
{
    CUresult rc = emu_event_get(hEvent, e);
    if (rc)
        return rc;
    if ((rc = emu_stream_get(hStream, s)))
        emu_event_put(*e);
    return rc;
}

static atomic_ullong
    emu_external_ops[2]; /* EXTERNAL waits, EXTERNAL records (emuEventExternalOps) */

uint64_t emuEventExternalOps(int record)
{
    return atomic_load(&emu_external_ops[record != 0]);
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    struct CUevent_st *e;
    struct CUstream_st *s;
    CUresult rc = emu_event_stream_get(hEvent, hStream, &e, &s);
    if (rc)
        return rc;
    rc = emu_event_record_to(hEvent, s, flags);
    emu_stream_put(s);
    emu_event_put(e);
    return rc;
}

CUresult emu_event_record_to(CUevent hEvent, struct CUstream_st *s, unsigned flags)
{
    struct CUevent_st *e = hEvent;
    CUresult rc = CUDA_SUCCESS;
    struct emu_mark *m = emu_mark_new();
    struct emu_op *op = emu_op_new(EMU_OP_RECORD);
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!m || !op)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc) {
        emu_mark_put(m);
        emu_op_free(op);
        goto out;
    }
    atomic_fetch_add(&m->refs, 1); /* one for the op, one for the event */
    op->u.mark.mark = m;
    op->u.mark.timing = !(e->flags & CU_EVENT_DISABLE_TIMING);
    if (e->ipc) { /* numbered before it may fire (a record on an idle stream fires in submit) */
        emu_ipc_ev_get(e->ipc);
        m->ipc = e->ipc;
        m->ipc_seq = atomic_fetch_add(&e->ipc->sh->recorded, 1) + 1;
    }
    /* Hold the event lock across submit so that concurrent records of one event leave the
     * event pointing at the one queued last. The wait for room in the queue comes first: work
     * on the stream may read this event (emuEventTimestampNs) and needs its lock to finish. */
    emu_stream_wait_room(s);
    pthread_mutex_lock(&e->lock);
    uint64_t seq = 0;
    rc = emu_stream_submit_now(s, op, &seq);
    struct emu_mark *old = NULL;
    if (!rc && seq) {
        old = e->last;
        e->last = m;
        m = NULL;
    }
    pthread_mutex_unlock(&e->lock);
    if (m && m->ipc) /* failed, or captured: the number issued must not be waited for */
        emu_ipc_ev_fire(m->ipc, m->ipc_seq);
    if (rc)
        emu_op_free(op);
    emu_mark_put(m); /* not kept by the event: failed, or captured into a graph */
    emu_mark_put(old);
    if (!rc && (flags & CU_EVENT_RECORD_EXTERNAL))
        atomic_fetch_add(&emu_external_ops[1], 1);
out:
    return rc;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    EMU_FAULT_POINT("cuEventRecord");
    return cuEventRecordWithFlags(hEvent, hStream, 0);
}

CUresult cuEventQuery(CUevent hEvent)
{
    EMU_FAULT_POINT("cuEventQuery");
    struct CUevent_st *e;
    CUresult rc = emu_capture_unsafe_call();
    if (rc)
        return rc;
    rc = emu_event_get(hEvent, &e);
    if (rc)
        return rc;
    if (e->ipc) {
        if (!emu_ipc_ev_done(e->ipc, atomic_load(&e->ipc->sh->recorded)))
            rc = CUDA_ERROR_NOT_READY;
        emu_event_put(e);
        return rc;
    }
    struct emu_mark *m = emu_event_last(e);
    if (m && !atomic_load_explicit(&m->done, memory_order_acquire))
        rc = CUDA_ERROR_NOT_READY;
    emu_mark_put(m);
    emu_event_put(e);
    return rc;
}

static int emu_mark_done(void *arg)
{
    struct emu_mark *m = arg;
    return atomic_load_explicit(&m->done, memory_order_acquire);
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    EMU_FAULT_POINT("cuEventSynchronize");
    struct CUevent_st *e;
    CUresult rc = emu_capture_unsafe_call();
    if (rc)
        return rc;
    rc = emu_event_get(hEvent, &e);
    if (rc)
        return rc;
    if (e->ipc) {
        emu_ipc_ev_wait(e->ipc, atomic_load(&e->ipc->sh->recorded));
        emu_event_put(e);
        return CUDA_SUCCESS;
    }
    struct emu_mark *m = emu_event_last(e);
    if (m)
        emu_wait(emu_mark_done, m, 0);
    emu_mark_put(m);
    emu_event_put(e);
    return emu_sticky(); /* a trap ends the wait: the record never fires */
}

/* Later work on hStream waits until hEvent's latest record (at the time of this call) fires. */
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    EMU_FAULT_POINT("cuStreamWaitEvent");
    struct CUevent_st *e;
    struct CUstream_st *s;
    CUresult rc = emu_event_stream_get(hEvent, hStream, &e, &s);
    if (rc)
        return rc;
    if (Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (Flags & CU_EVENT_WAIT_EXTERNAL)
        atomic_fetch_add(&emu_external_ops[0], 1);
    rc = emu_stream_wait_event_to(s, hEvent);
out:
    emu_stream_put(s);
    emu_event_put(e);
    return rc;
}

/* Timestamp of the event's latest record: INVALID_HANDLE if never recorded, NOT_READY if pending.
 */
static CUresult emu_event_time(struct CUevent_st *e, uint64_t *ns)
{
    struct emu_mark *m = emu_event_last(e);
    CUresult rc = CUDA_SUCCESS;
    if (!m)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!atomic_load_explicit(&m->done, memory_order_acquire))
        rc = CUDA_ERROR_NOT_READY;
    else
        *ns = atomic_load_explicit(&m->t_ns, memory_order_relaxed);
    emu_mark_put(m);
    return rc;
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    struct CUevent_st *a, *b;
    CUresult rc = emu_event_get(hStart, &a);
    if (rc)
        return rc;
    if ((rc = emu_event_get(hEnd, &b))) {
        emu_event_put(a);
        return rc;
    }
    uint64_t ta = 0, tb = 0;
    if (!pMilliseconds)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!(rc = emu_event_time(a, &ta)) && !(rc = emu_event_time(b, &tb)))
        *pMilliseconds = (float)((double)((int64_t)(tb - ta)) / 1e6);
    emu_event_put(b);
    emu_event_put(a);
    return rc;
}

CUresult emuEventTimestampNs(CUevent h, uint64_t *ns)
{
    struct CUevent_st *e;
    CUresult rc = emu_event_get(h, &e);
    if (rc)
        return rc;
    rc = ns ? emu_event_time(e, ns) : CUDA_ERROR_INVALID_VALUE;
    emu_event_put(e);
    return rc;
}

uint64_t emuNowNs(void)
{
    return emu_now_ns();
}
