/* The wrapped CUDA driver entry points by name (cuda_hook_names.c; the table: cuda_hook_table.h).
 * No libc, no sanitizer: safe before anything is initialised. */
#ifndef PROPHET_CUDA_HOOK_NAMES_H
#define PROPHET_CUDA_HOOK_NAMES_H

#include "cuda_hook_table.h"

enum prophet_cuhook_id {
#define PROPHET_CUHOOK_ID(sym, ...) PROPHET_CUHOOK_##sym,
    PROPHET_CUDA_HOOKS(PROPHET_CUHOOK_ID)
#undef PROPHET_CUHOOK_ID
        PROPHET_CUHOOK_COUNT
};

/* The entry exporting `name`, or -1; the entry cuda.h maps `proc` to in the flavour `ptsz` (the
 * plain one for an entry point with no stream), or -1; whether entry i may answer a lookup of
 * `proc`; whether cuGetProcAddress asked for CUDA version `version` is known to get entry i's ABI
 * (cuda_hook_table.h, PROPHET_CUDA_HOOK_ABI: from the version that introduced it up to the next
 * ABI of the name or this cuda.h's CUDA_VERSION). */
int prophet_cuhook_find(const char *name);
int prophet_cuhook_find_current(const char *proc, int ptsz);
int prophet_cuhook_same_proc(int i, const char *proc);
int prophet_cuhook_abi_matches(int i, int version);
const char *prophet_cuhook_name(int i);

#endif
