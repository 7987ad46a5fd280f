/* Releasing a held block: the internal stream X waits for the last member's ready event (all are on
 * one stream), runs the members as one NCCL group, records the block's end event and writes the
 * block's generation into the comm's gate word. Nothing is placed on the caller's stream: the
 * holding engine (holding/hold_blocks.c) then issues the event records that the job made behind the
 * block (on X, after it), and streams that really need the result wait for the gate word (GEQ). X
 * is FIFO per comm, so block k's generation also covers every earlier block. Always called on a
 * program-order point, on the thread that made the calls, inside the preload (prophet_hold_enter).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/release.h"
#include "check.h"
#include "holding/holding.h"
#include "engine/comm_state.h"
#include "real_libs/cuda_driver.h"
#include "debug_lines/log_line.h"
#include "real_libs/nccl_symbols.h"
#include "config/process_config.h"

void prophet_inflight_push(prophet_comm_t *c, prophet_inflight_t *f)
{
    f->next = NULL;
    if (c->blocks.inflight_tail)
        c->blocks.inflight_tail->next = f;
    else
        c->blocks.inflight_head = f;
    c->blocks.inflight_tail = f;
}

/* Runs the members as one group on `stream` (the members' own stream in the fallback). */
static ncclResult_t prophet_launch_members(prophet_comm_t *c, const prophet_block_t *b,
                                           CUstream stream)
{
    ncclResult_t rc = ncclSuccess, r;

    if (b->n > 1)
        PROPHET_NCCLCHECK(prophet_nccl.GroupStart());
    for (uint32_t i = 0; i < b->n; i++) {
        const prophet_member_t *m = &b->m[i];
        r = prophet_nccl.AllReduce(m->sendbuff, m->recvbuff, m->count, m->dtype, m->op, c->handle,
                                   stream);
        if (r != ncclSuccess && rc == ncclSuccess)
            rc = r;
    }
    if (b->n > 1) {
        r = prophet_nccl.GroupEnd();
        if (r != ncclSuccess && rc == ncclSuccess)
            rc = r;
    }
    return rc;
}

static void prophet_block_clear(prophet_comm_t *c)
{
    c->blocks.pending.n = 0;
    c->blocks.pending.bytes = 0;
    c->blocks.pending.stall_warned = 0;
    c->blocks.pending.on_stream = 0;
    c->order.block_number++;
}

/* No gate can open after block gen has run (NCCL refused its calls; or it was launched on the
 * members' stream, which is itself gated on it or cannot take the gate's write; or X's gate
 * failed and no host wait can tell when the block ends): opening it from the host would let the
 * work queued behind it read the buffers before the block wrote them. The context is stopped
 * instead (a trap, prophet_hold_block_poisoned) and the comm stops with a sticky error: the job
 * gets an error, never data. docs/completion-holding.md, "A dropped call". */
static void prophet_release_poison(prophet_comm_t *c, uint32_t gen, const char *what,
                                   ncclResult_t err)
{
    prophet_comm_error(c, what, err);
    prophet_hold_block_poisoned(c, gen);
}

/* The block cannot go through X (a CUDA call of ours failed before it reached NCCL, or the comm
 * does not schedule): run the members where the caller put them, as the same group (they are all
 * on b->stream, in order, after everything enqueued there so far: the NCCL calls stay those of
 * every other rank), open the block's gate word behind them (from the host when that stream is
 * itself gated on this block: a gated stream must never hang). `what` (NULL: no failure) is
 * reported; the comm goes on scheduling (prophet_comm_fail). */
static ncclResult_t prophet_release_fallback(prophet_comm_t *c, const char *what, CUresult crc)
{
    ncclResult_t rc;
    uint32_t gen = c->gpu.gate_gen + 1;
    int how = PROPHET_HOLD_DROPPED;

    if (what)
        prophet_comm_fail(c, what, crc);
    rc = prophet_launch_members(c, &c->blocks.pending, c->blocks.pending.stream);
    c->gpu.gate_gen = gen;
    if (rc == ncclSuccess && c->gpu.gate_dev &&
        prophet_hold_may_join(c, c->blocks.pending.stream, gen) &&
        prophet_cu.StreamWriteValue32(c->blocks.pending.stream, c->gpu.gate_dev, gen,
                                      CU_STREAM_WRITE_VALUE_DEFAULT) == CUDA_SUCCESS)
        how = PROPHET_HOLD_ON_STREAM;
    if (how == PROPHET_HOLD_DROPPED && c->gpu.gate_dev)
        prophet_release_poison(c, gen,
                               rc != ncclSuccess
                                   ? "issuing a released block on its own stream"
                                   : "opening the gate of a block released on its own stream",
                               rc != ncclSuccess ? rc : ncclSystemError);
    else
        prophet_hold_block_released(c, gen, how);
    c->stats.passthrough += c->blocks.pending.n;
    for (uint32_t i = 0; i < c->blocks.pending.n; i++)
        prophet_comm_event_put(c, c->blocks.pending.m[i].ready);
    prophet_block_clear(c);
    return rc;
}

