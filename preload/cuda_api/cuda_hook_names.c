/* The names of the wrapped CUDA driver entry points (cuda_hook_table.h) and their lookup. A leaf,
 * built without sanitizer instrumentation and with no libc call: the exported dlsym
 * (cuda_dlsym.c) asks it about every name, sanitizer runtimes' start-up lookups included. */
#include <stddef.h>

#include "cuda_api/cuda_hook_names.h"

struct prophet_cuhook_info {
    const char *name; /* the exported symbol */
    const char *proc; /* the name cuGetProcAddress is asked for */
    unsigned char ptsz, current;
};

static const struct prophet_cuhook_info prophet_cuhook_infos[PROPHET_CUHOOK_COUNT] = {
#define PROPHET_CUHOOK_INFO(sym, proc, kind, ptsz, cur, ...) {#sym, proc, ptsz, cur},
    PROPHET_CUDA_HOOKS(PROPHET_CUHOOK_INFO)
#undef PROPHET_CUHOOK_INFO
};

/* The requested CUDA versions that get entry i's ABI, {first, last}; {0, 0}: unknown (not an entry
 * cuda.h maps a name to, or no prototype of cudaTypedefs.h has its parameters). */
static const int prophet_cuhook_abi[PROPHET_CUHOOK_COUNT][2] = {
#define PROPHET_CUHOOK_ABI(sym, first, last) [PROPHET_CUHOOK_##sym] = {first, last},
    PROPHET_CUDA_HOOK_ABI(PROPHET_CUHOOK_ABI)
#undef PROPHET_CUHOOK_ABI
};

static int prophet_cuhook_streq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

int prophet_cuhook_find(const char *name)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < PROPHET_CUHOOK_COUNT; i++)
        if (prophet_cuhook_streq(prophet_cuhook_infos[i].name, name))
            return i;
    return -1;
}

int prophet_cuhook_find_current(const char *proc, int ptsz)
{
    int plain = -1;

    if (!proc || proc[0] != 'c' || proc[1] != 'u')
        return -1;
    for (int i = 0; i < PROPHET_CUHOOK_COUNT; i++) {
        const struct prophet_cuhook_info *h = &prophet_cuhook_infos[i];
        if (!h->current || !prophet_cuhook_streq(h->proc, proc))
            continue;
        if (h->ptsz == ptsz)
            return i;
        if (!h->ptsz)
            plain = i;
    }
    return plain; /* an entry point with no stream: one form for every flavour */
}

/* Entry i answers a lookup of `proc`: it is asked for by that name, or its symbol is that name
 * with a version or flavour suffix (a newer driver may answer cuCtxSynchronize_v2 for
 * "cuCtxSynchronize" at version 13000). */
int prophet_cuhook_same_proc(int i, const char *proc)
{
    const char *n = prophet_cuhook_infos[i].name;

    if (!proc)
        return 0;
    if (prophet_cuhook_streq(prophet_cuhook_infos[i].proc, proc))
        return 1;
    while (*proc && *proc == *n)
        proc++, n++;
    return !*proc && n[0] == '_' && (n[1] == 'v' || n[1] == 'p');
}

int prophet_cuhook_abi_matches(int i, int version)
{
    return prophet_cuhook_abi[i][0] > 0 && version >= prophet_cuhook_abi[i][0] &&
           version <= prophet_cuhook_abi[i][1];
}

const char *prophet_cuhook_name(int i)
{
    return prophet_cuhook_infos[i].name;
}
