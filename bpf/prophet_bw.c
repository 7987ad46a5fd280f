/* libprophet_bw: the throughput source behind include/prophet/bw.h.
 *
 * Four sources, all read the same way by prophet_bw_read():
 *  - in-process: this process loads prophet_bw.bpf.c itself (root or CAP_BPF+CAP_PERFMON);
 *  - shared: one probe for the host, loaded and pinned by the first process that wanted it, read
 *    by the others; its ownership passes on when the owner goes (bw.h);
 *  - daemon: the maps prophet-bwmon pinned in a bpffs directory, opened read-only;
 *  - daemon shm: prophet-bwmon's POSIX shared-memory snapshot, for kernels that refuse bpf() to
 *    users (older kernels with kernel.unprivileged_bpf_disabled != 0 refuse even BPF_OBJ_GET). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "prophet/bw.h"
#include "prophet/bw_plugin.h"
#include "prophet_bw_internal.h"
#include "prophet_bw.skel.h"

struct prophet_bw_probe {
    struct prophet_bw_bpf *skel;
    const char *kind;
};

struct prophet_bw {
    prophet_bw_source_t source;
    uint32_t pid;
    struct prophet_bw_probe *probe; /* in-process */
    int proc_fd;                    /* in-process or pinned */
    int host_fd;
    int ncpu;
    struct prophet_bw_counts *percpu;
    char pin_proc[512]; /* pinned path, checked on every read: gone means the daemon stopped */
    /* shared probe */
    char pin_dir[400];
    int lock_fd;    /* the host's lock file; the owner holds a write lock on it */
    int owner_pid;  /* whose pins proc_fd and host_fd are (getpid() when this one owns) */
    int cannot_own; /* loading failed here once (no privilege): only follow */
    const struct prophet_bw_shm *shm;
    size_t shm_len;
    /* smoothing */
    int have_prev;
    int have_rate;
    int64_t prev_t_us;
    uint64_t prev_tx, prev_rx;
    double tx_Bps, rx_Bps;
};

