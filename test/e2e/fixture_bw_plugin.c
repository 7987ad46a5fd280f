/* A stand-in for libprophet_bw.so (include/prophet/bw_plugin.h), built twice by
 * test/e2e/CMakeLists.txt:
 *   FIXTURE_BW_VERSION=1   exports prophet_bw_plugin_v1: open() checks the options the preload
 *                          hands it (its size, and a rank's mode: PROPHET_BW_OPEN_ONLY_PID) and
 *                          gives a handle whose source is named "fixture-v1"; read() has no
 *                          sample yet (-EAGAIN), so the job's plans never see a rate from here
 *   FIXTURE_BW_VERSION=99  exports only prophet_bw_plugin_v99, a version no preload knows
 * test/e2e/bw_plugin.sh puts it beside a copy of libprophet.so as libprophet_bw.so. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "prophet/bw_plugin.h"

#ifndef FIXTURE_BW_VERSION
#error "FIXTURE_BW_VERSION is set by test/e2e/CMakeLists.txt"
#endif

struct prophet_bw {
    int mode;
};

static prophet_bw_t *fixture_open(const prophet_bw_opts_t *opts, char *why, size_t why_len)
{
    prophet_bw_t *bw;

    if (!prophet_bw_opts_valid(opts) || !PROPHET_BW_OPTS_HAS(opts, pid) ||
        !(opts->mode & PROPHET_BW_OPEN_ONLY_PID)) {
        snprintf(why, why_len, "fixture: options of %zu bytes, mode %d, not a rank's",
                 opts ? opts->sz : 0, opts ? opts->mode : -1);
        return NULL;
    }
    bw = calloc(1, sizeof(*bw));
    if (!bw) {
        snprintf(why, why_len, "fixture: out of memory");
        return NULL;
    }
    bw->mode = opts->mode;
    return bw;
}

static prophet_bw_source_t fixture_source(const prophet_bw_t *bw)
{
    return bw ? PROPHET_BW_DAEMON : PROPHET_BW_NONE;
}

static const char *fixture_source_name(prophet_bw_source_t source)
{
    return source == PROPHET_BW_NONE ? "none" : "fixture-v1";
}

static int fixture_read(prophet_bw_t *bw, prophet_bw_sample_t *out)
{
    (void)bw;
    (void)out;
    return -EAGAIN;
}

static void fixture_close(prophet_bw_t *bw)
{
    free(bw);
}

#define FIXTURE_SYMBOL_(v) prophet_bw_plugin_v##v
#define FIXTURE_SYMBOL(v) FIXTURE_SYMBOL_(v)

/* Version 99 has version 1's shape here: only its name tells the loader it is unknown. */
__attribute__((visibility("default")))
const prophet_bw_plugin_v1_t FIXTURE_SYMBOL(FIXTURE_BW_VERSION) = {
    .name = "fixture",
    .open = fixture_open,
    .source = fixture_source,
    .source_name = fixture_source_name,
    .read = fixture_read,
    .close = fixture_close,
};
