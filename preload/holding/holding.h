/* What the CUDA driver wrappers (cuda_hooks.c) ask the holding engine, the contract of
 * docs/completion-holding.md: the holding wing's interface, the only header of holding/ included
 * from outside it. The engine is split by concern in holding/hold_*.c (hold_tables.h says which
 * file keeps which part of the contract). A wrapper's fast path is prophet_hold_armed(): one
 * relaxed atomic load; zero means nothing is held or tracked anywhere in the process and the
 * wrapper goes straight to the driver. The engine is also skipped while this thread runs the
 * preload's own code (prophet_hold_inside(): the preload's own CUDA calls and NCCL's calls made on
 * its behalf).
 *
 * `ptsz` is 1 when the entry point that was called names the default stream per thread (the
 * `_ptsz`/`_ptds` symbols, or cuGetProcAddress flag CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
 * the engine normalises NULL / CU_STREAM_LEGACY / CU_STREAM_PER_THREAD with it.
 *
 * Functions returning int: 1 means the engine handled the call and *rc is what the wrapper returns
 * (the driver is not called); 0 means the wrapper calls the driver itself. */
#ifndef PROPHET_HOLDING_H
#define PROPHET_HOLDING_H

#include <cuda.h>
#include <stdatomic.h>
#include <stdint.h>

#include "thread_local.h"

extern atomic_int prophet_hold_armed_;
extern PROPHET_TLS int prophet_hold_depth_;

static inline int prophet_hold_armed(void)
{
    return atomic_load_explicit(&prophet_hold_armed_, memory_order_relaxed) != 0;
}

/* The preload's own code runs between enter and leave: wrappers reached meanwhile pass through. */
static inline void prophet_hold_enter(void)
{
    prophet_hold_depth_++;
}
static inline void prophet_hold_leave(void)
{
    prophet_hold_depth_--;
}
static inline int prophet_hold_inside(void)
{
    return prophet_hold_depth_ != 0;
}

/* Whether any stream of the process may be capturing: set for good by the wrappers of every
 * capture-begin entry point before the driver is called (and when an unwrapped name with
 * "BeginCapture" in it is handed out), so that a process that never captures does not ask the
 * driver per call (cuStreamIsCapturing). A stream only captures after some thread began a capture
 * (a stream joins one by waiting on an event recorded in a capturing stream). */
extern atomic_int prophet_capture_seen_;
static inline void prophet_capture_begun(void)
{
    atomic_store_explicit(&prophet_capture_seen_, 1, memory_order_seq_cst);
}
static inline int prophet_capture_possible(void)
{
    return atomic_load_explicit(&prophet_capture_seen_, memory_order_seq_cst) != 0;
}

/* Event record (cuEventRecord, cuEventRecordWithFlags): may become virtual. */
int prophet_hold_event_record(CUevent e, CUstream s, int ptsz, CUresult *rc);
/* cuStreamWaitEvent: a wait on a virtual record is absorbed. */
int prophet_hold_stream_wait_event(CUstream s, CUevent e, int ptsz, CUresult *rc);
/* Before real work is enqueued on s (launch, copy, memset, host function, graph launch, memory
 * operation, stream-ordered allocation, capture begin): dependencies on held calls become real. */
void prophet_hold_stream_work(CUstream s, int ptsz);
/* Queries of something behind a held call answer CUDA_ERROR_NOT_READY and release nothing. */
int prophet_hold_event_query(CUevent e, CUresult *rc);
int prophet_hold_stream_query(CUstream s, int ptsz, CUresult *rc);
/* cuEventElapsedTime on a virtual record: CUDA_ERROR_NOT_READY. */
int prophet_hold_event_elapsed(CUevent a, CUevent b, CUresult *rc);
/* Host synchronisation on an event or a stream: what it waits for is released (or waited for)
 * first; then the driver. */