static void prophet_bw_why(char *why, size_t len, const char *fmt, ...)
{
    if (!why || !len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

int64_t prophet_bw_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

const char *prophet_bw_source_name(prophet_bw_source_t source)
{
    switch (source) {
    case PROPHET_BW_INPROCESS:
        return "in-process";
    case PROPHET_BW_DAEMON:
        return "daemon";
    case PROPHET_BW_DAEMON_SHM:
        return "daemon-shm";
    case PROPHET_BW_SHARED:
        return "shared";
    default:
        return "none";
    }
}

/* ---------------------------------------------------------------- the probe in this process */

static int prophet_bw_libbpf_trace(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    (void)level;
    return vfprintf(stderr, fmt, ap);
}

static int prophet_bw_libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    (void)level;
    (void)fmt;
    (void)ap;
    return 0;
}

static int prophet_bw_debug_trace(void)
{
    const char *d = getenv("PROPHET_DEBUG");
    return d && !strcasecmp(d, "TRACE");
}

static const char *prophet_bw_errno_hint(int err)
{
    if (err == EPERM || err == EACCES)
        return "no permission to load BPF (needs root or CAP_BPF+CAP_PERFMON)";
    if (err == ENOENT || err == ESRCH)
        return "tracepoint sock:sock_send_length not found (kernel older than 5.19?)";
    return strerror(err);
}

/* One attempt: raw tracepoints (use_raw) or classic tracepoints. */
static int prophet_bw_probe_try(struct prophet_bw_probe *p, int use_raw, uint32_t only_tgid)
{
    struct prophet_bw_bpf *skel = prophet_bw_bpf__open();
    int err;
    if (!skel)
        return errno ? -errno : -EINVAL;
    skel->rodata->prophet_only_tgid = only_tgid;
    /* open succeeded: load/attach errors come back as negative errno from libbpf */
    bpf_program__set_autoload(skel->progs.prophet_raw_send, use_raw);
    bpf_program__set_autoload(skel->progs.prophet_raw_recv, use_raw);
    bpf_program__set_autoload(skel->progs.prophet_tp_send, !use_raw);
    bpf_program__set_autoload(skel->progs.prophet_tp_recv, !use_raw);
    err = prophet_bw_bpf__load(skel);
    if (err)
        goto fail;
    err = prophet_bw_bpf__attach(skel);
    if (err)
        goto fail;
    p->skel = skel;
    p->kind = use_raw ? "raw_tp" : "tp";
    return 0;
fail:
    prophet_bw_bpf__destroy(skel);
    return err < 0 ? err : -EINVAL;
}

int prophet_bw_probe_load(struct prophet_bw_probe **out, uint32_t only_tgid, char *why,
                          size_t why_len)
{
    struct prophet_bw_probe *p = calloc(1, sizeof(*p));
    int err;
    *out = NULL;
    if (!p) {
        prophet_bw_why(why, why_len, "in-process probe: out of memory");
        return -ENOMEM;
    }
    libbpf_print_fn_t old = libbpf_set_print(prophet_bw_debug_trace() ? prophet_bw_libbpf_trace
                                                                      : prophet_bw_libbpf_quiet);
    err = prophet_bw_probe_try(p, 1, only_tgid);
    if (err) {
        int err_tp = prophet_bw_probe_try(p, 0, only_tgid);
        if (!err_tp)
            err = 0;
    }
    libbpf_set_print(old);
    if (err) {
        prophet_bw_why(why, why_len, "in-process probe: %s", prophet_bw_errno_hint(-err));
        free(p);
        return err;
    }
    *out = p;
    return 0;
}

int prophet_bw_probe_proc_fd(const struct prophet_bw_probe *p)
{
    return bpf_map__fd(p->skel->maps.prophet_proc);
}

int prophet_bw_probe_host_fd(const struct prophet_bw_probe *p)
{
    return bpf_map__fd(p->skel->maps.prophet_host);
}

const char *prophet_bw_probe_kind(const struct prophet_bw_probe *p)
{
    return p->kind;
}

void prophet_bw_probe_destroy(struct prophet_bw_probe *p)
{
    if (!p)
        return;
    prophet_bw_bpf__destroy(p->skel);
    free(p);
}

int prophet_bw_sum_percpu(int fd, const void *key, int ncpu, struct prophet_bw_counts *buf,
                          struct prophet_bw_counts *out)
{
    memset(out, 0, sizeof(*out));
    if (bpf_map_lookup_elem(fd, key, buf))
        return errno ? -errno : -EIO;
    for (int i = 0; i < ncpu; i++) {
        out->tx_bytes += buf[i].tx_bytes;
        out->rx_bytes += buf[i].rx_bytes;
        out->tx_calls += buf[i].tx_calls;
        out->rx_calls += buf[i].rx_calls;
    }
    return 0;
}

/* ---------------------------------------------------------------- shared-memory export */

void prophet_bw_shm_name(const char *pin_dir, char *buf, size_t len)
{
    if (!pin_dir || !*pin_dir || !strcmp(pin_dir, PROPHET_BW_PIN_DEFAULT)) {
        snprintf(buf, len, "%s", PROPHET_BW_SHM_DEFAULT);
        return;
    }
    uint32_t h = 2166136261u; /* FNV-1a of the path, so that each pin dir has its own export */
    for (const unsigned char *c = (const unsigned char *)pin_dir; *c; c++)
        h = (h ^ *c) * 16777619u;
    snprintf(buf, len, "%s-%08x", PROPHET_BW_SHM_DEFAULT, h);
}

/* Copies the host counters and the pid's entry under the seqlock. */
static int prophet_bw_shm_snapshot(const struct prophet_bw_shm *shm, uint32_t pid, int64_t *t_us,
                                   struct prophet_bw_counts *host, uint64_t *tx, uint64_t *rx)
{
    for (int tries = 0; tries < 1000; tries++) {
        uint32_t s1 = __atomic_load_n(&shm->seq, __ATOMIC_ACQUIRE);
        if (s1 & 1) {
            sched_yield();
            continue;
        }
        uint32_t n = shm->nprocs;
        if (n > shm->capacity || n > PROPHET_BW_MAX_PROCS)
            n = 0;
        *t_us = shm->t_us;
        *host = shm->host;
        *tx = *rx = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (shm->procs[i].tgid == pid) {
                *tx = shm->procs[i].tx_bytes;
                *rx = shm->procs[i].rx_bytes;
                break;
            }
        }
#if defined(__SANITIZE_THREAD__)
        /* TSan has no fences; the writer is another process, so only the ordering matters. */
        if (__atomic_load_n(&shm->seq, __ATOMIC_SEQ_CST) == s1)
            return 0;
#else
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&shm->seq, __ATOMIC_RELAXED) == s1)
            return 0;
