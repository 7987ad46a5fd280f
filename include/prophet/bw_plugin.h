/* The interface of the eBPF plugin libprophet_bw.so (bpf/), which libprophet.so dlopen()s from its
 * own directory (preload/real_libs/bw_loader.c) so that the preload itself never needs libbpf.
 *
 * Versioned as NCCL's net and tuner plugins are: the plugin exports one const struct per
 * interface version it implements, named prophet_bw_plugin_v<N> (PROPHET_BW_PLUGIN_V<N>_SYMBOL);
 * the loader looks for the newest version it knows first, then the older ones, and uses the first
 * it finds. A released version's struct never changes: a change of a function's meaning or
 * signature makes version N+1 (a new struct and symbol here, a new first row in the loader's
 * table; a plugin may go on exporting the older ones beside it). What may grow without a new
 * version goes in a struct that carries its own size (prophet_bw_opts_t, bw.h). */
#ifndef PROPHET_BW_PLUGIN_H
#define PROPHET_BW_PLUGIN_H

#include <stddef.h>

#include "prophet/bw.h"

#define PROPHET_BW_PLUGIN_V1_SYMBOL "prophet_bw_plugin_v1"

/* Version 1: the bw.h API, prophet_bw_open taking its options struct. */
typedef struct prophet_bw_plugin_v1 {
    const char *name; /* the implementation, for messages ("ebpf") */
    prophet_bw_t *(*open)(const prophet_bw_opts_t *opts, char *why, size_t why_len);
    prophet_bw_source_t (*source)(const prophet_bw_t *bw);
    const char *(*source_name)(prophet_bw_source_t source);
    int (*read)(prophet_bw_t *bw, prophet_bw_sample_t *out);
    void (*close)(prophet_bw_t *bw);
} prophet_bw_plugin_v1_t;

/* Is FIELD within the caller's options (NULL: no)? */
#define PROPHET_BW_OPTS_HAS(opts, field)                                                           \
    ((opts) != NULL && (opts)->sz >= offsetof(prophet_bw_opts_t, field) + sizeof((opts)->field))
/* FIELD of the caller's options, or DEFAULT where the caller's struct has none. */
#define PROPHET_BW_OPTS_GET(opts, field, default_)                                                 \
    (PROPHET_BW_OPTS_HAS(opts, field) ? (opts)->field : (default_))

/* Can an implementation built with this header take OPTS? NULL (every default) and a struct of any
 * size from sizeof(sz) up whose bytes past this header's struct are all zero: 1; otherwise 0. */
static inline int prophet_bw_opts_valid(const prophet_bw_opts_t *opts)
{
    const unsigned char *tail;

    if (!opts)
        return 1;
    if (opts->sz < sizeof(opts->sz))
        return 0;
    tail = (const unsigned char *)opts;
    for (size_t i = sizeof(prophet_bw_opts_t); i < opts->sz; i++)
        if (tail[i])
            return 0;
    return 1;
}

#endif