void prophet_hold_event_sync(CUevent e);
void prophet_hold_stream_sync(CUstream s, int ptsz);
/* A context synchronisation and a free name no held call: they release only what the driver would
 * otherwise wait for forever (gated work behind an open block) and, for a free, a block with a
 * member's buffer in the freed allocation (docs/completion-holding.md, "Rank-local host events").
 * host: cuMemFreeHost (p is a host pointer). */
void prophet_hold_ctx_sync(void);
void prophet_hold_mem_free(uintptr_t p, int host);
/* Destruction of an event or stream with virtual records pending is deferred until they are real.
 */
int prophet_hold_event_destroy(CUevent e, CUresult *rc);
int prophet_hold_stream_destroy(CUstream s, CUresult *rc);
/* cuStreamDestroy(s) is about to run, on every path: with nothing held, the engine forgets s (its
 * entry, made when the stream was created, would otherwise outlive it). */
void prophet_hold_stream_destroying(CUstream s);
/* A stream was created (its flags tell blocking from non-blocking, for the legacy stream's
 * implicit synchronisation). Called whether or not anything is held. */
void prophet_hold_stream_created(CUstream s, unsigned flags);

/* ---- interprocess events (docs/completion-holding.md, "Interprocess events") ----------------
 * Another process may wait on an event made with CU_EVENT_INTERPROCESS (or opened with
 * cuIpcOpenEventHandle) and never sees the engine's virtual records: a record of such an event is
 * never virtual. The wrappers tell the engine of each one, whether or not anything is held;
 * prophet_hold_nipc_ counts them (0: no lookup anywhere). */
extern atomic_int prophet_hold_nipc_;
/* e is an interprocess event (made with the flag, opened, or exported). */
void prophet_hold_ipc_event(CUevent e);
/* e is no interprocess event (destroyed, or its handle reused by an ordinary event). */
void prophet_hold_ipc_forget(CUevent e);
/* cuEventCreate returned e made with flags. */
static inline void prophet_hold_event_created(CUevent e, unsigned flags)
{
    if (flags & CU_EVENT_INTERPROCESS)
        prophet_hold_ipc_event(e);
    else if (atomic_load_explicit(&prophet_hold_nipc_, memory_order_relaxed))
        prophet_hold_ipc_forget(e); /* a reused handle */
}
/* Graph events (below): prophet_hold_ngraph_ counts them (0: no lookup anywhere). */
extern atomic_int prophet_hold_ngraph_;
/* e is no graph event any more (destroyed). */
void prophet_hold_graph_forget(CUevent e);
/* cuEventDestroy(e) is about to run (before the driver may hand the handle out again): an
 * interprocess or graph event is forgotten. */
static inline void prophet_hold_event_destroying(CUevent e)
{
    if (atomic_load_explicit(&prophet_hold_nipc_, memory_order_relaxed))
        prophet_hold_ipc_forget(e);
    if (atomic_load_explicit(&prophet_hold_ngraph_, memory_order_relaxed))
        prophet_hold_graph_forget(e);
}
/* cuIpcGetEventHandle(e), before the driver: a virtual last record of e (its creation with the
 * flag was not seen) is made real first, with one WARN. */
void prophet_hold_ipc_export(CUevent e);
/* ---- events ordered out of the engine's sight (docs/completion-holding.md) ------------------
 * e's record made real: the blocks it is behind are released at this program-order point (by
 * their issuing thread; another thread waits), then it is issued (a context-wide wait on it,
 * cuCtxWaitEvent / cuGreenCtxWaitEvent, or an EXTERNAL wait, then sees a real record). */
void prophet_hold_event_make_real(CUevent e);
/* cuCtxRecordEvent / cuGreenCtxRecordEvent: every open block is released and the host waits until
 * every released block has completed on the GPU (its all-reduce ran on the internal stream, which
 * a context's or green context's record does not cover); e's earlier record is forgotten. */
void prophet_hold_ctx_record(CUevent e);
/* e is used by a graph event record or wait node (told whether or not anything is held); it is
 * forgotten at its cuEventDestroy (prophet_hold_event_destroying). */