#endif
    }
    return -EAGAIN;
}

static int prophet_bw_open_shm(prophet_bw_t *bw, const char *pin_dir, char *why, size_t why_len)
{
    char name[128];
    struct stat st;
    prophet_bw_shm_name(pin_dir, name, sizeof(name));
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0) {
        int err = errno;
        prophet_bw_why(why, why_len, "prophet-bwmon: no export /dev/shm%s (%s)", name,
                       strerror(err));
        return -err;
    }
    if (fstat(fd, &st) || (size_t)st.st_size < sizeof(struct prophet_bw_shm)) {
        close(fd);
        prophet_bw_why(why, why_len, "prophet-bwmon: export /dev/shm%s is truncated", name);
        return -EINVAL;
    }
    void *m = mmap(NULL, sizeof(struct prophet_bw_shm), PROT_READ, MAP_SHARED, fd, 0);
    int err = errno;
    close(fd);
    if (m == MAP_FAILED) {
        prophet_bw_why(why, why_len, "prophet-bwmon: mmap /dev/shm%s: %s", name, strerror(err));
        return -err;
    }
    const struct prophet_bw_shm *shm = m;
    if (__atomic_load_n(&shm->magic, __ATOMIC_ACQUIRE) != PROPHET_BW_SHM_MAGIC ||
        shm->version != PROPHET_BW_SHM_VERSION) {
        munmap(m, sizeof(struct prophet_bw_shm));
        prophet_bw_why(why, why_len, "prophet-bwmon: export /dev/shm%s has an unknown format",
                       name);
        return -EINVAL;
    }
    bw->shm = shm;
    bw->shm_len = sizeof(struct prophet_bw_shm);
    bw->source = PROPHET_BW_DAEMON_SHM;
    return 0;
}

/* ---------------------------------------------------------------- one probe per host (shared) */

#define PROPHET_BW_SHARED_PREFIX "prophet_rk_"
#define PROPHET_BW_SHARED_WAIT_US 5000000 /* for the owner's pins to appear, at open */

static void prophet_bw_shared_pin_path(const prophet_bw_t *bw, const char *what, int pid, char *buf,
                                       size_t len)
{
    snprintf(buf, len, "%s/" PROPHET_BW_SHARED_PREFIX "%s_%d", bw->pin_dir, what, pid);
}

/* The pid that holds the write lock on the host's lock file, 0 when none, negative errno. */
static int prophet_bw_shared_holder(int fd)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_GETLK, &fl))
        return -errno;
    return fl.l_type == F_UNLCK ? 0 : (int)fl.l_pid;
}

static int prophet_bw_shared_lock(int fd, short type)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET};
    return fcntl(fd, F_SETLK, &fl) ? -errno : 0;
}

