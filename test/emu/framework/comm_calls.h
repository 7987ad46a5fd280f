/* The NCCL calls per communicator that reached the emulated NCCL (emuNcclAllReduceCalls,
 * emuNcclBroadcastCalls), in total and after the warm-up, next to those the job issued: the
 * difference is what an interposer added (its own broadcasts) or still holds. */
#ifndef EMU_COMM_CALLS_H
#define EMU_COMM_CALLS_H

struct emu_rank;

/* At the start of the first measured iteration (after --warmup): the counts so far. */
void emu_comm_calls_begin(struct emu_rank *r);

/* After the last iteration was drained: the counts into the rank's shared result, one line per
 * communicator on stderr. Call after emu_tp_report. */
void emu_comm_calls_end(struct emu_rank *r);

#endif
