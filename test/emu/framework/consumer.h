/* --consumer: adversarial consumers of the all-reduced gradients. After every fourth gradient's
 * call (g mod 4 = 0) each chosen consumer reads the gradient through one ordering path
 * (options.h's enum emu_consumer_kind) and checks every element. The check itself runs unseen by
 * an interposer (emuLaunchKernel on a side stream, or a graph's host node): only the path under
 * test orders it after the call, so a preload that lets the path through early is caught. */
#ifndef EMU_CONSUMER_H
#define EMU_CONSUMER_H

#include <cuda.h>
#include <stddef.h>

struct emu_rank;
struct emu_consumers;

/* Sets up r->consumers when --consumer was given (a side stream, events, a kernel); 0 or -1. */
int emu_consumers_init(struct emu_rank *r);

/* Right after gradient g's all-reduce was issued on stream s: the consumers of g, if any. */
int emu_consumers_after_call(struct emu_rank *r, size_t g, CUstream s);

/* The compute stream waits for every check issued so far (before the next iteration writes the
 * gradients again). */
int emu_consumers_join(struct emu_rank *r);

/* After the last iteration: prints each consumer's counts; -1 when an interposer held calls but
 * a consumer never began while calls were held (a run that tested nothing). */
int emu_consumers_end(struct emu_rank *r);

void emu_consumers_fini(struct emu_rank *r);

#endif