/* Removes the pins a former owner left (it was killed before it could). */
static void prophet_bw_shared_unpin_stale(const prophet_bw_t *bw)
{
    DIR *d = opendir(bw->pin_dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strncmp(e->d_name, PROPHET_BW_SHARED_PREFIX, strlen(PROPHET_BW_SHARED_PREFIX)))
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

static int prophet_bw_shared_pin(int fd, const char *path)
{
    if (bpf_obj_pin(fd, path))
        return -errno;
    return chmod(path, 0644) ? -errno : 0;
}

static void prophet_bw_shared_drop(prophet_bw_t *bw)
{
    if (bw->probe) {
        prophet_bw_probe_destroy(bw->probe); /* owns proc_fd and host_fd */
        bw->probe = NULL;
    } else {
        if (bw->proc_fd >= 0)
            close(bw->proc_fd);
        if (bw->host_fd >= 0)
            close(bw->host_fd);
    }
    bw->proc_fd = bw->host_fd = -1;
    bw->owner_pid = 0;
    bw->have_prev = 0; /* other counters: the next interval starts afresh, the rate goes on */
}

/* 0 when dir is on a bpffs, or would be made on one; -ENOTSUP on another filesystem. */
static int prophet_bw_shared_on_bpffs(const char *dir)
{
    struct statfs sf;
    char parent[400];
    if (statfs(dir, &sf) == 0)
        return (unsigned long)sf.f_type == BPF_FS_MAGIC ? 0 : -ENOTSUP;
    if (errno != ENOENT)
        return -errno;
    snprintf(parent, sizeof(parent), "%s", dir);
    char *slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return -ENOTSUP;
    *slash = '\0';
    if (statfs(parent, &sf))
        return -errno;
    return (unsigned long)sf.f_type == BPF_FS_MAGIC ? 0 : -ENOTSUP;
}

/* Takes the ownership: the lock, then the probe for every process, then the pins. 0, -EBUSY when
 * another process holds the lock, or another negative errno (lock released). */
static int prophet_bw_shared_take(prophet_bw_t *bw, char *why, size_t why_len)
{
    char proc_path[512], host_path[512];
    int err = prophet_bw_shared_on_bpffs(bw->pin_dir);
    if (err) {
        prophet_bw_why(why, why_len, "shared probe: %s is not on a bpffs (%s)", bw->pin_dir,
                       strerror(-err));
        bw->cannot_own = 1;
        return err;
    }
    err = prophet_bw_shared_lock(bw->lock_fd, F_WRLCK);
    if (err)
        return err == -EAGAIN || err == -EACCES ? -EBUSY : err;
    prophet_bw_shared_drop(bw);
    err = prophet_bw_probe_load(&bw->probe, 0, why, why_len);
    if (err) {
        bw->cannot_own = 1;
        goto fail;
    }
    bw->proc_fd = prophet_bw_probe_proc_fd(bw->probe);
    bw->host_fd = prophet_bw_probe_host_fd(bw->probe);
    prophet_bw_shared_unpin_stale(bw);
    if (mkdir(bw->pin_dir, 0755) == 0)
        chmod(bw->pin_dir, 0755);
    prophet_bw_shared_pin_path(bw, "host", (int)getpid(), host_path, sizeof(host_path));
    prophet_bw_shared_pin_path(bw, "proc", (int)getpid(), proc_path, sizeof(proc_path));
    /* host first: a follower that opens proc finds host there too */
    err = prophet_bw_shared_pin(bw->host_fd, host_path);
    if (!err)
        err = prophet_bw_shared_pin(bw->proc_fd, proc_path);
    if (err) {
        prophet_bw_why(why, why_len, "shared probe: cannot pin in %s: %s", bw->pin_dir,
                       strerror(-err));
        unlink(host_path);
        bw->cannot_own = 1;
        goto fail;
    }
    bw->owner_pid = (int)getpid();
    return 0;
fail:
    prophet_bw_shared_drop(bw);
    prophet_bw_shared_lock(bw->lock_fd, F_UNLCK);
    return err;
}

/* Opens the pins of owner pid, read-only. -ENOENT while the owner has not pinned them yet. */
static int prophet_bw_shared_follow(prophet_bw_t *bw, int pid)
{
    char proc_path[512], host_path[512];
    LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = BPF_F_RDONLY);
    prophet_bw_shared_drop(bw);
    prophet_bw_shared_pin_path(bw, "proc", pid, proc_path, sizeof(proc_path));
    prophet_bw_shared_pin_path(bw, "host", pid, host_path, sizeof(host_path));
    int pfd = bpf_obj_get_opts(proc_path, &opts);
    if (pfd < 0)
        return -errno;
    int hfd = bpf_obj_get_opts(host_path, &opts);
    if (hfd < 0) {
        int err = -errno;
        close(pfd);
        return err;
    }
    bw->proc_fd = pfd;
    bw->host_fd = hfd;
    bw->owner_pid = pid;
    return 0;
}

