/* The job's own collectives on the gradients' communicator, besides the gradients: the loss
 * all-reduce (--loss-every) and the evaluation phase's metric all-reduces (--eval-every). */
#ifndef EMU_EXTRAS_H
#define EMU_EXTRAS_H

struct emu_rank;

/* Allocates the loss and metric buffers (nothing when both options are off). -1 on failure. */
int emu_extras_init(struct emu_rank *r);

/* --loss-every: in every K-th iteration, after its gradient all-reduces were issued: the loss
 * all-reduce on the process-group stream, cuStreamSynchronize of that stream and the check. */
int emu_extras_loss(struct emu_rank *r);

/* --eval-every: after every K-th iteration: the metric all-reduces, the host synchronisation of
 * their stream and the checks. */
int emu_extras_eval(struct emu_rank *r);

/* Puts the counts of issued and checked calls into the rank's shared result. */
void emu_extras_report(struct emu_rank *r);

void emu_extras_fini(struct emu_rank *r);

#endif