/* X waits for the block's last ready event (every member's ready event was recorded on b->stream,
 * in program order: a call on another stream releases the block first, so the last one completes
 * after all the others and one wait covers the block), then records the start event. */
static CUresult prophet_release_wait_ready(prophet_comm_t *c, const prophet_block_t *b,
                                           CUevent start)
{
    PROPHET_CUCHECK(prophet_cu.StreamWaitEvent(c->gpu.internal_stream, b->m[b->n - 1].ready, 0));
    PROPHET_CUCHECK(prophet_cu.EventRecord(start, c->gpu.internal_stream));
    return CUDA_SUCCESS;
}

/* X's gate failed to open behind the block (it is in NCCL, on every rank alike; only this rank's
 * gate failed). Second best, on this rank alone: wait on the host for X's end event (or X: an end
 * event that was never recorded would not wait); the caller then opens the gate word from the host
 * (PROPHET_HOLD_DROPPED). The comm goes on scheduling: its next blocks are its peers' blocks
 * (I1). 1 when the block is known to have ended. */
static int prophet_release_wait_host(prophet_comm_t *c, CUresult rc, int ended, CUevent end)
{
    CUstreamCaptureMode mode = prophet_capture_relax(); /* cuda_driver.h */
    int done;

    prophet_comm_fail(c, "opening the block's gate on the internal stream", rc);
    done = (ended && prophet_cu.EventSynchronize(end) == CUDA_SUCCESS) ||
           prophet_cu.StreamSynchronize(c->gpu.internal_stream) == CUDA_SUCCESS;
    prophet_capture_restore(mode);
    return done;
}

/* The gate of the block just launched on X (generation c->gpu.gate_gen): X writes it behind the
 * block, or the host once the block ended. NCCL refused the block (the gate must then not open
 * over work that never ran), or no one can know when it ends: poisoned ("A dropped call"). shut:
 * left to the caller (Abort/Revoke). */
static void prophet_release_gate(prophet_comm_t *c, int shut, ncclResult_t nrc, int ended,
                                 CUevent end)
{
    uint32_t gen = c->gpu.gate_gen;
    CUresult rc = CUDA_SUCCESS;
    int poisoned = 0;

    if (!shut && nrc == ncclSuccess)
        rc = ended ? prophet_cu.StreamWriteValue32(c->gpu.internal_stream, c->gpu.gate_dev, gen,
                                                   CU_STREAM_WRITE_VALUE_DEFAULT)
                   : CUDA_ERROR_UNKNOWN;
    /* no way to know when the block ends: the comm stops with an error and the context is
     * stopped before the gate could open (a gated stream never hangs, and never reads early) */
    if (rc != CUDA_SUCCESS)
        poisoned = !prophet_release_wait_host(c, rc, ended, end);
    if (nrc != ncclSuccess)
        prophet_release_poison(c, gen, "issuing a released block", nrc);
    else if (poisoned)
        prophet_release_poison(c, gen, "waiting for a block whose gate failed",
                               ncclUnhandledCudaError);
    else if (!shut)
        prophet_hold_block_released(c, gen,
                                    rc == CUDA_SUCCESS ? PROPHET_HOLD_ON_X : PROPHET_HOLD_DROPPED);
}

/* The block's counters and its TRACE line. */
static void prophet_release_count(prophet_comm_t *c, const prophet_block_t *b, ncclResult_t nrc)
{
    c->stats.scheduled += b->n;
    c->stats.blocks++;
    c->stats.block_members += b->n;
    if (b->n > 1)
        c->stats.blocks_multi++;
    prophet_msg(PROPHET_LOG_TRACE, "comm %lu: block %u released: %u calls, %lu bytes (nccl %d)",
                (unsigned long)c->id, b->number, b->n, (unsigned long)b->bytes, (int)nrc);
}

