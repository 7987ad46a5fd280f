/* Aggregating the ranks' timings: the summary line and the --json object. */
#ifndef EMU_REPORT_H
#define EMU_REPORT_H

#include "options.h"
#include "profile.h"
#include "shared.h"

/* Prints the summary line (unless --quiet) and writes --json. ok: the run's outcome. Returns 0,
 * or -1 when the JSON file cannot be written (one line on stderr). */
int emu_report(const struct emu_options *opt, const struct emu_profile *prof,
               const struct emu_shared *sh, int ok);

#endif