/* Before a read: follows the owner of now, or becomes it when there is none. 0: the maps are the
 * owner's; -EAGAIN: the owner has not pinned yet (or is leaving); another negative errno. */
static int prophet_bw_shared_sync(prophet_bw_t *bw, char *why, size_t why_len)
{
    if (bw->probe)
        return 0; /* the owner: its lock lives as long as it does */
    for (int tries = 0; tries < 4; tries++) {
        int pid = prophet_bw_shared_holder(bw->lock_fd);
        if (pid < 0)
            return pid;
        if (pid == 0) {
            if (bw->cannot_own) {
                prophet_bw_shared_drop(bw);
                prophet_bw_why(why, why_len, "shared probe: no owner, and none can load it here");
                return -EAGAIN;
            }
            int err = prophet_bw_shared_take(bw, why, why_len);
            if (err != -EBUSY)
                return err;
            continue; /* another process took it meanwhile: follow it */
        }
        if (pid == bw->owner_pid && bw->proc_fd >= 0)
            return 0;
        int err = prophet_bw_shared_follow(bw, pid);
        return err == -ENOENT ? -EAGAIN : err;
    }
    return -EAGAIN;
}

static void prophet_bw_shared_lock_path(const char *pin_dir, char *buf, size_t len)
{
    char name[128];
    prophet_bw_shm_name(pin_dir, name, sizeof(name));
    snprintf(buf, len, "/dev/shm%s.ranks", name);
}

static int prophet_bw_open_shared(prophet_bw_t *bw, const char *pin_dir, char *why, size_t why_len)
{
    char lock_path[256];
    int err;
    snprintf(bw->pin_dir, sizeof(bw->pin_dir), "%s", pin_dir);
    prophet_bw_shared_lock_path(pin_dir, lock_path, sizeof(lock_path));
    bw->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (bw->lock_fd >= 0) {
        fchmod(bw->lock_fd, 0666); /* any user may follow, or own where it may load */
    } else if (errno == EACCES) {
        bw->lock_fd = open(lock_path, O_RDONLY | O_CLOEXEC);
        bw->cannot_own = 1;
    }
    if (bw->lock_fd < 0) {
        err = -errno;
        prophet_bw_why(why, why_len, "shared probe: cannot open %s (%s)", lock_path,
                       strerror(errno));
        return err;
    }
    bw->source = PROPHET_BW_SHARED;
    int64_t deadline = prophet_bw_now_us() + PROPHET_BW_SHARED_WAIT_US;
    while ((err = prophet_bw_shared_sync(bw, why, why_len)) == -EAGAIN && !bw->cannot_own &&
           prophet_bw_now_us() < deadline) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL); /* the owner is still loading its probe */
    }
    if (err == -EAGAIN)
        prophet_bw_why(why, why_len, "shared probe: the owner (pid %d) pinned nothing in %s",
                       prophet_bw_shared_holder(bw->lock_fd), pin_dir);
    return err;
}

