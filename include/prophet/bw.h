/* Live socket throughput (bpf/). The preload (through its plugin: bw_plugin.h), prophet-bwmon
 * and the bpf tests use this; it hides whether the numbers come from an in-process probe, from
 * prophet-bwmon's pinned maps, or from prophet-bwmon's shared-memory export. Counted: TCP payload
 * bytes (IPv4 and IPv6) returned by sendmsg()/recvmsg() and everything built on them (send, write,
 * sendfile/splice into a socket, io_uring), per process (tgid) and per host. Not counted: MSG_PEEK,
 * UDP, RDMA/InfiniBand verbs, NVLink. */
#ifndef PROPHET_BW_H
#define PROPHET_BW_H

#include <stddef.h>
#include <stdint.h>

typedef struct prophet_bw prophet_bw_t;

typedef enum prophet_bw_source {
    PROPHET_BW_NONE = 0,
    PROPHET_BW_INPROCESS,  /* this process loaded the probe */
    PROPHET_BW_DAEMON,     /* reading prophet-bwmon's pinned maps */
    PROPHET_BW_DAEMON_SHM, /* reading prophet-bwmon's shared-memory export (bpf() refused) */
    PROPHET_BW_SHARED,     /* one probe for the host, loaded by the first process that wanted it */
} prophet_bw_source_t;

typedef struct prophet_bw_sample {
    int64_t t_us;      /* CLOCK_MONOTONIC time the counters were taken */
    uint64_t tx_bytes; /* cumulative, this process (tgid) */
    uint64_t rx_bytes;
    uint64_t host_tx_bytes; /* cumulative, whole host */
    uint64_t host_rx_bytes;
    double tx_Bps; /* smoothed, this process (bytes per second) */
    double rx_Bps;
} prophet_bw_sample_t;

/* Time constant of the smoothed rates: each read moves the rate towards the rate seen since the
 * previous read by 1 - exp(-dt / PROPHET_BW_TAU_US); the first interval sets it directly. */
#define PROPHET_BW_TAU_US 500000

/* open modes: the values of prophet_bwmon_mode_t (config.h). */
#define PROPHET_BW_OPEN_AUTO 0       /* prophet-bwmon, else shared, else in-process, (else NULL) */
#define PROPHET_BW_OPEN_OFF 1        /* always NULL, reason "disabled" */
#define PROPHET_BW_OPEN_PROCESS 2    /* only the in-process probe (root or CAP_BPF+CAP_PERFMON) */
#define PROPHET_BW_OPEN_DAEMON 3     /* only prophet-bwmon: pinned maps, else its shm export */
#define PROPHET_BW_OPEN_SHARED 4     /* only the host's shared probe (see below) */
#define PROPHET_BW_OPEN_DAEMON_SHM 5 /* only prophet-bwmon's shm export (tests, diagnosis) */
/* The shared probe: the first process that opens it loads the probe for the whole host and pins
 * its maps in pin_dir (prophet_rk_proc_<pid>, prophet_rk_host_<pid>); it holds a POSIX write lock
 * on /dev/shm/prophet-bw[-<hash of pin_dir>].ranks while it lives. Every other process opens the
 * owner's pins read-only. When the owner exits or dies, the next read of another process takes the
 * ownership over (it loads the probe and pins its own maps); the others follow. One program runs
 * on a socket call, whatever the number of ranks on the host. */
/* Or'd into the mode: an in-process probe counts only the followed process (its host counters
 * are then that process's too). What a rank opens for itself: with N ranks on a host, N probes
 * run on every socket call, and each but one leaves before touching a map. No effect on the
 * daemon's counters, which count every process. */
#define PROPHET_BW_OPEN_ONLY_PID 0x100

/* What prophet_bw_open takes, as libbpf's opts structs: sz is the size of the struct the caller
 * was built with (PROPHET_BW_OPTS sets it), so that fields can be added at the end. An
 * implementation reads only the fields within sz (older callers: the defaults below) and refuses
 * a larger struct whose fields past its own end are not all zero (a newer caller asking for
 * something it does not know). No padding: every field starts where the previous one ends. */
typedef struct prophet_bw_opts {
    size_t sz;           /* sizeof(prophet_bw_opts_t) of the caller */
    const char *pin_dir; /* prophet-bwmon's bpffs dir (NULL, or absent: /sys/fs/bpf/prophet) */
    int mode;            /* PROPHET_BW_OPEN_* (absent: PROPHET_BW_OPEN_AUTO) */
    int pid;             /* the process to follow (<= 0, or absent: this one) */
} prophet_bw_opts_t;

/* Declares prophet_bw_opts_t NAME with its size set and the fields given, the others zero:
 *   PROPHET_BW_OPTS(opts, .mode = PROPHET_BW_OPEN_DAEMON, .pin_dir = dir); */
#define PROPHET_BW_OPTS(name, ...)                                                                 \
    prophet_bw_opts_t name = {.sz = sizeof(prophet_bw_opts_t), __VA_ARGS__}

/* opts: NULL for every default. Returns NULL (and a one-line reason in why) when no source can be
 * had; never crashes, prints nothing (libbpf's output too, unless PROPHET_DEBUG=TRACE). */
prophet_bw_t *prophet_bw_open(const prophet_bw_opts_t *opts, char *why, size_t why_len);
prophet_bw_source_t prophet_bw_source(const prophet_bw_t *bw);
const char *prophet_bw_source_name(prophet_bw_source_t source); /* "in-process", "daemon", ... */
/* Reads the counters now and updates the smoothed rates. 0 ok, negative errno on error
 * (-ESTALE: prophet-bwmon stopped; close and open again; -EAGAIN: the shared probe is changing
 * hands, read again later). Not thread-safe per handle. */
int prophet_bw_read(prophet_bw_t *bw, prophet_bw_sample_t *out);
void prophet_bw_close(prophet_bw_t *bw);

#endif