/* The launched block's record goes to the poller (its timing), or, with no end event, its events
 * back to the pool; the pending block is cleared either way. */
static void prophet_release_record(prophet_comm_t *c, prophet_inflight_t *f, CUevent start,
                                   CUevent end, int ended)
{
    prophet_block_t *b = &c->blocks.pending;

    if (!ended) { /* no end event: no timing for the poller */
        free(f);
        prophet_comm_event_put(c, start);
        prophet_comm_event_put(c, end);
        for (uint32_t i = 0; i < b->n; i++)
            prophet_comm_event_put(c, b->m[i].ready);
    } else {
        f->n = b->n;
        f->deferred = 1;
        f->start = start;
        f->end = end;
        f->bytes = b->bytes;
        f->block = b->number;
        memcpy(f->m, b->m, b->n * sizeof(b->m[0]));
        prophet_inflight_push(c, f);
    }
    prophet_block_clear(c);
}

/* Launches the pending block on X (or the fallback), then its gate, counters and record. shut:
 * X's gate write is left out and *gate_left set: the caller opens generation c->gpu.gate_gen
 * (prophet_release_open) or poisons it (Abort/Revoke, comm_life.c). */
static ncclResult_t prophet_release_launch(prophet_comm_t *c, int shut, int *gate_left)
{
    prophet_block_t *b = &c->blocks.pending;
    prophet_inflight_t *f;
    ncclResult_t nrc;
    CUresult rc;
    CUevent start, end;
    const char *what = "allocating a block record";
    int ended;

    if (b->n == 0)
        return ncclSuccess;
    if (c->passthrough || c->setup <= 0 || b->on_stream) /* on_stream: reported at the member */
        return prophet_release_fallback(c, NULL, CUDA_SUCCESS);
    f = malloc(sizeof(*f) + b->n * sizeof(f->m[0]));
    start = prophet_comm_event_get(c);
    end = prophet_comm_event_get(c);
    rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (!f || !start || !end)
        goto fallback;
    what = "releasing a block on the internal stream";
    PROPHET_CUCHECKGOTO(prophet_release_wait_ready(c, b, start), rc, fallback);
    f->release_us = prophet_now_us();
    nrc = prophet_launch_members(c, b, c->gpu.internal_stream);
    /* From here on NCCL has the operations (unless it refused them): the gate must open
     * whatever happens. */
    ended = prophet_cu.EventRecord(end, c->gpu.internal_stream) == CUDA_SUCCESS;
    c->gpu.gate_gen++;
    if (shut && nrc == ncclSuccess)
        *gate_left = 1; /* the caller opens or poisons it */
    prophet_release_gate(c, shut, nrc, ended, end);
    prophet_release_count(c, b, nrc);
    prophet_release_record(c, f, start, end, ended);
    return nrc;
fallback:
    free(f);
    prophet_comm_event_put(c, start);
    prophet_comm_event_put(c, end);
    return prophet_release_fallback(c, what, rc);
}

ncclResult_t prophet_release_pending(prophet_comm_t *c)
{
    return prophet_release_launch(c, 0, NULL);
}

ncclResult_t prophet_release_pending_shut(prophet_comm_t *c, int *gate_left)
{
    *gate_left = 0;
    return prophet_release_launch(c, 1, gate_left);
}

void prophet_release_open(prophet_comm_t *c, uint32_t gen)
{
    CUresult rc = prophet_cu.StreamWriteValue32(c->gpu.internal_stream, c->gpu.gate_dev, gen,
                                                CU_STREAM_WRITE_VALUE_DEFAULT);

    /* the block has completed: from the host is as good */
    prophet_hold_block_released(c, gen,
                                rc == CUDA_SUCCESS ? PROPHET_HOLD_ON_X : PROPHET_HOLD_DROPPED);
}

void prophet_release_all_mine(void)
{
    pthread_t self = pthread_self();

    for (prophet_comm_t *c = prophet_comm_list(); c; c = c->next_all) {
        if (!atomic_load_explicit(&c->alive, memory_order_relaxed))
            continue;
        pthread_mutex_lock(&c->lock);
        if (c->blocks.pending.n && pthread_equal(c->blocks.pending.owner, self))
            prophet_release_pending(c);
        pthread_mutex_unlock(&c->lock);
    }
}