static void prophet_bw_close_shared(prophet_bw_t *bw)
{
    if (bw->probe) {
        char path[512];
        prophet_bw_shared_pin_path(bw, "proc", (int)getpid(), path, sizeof(path));
        unlink(path); /* followers see it gone, then the lock free: one of them takes over */
        prophet_bw_shared_pin_path(bw, "host", (int)getpid(), path, sizeof(path));
        unlink(path);
    }
    prophet_bw_shared_drop(bw);
    if (bw->lock_fd >= 0)
        close(bw->lock_fd); /* releases the lock */
    bw->lock_fd = -1;
}

/* ---------------------------------------------------------------- pinned maps */

static int prophet_bw_open_pinned(prophet_bw_t *bw, const char *pin_dir, char *why, size_t why_len)
{
    char host_path[512];
    LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = BPF_F_RDONLY);
    snprintf(bw->pin_proc, sizeof(bw->pin_proc), "%s/%s", pin_dir, PROPHET_BW_MAP_PROC);
    snprintf(host_path, sizeof(host_path), "%s/%s", pin_dir, PROPHET_BW_MAP_HOST);
    int pfd = bpf_obj_get_opts(bw->pin_proc, &opts);
    if (pfd < 0) {
        int err = errno;
        prophet_bw_why(why, why_len, "prophet-bwmon: cannot open %s (%s)", bw->pin_proc,
                       strerror(err));
        return -err;
    }
    int hfd = bpf_obj_get_opts(host_path, &opts);
    if (hfd < 0) {
        int err = errno;
        close(pfd);
        prophet_bw_why(why, why_len, "prophet-bwmon: cannot open %s (%s)", host_path,
                       strerror(err));
        return -err;
    }
    bw->proc_fd = pfd;
    bw->host_fd = hfd;
    bw->source = PROPHET_BW_DAEMON;
    return 0;
}

/* Pinned maps, else the shm export. */
static int prophet_bw_open_daemon(prophet_bw_t *bw, const char *pin_dir, char *why, size_t len)
{
    char why_pin[256] = "";
    int err_pin = prophet_bw_open_pinned(bw, pin_dir, why_pin, sizeof(why_pin));
    if (!err_pin)
        return 0;
    int err_shm = prophet_bw_open_shm(bw, pin_dir, why, len);
    if (!err_shm)
        return 0;
    if (err_pin == -ENOENT && err_shm == -ENOENT)
        prophet_bw_why(why, len, "prophet-bwmon is not running (no %s)", bw->pin_proc);
    else if (err_pin != -ENOENT)
        prophet_bw_why(why, len, "%s", why_pin);
    return err_pin != -ENOENT ? err_pin : err_shm;
}

static int prophet_bw_open_inprocess(prophet_bw_t *bw, int only, char *why, size_t why_len)
{
    int err = prophet_bw_probe_load(&bw->probe, only ? bw->pid : 0, why, why_len);
    if (err)
        return err;
    bw->proc_fd = prophet_bw_probe_proc_fd(bw->probe);
    bw->host_fd = prophet_bw_probe_host_fd(bw->probe);
    bw->source = PROPHET_BW_INPROCESS;
    return 0;
}