void prophet_hold_graph_event(CUevent e);
/* cuGraphLaunch on s: every graph event's virtual record is made real first (a wait node waits on
 * the event's record as it is at launch, a record node replaces it), then real work on s. */
void prophet_hold_graph_launch(CUstream s, int ptsz);
/* e was recorded for real on s by a launch (cuLaunchKernelEx's PROGRAMMATIC_EVENT and
 * LAUNCH_COMPLETION_EVENT attributes): its earlier record, virtual or not, is replaced. */
void prophet_hold_event_recorded(CUevent e, CUstream s, int ptsz);
/* CU_EVENT_RECORD_EXTERNAL (a record node in a captured graph): s is materialised first, so that
 * the record stays real and keeps its flag (the wrapper told e as a graph event). */
void prophet_hold_record_external(CUevent e, CUstream s, int ptsz);
/* CU_EVENT_WAIT_EXTERNAL (a wait node in a captured graph): e's record is made real first, so
 * that the driver's wait keeps its flag (the wrapper told e as a graph event). */
void prophet_hold_wait_external(CUevent e);

/* ---- the scheduler's side (schedule.c, release.c, comm_life.c, interpose_*.c) -------------
 * A held block is named (comm, generation its release writes into the comm's gate word); the
 * open block of c has generation c->gpu.gate_gen + 1. Comm lock held unless said otherwise. */
typedef struct prophet_comm prophet_comm_t;
enum { PROPHET_HOLD_ON_X = 1, PROPHET_HOLD_ON_STREAM, PROPHET_HOLD_DROPPED };
/* Before a call on c is held on st (comm lock NOT held): open blocks of other comms that st is
 * behind are released and become real dependencies of st. */
void prophet_hold_before_call(prophet_comm_t *c, CUstream st);
/* Rule 7: 0 when st is materially behind c's open block gen (real work may have read it). */
int prophet_hold_may_join(prophet_comm_t *c, CUstream st, uint32_t gen);
/* A call was held on st in block gen (its ready event was just recorded on st); its buffers are
 * [send, send + bytes) and [recv, recv + bytes). */
void prophet_hold_call_held(prophet_comm_t *c, CUstream st, uint32_t gen, const void *send,
                            const void *recv, size_t bytes);
/* Block gen was released (how: PROPHET_HOLD_*); issues the event records made behind it. */
void prophet_hold_block_released(prophet_comm_t *c, uint32_t gen, int how);
/* Block gen of c will never be known to have run (its calls were dropped at Abort/Revoke, or its
 * launch or gate failed beyond repair): the work the job queued behind its gate must never run on
 * un-reduced buffers. A kernel that traps is launched on X (else on a new stream of c's context)
 * and the gate is written behind it: the context takes a sticky error (CUDA_ERROR_LAUNCH_FAILED:
 * every later CUDA call fails, host waits return at once) before the gate could open, and the
 * records made behind the block are issued behind real gates. Then the block is released in the
 * engine. 0 when the trap was launched; -1 when it could not be (no PTX JIT, or the context has
 * already failed): the gate is opened from the host (PROPHET_HOLD_DROPPED) with a WARN, since a
 * gated stream must never hang. docs/completion-holding.md, "A dropped call". Comm lock held,
 * inside the preload. */
int prophet_hold_block_poisoned(prophet_comm_t *c, uint32_t gen);
/* How the engine releases a comm's open block (comm_life.c sets it; it takes the comm lock). */
void prophet_hold_set_release(void (*fn)(prophet_comm_t *c));
/* The preload is about to enqueue real work of the job on st: from the scheduler (comm lock
 * held: never releases), or a forwarded NCCL call (no lock held: may release the open block whose
 * members' stream is st, as the wrappers' prophet_hold_stream_work does). */
void prophet_hold_work_own(CUstream st, int ptsz);
void prophet_hold_forward_work(CUstream st, int ptsz);

#endif
