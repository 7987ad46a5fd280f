/* Per-communicator state's primitives (comm_state.c): registry, event pool, release of GPU
 * resources and models, summary; the state itself is comm.h's. When they are
 * used (setup, retire, exit) is decided by comm_life.c alone. */
#ifndef PROPHET_COMM_STATE_H
#define PROPHET_COMM_STATE_H

#include <cuda.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "comm.h"

/* Registers a new state (comm_life.c calls it). rank/nranks < 0: ask NCCL at setup. */
void prophet_comm_created(ncclComm_t handle, int rank, int nranks, const ncclConfig_t *config,
                          int inherit_blocking_from_parent, ncclComm_t parent);
/* Live state of a handle, or NULL (unknown or destroyed). Lock-free read. */
prophet_comm_t *prophet_comm_find(ncclComm_t handle);
/* Every comm ever made; iterate with ->next_all. */
prophet_comm_t *prophet_comm_list(void);
CUevent prophet_comm_event_get(prophet_comm_t *c);
void prophet_comm_event_put(prophet_comm_t *c, CUevent e);
/* A record for n members (NULL when out of memory), and its return: an observed call's record
 * (n = 1) is kept for the next one, so that the per-call path neither allocates nor frees memory
 * that another thread (the poller) allocated. Locked. */
prophet_inflight_t *prophet_comm_record_get(prophet_comm_t *c, uint32_t n);
void prophet_comm_record_put(prophet_comm_t *c, prophet_inflight_t *f);
/* The summary line (PROPHET_DEBUG=INFO), once; poller_busy_hz: prophet_poller_busy_hz(), handed in
 * by the caller (the poller reads the comms: it is not called from here). */
void prophet_comm_summary(prophet_comm_t *c, double poller_busy_hz);
/* A retired comm whose last launched block completed: X and the pooled events (poller). Locked. */
void prophet_comm_gpu_release(prophet_comm_t *c);
/* Learner, engine, net model and signature sequence (retire). Locked. */
void prophet_comm_free_models(prophet_comm_t *c);
/* A CUDA call of ours failed (one WARN per comm). During the setup: passthrough (the setup vote
 * makes it every rank's). After the setup the caller handles it on this rank alone, keeping the
 * NCCL calls this rank issues unchanged (docs/reliability.md, "Local failures"). Locked. */
void prophet_comm_fail(prophet_comm_t *c, const char *what, CUresult rc);
/* A failure this rank cannot handle without changing its NCCL calls: the comm stops, every later
 * call on it returns `err` to the caller without being issued (what NCCL does with a comm that
 * had an error); the job fails like on an NCCL error instead of diverging from its peers. */
void prophet_comm_error(prophet_comm_t *c, const char *what, ncclResult_t err);

#endif
