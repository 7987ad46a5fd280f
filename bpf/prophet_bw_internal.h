/* Internals shared by libprophet_bw (prophet_bw.c) and prophet-bwmon: loading the probe, summing
 * per-CPU counters, and the layout of the shared-memory export. Not a public header. */
#ifndef PROPHET_BW_INTERNAL_H
#define PROPHET_BW_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "prophet_bw.h"

/* ---- the probe, loaded in this process ---- */
struct prophet_bw_probe;

/* Loads and attaches the probe (raw tracepoints, else classic tracepoints). libbpf's own output is
 * silenced unless PROPHET_DEBUG=TRACE. 0 or a negative errno, with a one-line reason in why. */
/* only_tgid: count only that process's calls (0: every process). */
int prophet_bw_probe_load(struct prophet_bw_probe **out, uint32_t only_tgid, char *why,
                          size_t why_len);
int prophet_bw_probe_proc_fd(const struct prophet_bw_probe *p);
int prophet_bw_probe_host_fd(const struct prophet_bw_probe *p);
const char *prophet_bw_probe_kind(const struct prophet_bw_probe *p); /* "raw_tp" or "tp" */
void prophet_bw_probe_destroy(struct prophet_bw_probe *p);

/* Sums one per-CPU value of map fd over all possible CPUs. buf holds ncpu values.
 * 0, -ENOENT when the key is absent, or another negative errno. */
int prophet_bw_sum_percpu(int fd, const void *key, int ncpu, struct prophet_bw_counts *buf,
                          struct prophet_bw_counts *out);

int64_t prophet_bw_now_us(void);

/* ---- the shared-memory export of prophet-bwmon (for kernels that refuse bpf() to users) ---- */
#define PROPHET_BW_SHM_MAGIC 0x31777062u /* "pbw1" */
#define PROPHET_BW_SHM_VERSION 1u
#define PROPHET_BW_SHM_DEFAULT "/prophet-bw" /* /dev/shm/prophet-bw */

struct prophet_bw_shm_proc {
    uint32_t tgid;
    uint32_t pad;
    uint64_t tx_bytes;
    uint64_t rx_bytes;
};

struct prophet_bw_shm {
    uint32_t magic; /* written last by the daemon: a reader trusts nothing before it */
    uint32_t version;
    uint32_t seq; /* seqlock: odd while the daemon writes */
    uint32_t nprocs;
    int64_t t_us;      /* CLOCK_MONOTONIC time of the snapshot */
    int64_t period_us; /* the daemon's update period */
    int32_t daemon_pid;
    uint32_t capacity; /* entries in procs[] */
    struct prophet_bw_counts host;
    struct prophet_bw_shm_proc procs[PROPHET_BW_MAX_PROCS];
};

/* POSIX shm name ("/prophet-bw..." for shm_open) that belongs to a pin directory. */
void prophet_bw_shm_name(const char *pin_dir, char *buf, size_t len);

#define PROPHET_BW_PIN_DEFAULT "/sys/fs/bpf/prophet"

#endif
