/* What one rank's host does on its own, and consumers on extra streams (--local-event, --chaos,
 * --poll-wait, --extra-streams): disturbances that an interposer must survive with every rank
 * still forming the same NCCL groups. docs/completion-holding.md, "Rank-local host events". */
#ifndef EMU_DISTURB_H
#define EMU_DISTURB_H

#include <cuda.h>
#include <stddef.h>

struct emu_rank;

/* Creates the extra streams and starts the chaos thread (when asked for). -1 on failure. */
int emu_disturb_init(struct emu_rank *r);
/* After the all-reduce that covers gradient g: this rank's --local-event for g, if any. */
int emu_disturb_local(struct emu_rank *r, size_t g);
/* After an all-reduce (of gradient g, or SIZE_MAX: a DDP bucket, not checked per gradient;
 * issued on stream s; `end`: its work's end event, or NULL): a --chaos event, the extra streams'
 * consumers, the polling wait. */
int emu_disturb_after_call(struct emu_rank *r, size_t g, CUstream s, CUevent end);
/* At the end of an iteration: the extra streams are synchronised (their checks are done). */
int emu_disturb_end_iteration(struct emu_rank *r);
/* Stops the chaos thread, prints the counts (one line on stderr), frees the streams. */
void emu_disturb_fini(struct emu_rank *r);

#endif
