/* The background thread (readiness_poller.c): events -> instants and durations, the stall guard,
 * the live throughput, and the GPU release of retired comms. */
#ifndef PROPHET_READINESS_POLLER_H
#define PROPHET_READINESS_POLLER_H

#include "engine/comm_state.h"

int prophet_poller_start(void);
void prophet_poller_stop(void);
/* Processes the records of c whose work has completed, now, on the caller's thread (never
 * waits): what the poller would find at its next pass, up to PROPHET_POLL_BUSY_US later, taken
 * before the comm's log closes (destroy, exit), so that the job's last calls are in it. Locked. */
void prophet_poller_collect(prophet_comm_t *c);
/* Latest live throughput (bytes/s) from the bandwidth source, or -1 (also before the source is
 * opened). */
double prophet_poller_probe_Bps(void);
/* A comm has a profile (its iteration held for PROPHET_LEARN_ITERS periods): the poller opens the
 * bandwidth source (the eBPF probe) at its next pass, once per process, before the first plan
 * (hold mode measures PROPHET_MEASURE_WARMUP + 1 iterations first). A comm that never has one
 * (Horovod's fused calls: no plan is ever made) loads no probe and pays nothing for it. Any
 * thread, lock-free. */
void prophet_poller_want_probe(void);
/* The thread's passes a second while it had work (records in flight or a block held), over the
 * process's life so far: 1e6 / (PROPHET_POLL_BUSY_US + a pass), less on a loaded host; 0 before
 * any such pass. For the summary line. Any thread, lock-free. */
double prophet_poller_busy_hz(void);

#endif
