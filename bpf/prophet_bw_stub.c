/* prophet_bw without eBPF support (libbpf, bpftool or clang missing at build time). */
#include <errno.h>
#include <stdio.h>

#include "prophet/bw.h"

prophet_bw_t *prophet_bw_open(const prophet_bw_opts_t *opts, char *why, size_t why_len)
{
    (void)opts;
    if (why && why_len > 0)
        snprintf(why, why_len, "no eBPF support (built without libbpf/bpftool/clang)");
    return NULL;
}

prophet_bw_source_t prophet_bw_source(const prophet_bw_t *bw)
{
    (void)bw;
    return PROPHET_BW_NONE;
}

const char *prophet_bw_source_name(prophet_bw_source_t source)
{
    (void)source;
    return "none";
}

int prophet_bw_read(prophet_bw_t *bw, prophet_bw_sample_t *out)
{
    (void)bw;
    (void)out;
    return -ENOSYS;
}

void prophet_bw_close(prophet_bw_t *bw)
{
    (void)bw;
}
