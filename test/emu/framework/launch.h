/* Forking the rank processes and waiting for them. */
#ifndef EMU_LAUNCH_H
#define EMU_LAUNCH_H

#include <nccl.h>

#include "options.h"
#include "profile.h"
#include "shared.h"

/* Forks opt->ranks rank processes, then calls ncclGetUniqueId and publishes the id in sh, and
 * waits for them. Returns EMU_EXIT_OK when every rank
 * exited 0, EMU_EXIT_FAIL when one failed (the others are killed after a short grace period),
 * EMU_EXIT_TIMEOUT after --timeout. */
int emu_launch(const struct emu_options *opt, const struct emu_profile *prof,
               struct emu_shared *sh);

#endif