prophet_bw_t *prophet_bw_open(const prophet_bw_opts_t *opts, char *why, size_t why_len)
{
    size_t wl = why ? why_len : 0;
    char why2[256] = "", why3[256] = "";
    int mode = PROPHET_BW_OPTS_GET(opts, mode, PROPHET_BW_OPEN_AUTO);
    const char *pin_dir = PROPHET_BW_OPTS_GET(opts, pin_dir, NULL);
    int pid = PROPHET_BW_OPTS_GET(opts, pid, 0);
    int err = -EINVAL, only = (mode & PROPHET_BW_OPEN_ONLY_PID) != 0;

    mode &= ~PROPHET_BW_OPEN_ONLY_PID;
    if (!pin_dir || !*pin_dir)
        pin_dir = PROPHET_BW_PIN_DEFAULT;
    if (wl)
        why[0] = '\0';
    if (!prophet_bw_opts_valid(opts)) {
        prophet_bw_why(why, wl, "options of %zu bytes this library cannot take (it knows %zu)",
                       opts->sz, sizeof(prophet_bw_opts_t));
        return NULL;
    }
    if (mode == PROPHET_BW_OPEN_OFF) {
        prophet_bw_why(why, wl, "throughput probe disabled");
        return NULL;
    }
    if (mode < PROPHET_BW_OPEN_AUTO || mode > PROPHET_BW_OPEN_DAEMON_SHM) {
        prophet_bw_why(why, wl, "unknown throughput source mode %d", mode);
        return NULL;
    }
    prophet_bw_t *bw = calloc(1, sizeof(*bw));
    if (!bw) {
        prophet_bw_why(why, wl, "out of memory");
        return NULL;
    }
    bw->proc_fd = bw->host_fd = bw->lock_fd = -1;
    bw->pid = pid > 0 ? (uint32_t)pid : (uint32_t)getpid();

    switch (mode) {
    case PROPHET_BW_OPEN_PROCESS:
        err = prophet_bw_open_inprocess(bw, only, why, wl);
        break;
    case PROPHET_BW_OPEN_DAEMON:
        err = prophet_bw_open_daemon(bw, pin_dir, why, wl);
        break;
    case PROPHET_BW_OPEN_DAEMON_SHM:
        err = prophet_bw_open_shm(bw, pin_dir, why, wl);
        break;
    case PROPHET_BW_OPEN_SHARED:
        err = prophet_bw_open_shared(bw, pin_dir, why, wl);
        break;
    default:
        /* One probe per host, whatever the number of ranks: a running prophet-bwmon's, else the
         * one the host's first rank loaded; a probe of this process's own only when neither can
         * be had (no bpffs, or pinning refused). */
        err = prophet_bw_open_daemon(bw, pin_dir, why2, sizeof(why2));
        if (err)
            err = prophet_bw_open_shared(bw, pin_dir, why3, sizeof(why3));
        if (err) {
            prophet_bw_close_shared(bw);
            err = prophet_bw_open_inprocess(bw, only, why, wl);
        }
        if (err && wl) {
            size_t n = strlen(why);
            snprintf(why + n, wl - n, "; %s; %s", why3, why2);
        }
        break;
    }
    if (err)
        goto fail;
    bw->ncpu = libbpf_num_possible_cpus();
    if (bw->source != PROPHET_BW_DAEMON_SHM) {
        if (bw->ncpu <= 0) {
            prophet_bw_why(why, wl, "cannot count possible CPUs");
            goto fail;
        }
        bw->percpu = calloc((size_t)bw->ncpu, sizeof(*bw->percpu));
        if (!bw->percpu) {
            prophet_bw_why(why, wl, "out of memory");
            goto fail;
        }
    }
    return bw;
fail:
    prophet_bw_close(bw);
    return NULL;
}

prophet_bw_source_t prophet_bw_source(const prophet_bw_t *bw)
{
    return bw ? bw->source : PROPHET_BW_NONE;
}

static void prophet_bw_smooth(prophet_bw_t *bw, prophet_bw_sample_t *s)
{
    if (bw->have_prev && s->t_us > bw->prev_t_us) {
        double dt = (double)(s->t_us - bw->prev_t_us) / 1e6;
        double tx = (double)(s->tx_bytes - bw->prev_tx) / dt;
        double rx = (double)(s->rx_bytes - bw->prev_rx) / dt;
        if (!bw->have_rate) {
            bw->tx_Bps = tx;
            bw->rx_Bps = rx;
            bw->have_rate = 1;
        } else {
            double a = 1.0 - exp(-dt * 1e6 / PROPHET_BW_TAU_US);
            bw->tx_Bps += a * (tx - bw->tx_Bps);
            bw->rx_Bps += a * (rx - bw->rx_Bps);
        }
    }
    if (!bw->have_prev || s->t_us > bw->prev_t_us) {
        bw->have_prev = 1;
        bw->prev_t_us = s->t_us;
        bw->prev_tx = s->tx_bytes;
        bw->prev_rx = s->rx_bytes;
    }
    s->tx_Bps = bw->tx_Bps;
    s->rx_Bps = bw->rx_Bps;
}

static int prophet_bw_read_maps(prophet_bw_t *bw, prophet_bw_sample_t *s)
{
    struct prophet_bw_counts c;
    uint32_t zero = 0;
    int err;
    if (bw->source == PROPHET_BW_DAEMON && access(bw->pin_proc, F_OK))
        return -ESTALE; /* prophet-bwmon removed its pins: the probe is detached */
    s->t_us = prophet_bw_now_us();
    err = prophet_bw_sum_percpu(bw->host_fd, &zero, bw->ncpu, bw->percpu, &c);
    if (err)
        return err;
    s->host_tx_bytes = c.tx_bytes;
    s->host_rx_bytes = c.rx_bytes;
    err = prophet_bw_sum_percpu(bw->proc_fd, &bw->pid, bw->ncpu, bw->percpu, &c);
    if (err == -ENOENT)
        memset(&c, 0, sizeof(c)); /* no TCP traffic from this process yet */
    else if (err)
        return err;
    s->tx_bytes = c.tx_bytes;
    s->rx_bytes = c.rx_bytes;
    return 0;
}

static int prophet_bw_read_shm(prophet_bw_t *bw, prophet_bw_sample_t *s)
{
    struct prophet_bw_counts host;
    int err =
        prophet_bw_shm_snapshot(bw->shm, bw->pid, &s->t_us, &host, &s->tx_bytes, &s->rx_bytes);
    if (err)
        return err;
    int64_t period = bw->shm->period_us > 0 ? bw->shm->period_us : 100000;
    int64_t limit = period * 20 > 2000000 ? period * 20 : 2000000;
    if (prophet_bw_now_us() - s->t_us > limit)
        return -ESTALE; /* prophet-bwmon stopped updating */
    s->host_tx_bytes = host.tx_bytes;
    s->host_rx_bytes = host.rx_bytes;
    return 0;
}

int prophet_bw_read(prophet_bw_t *bw, prophet_bw_sample_t *out)
{
    prophet_bw_sample_t s;
    int err;
    if (!bw || !out)
        return -EINVAL;
    memset(&s, 0, sizeof(s));
    if (bw->source == PROPHET_BW_DAEMON_SHM)
        err = prophet_bw_read_shm(bw, &s);
    else if (bw->source == PROPHET_BW_SHARED && (err = prophet_bw_shared_sync(bw, NULL, 0)) != 0)
        return err;
    else
        err = prophet_bw_read_maps(bw, &s);
    if (err)
        return err;
    prophet_bw_smooth(bw, &s);
    *out = s;
    return 0;
}

void prophet_bw_close(prophet_bw_t *bw)
{
    if (!bw)
        return;
    if (bw->source == PROPHET_BW_SHARED || bw->lock_fd >= 0)
        prophet_bw_close_shared(bw);
    if (bw->probe) {
        prophet_bw_probe_destroy(bw->probe); /* owns proc_fd and host_fd */
    } else {
        if (bw->proc_fd >= 0)
            close(bw->proc_fd);
        if (bw->host_fd >= 0)
            close(bw->host_fd);
    }
    if (bw->shm)
        munmap((void *)bw->shm, bw->shm_len);
    free(bw->percpu);
    free(bw);
}
