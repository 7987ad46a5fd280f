/* prophet-bwmon: loads the TCP throughput probe once per host and pins its maps for unprivileged
 * readers (--daemon), or shows live per-process throughput (--watch). See --help. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "prophet_bw_internal.h"
#include "prophet_cli.h"

#define PROPHET_BWMON_EXIT_OK 0
#define PROPHET_BWMON_EXIT_FAIL 1
#define PROPHET_BWMON_EXIT_USAGE PROPHET_CLI_EXIT_USAGE
#define PROPHET_BWMON_PROG "prophet-bwmon"
#define PROPHET_BWMON_EXIT_PERM 3
#define PROPHET_BWMON_BPF_FS_MAGIC 0xcafe4a11

struct prophet_bwmon_opts {
    int daemon;
    int watch;
    int json;
    int pid;
    int interval_ms;
    int count;
    int top;
    int shm_period_ms;
    int no_shm;
    const char *pin_dir;
};

struct prophet_bwmon_entry {
    uint32_t tgid;
    uint64_t tx, rx;
};

static volatile sig_atomic_t prophet_bwmon_stop;

static void prophet_bwmon_on_signal(int sig)
{
    (void)sig;
    prophet_bwmon_stop = 1;
}

static void prophet_bwmon_usage(FILE *f)
{
    fputs(
        "NAME\n"
        "    prophet-bwmon - per-process TCP throughput from an eBPF probe (Prophet for NCCL)\n"
        "\n"
        "SYNOPSIS\n"
        "    prophet-bwmon --daemon [--pin DIR] [--shm-period-ms N] [--no-shm]\n"
        "    prophet-bwmon [--watch] --pid P [--json] [--interval-ms N] [--count N] [--pin DIR]\n"
        "    prophet-bwmon --watch [--json] [--interval-ms N] [--count N] [--top N] [--pin DIR]\n"
        "    prophet-bwmon --help | --version\n"
        "\n"
        "DESCRIPTION\n"
        "    The probe counts TCP payload bytes (IPv4 and IPv6) where sendmsg()/recvmsg() return,\n"
        "    on the tracepoints sock:sock_send_length and sock:sock_recv_length (MSG_PEEK and\n"
        "    failed calls excluded), per process (tgid) and for the whole host, in per-CPU maps.\n"
        "\n"
        "    --daemon loads the probe once for the host and pins its maps in DIR so that every\n"
        "    process, root or not, can read them (libprophet.so does, through prophet_bw_open).\n"
        "    It also exports the counters to POSIX shared memory for kernels that refuse bpf() to\n"
        "    unprivileged users. It runs in the foreground until SIGTERM, SIGINT or SIGHUP, then\n"
        "    removes its pins and its export.\n"
        "\n"
        "    --watch shows live send (tx) and receive (rx) throughput per process, like tcptop. "
        "It\n"
        "    reads a running daemon's pins when present, else loads the probe itself (root).\n"
        "\n"
        "OPTIONS\n"
        "    --daemon            load, pin and serve (see above)\n"
        "    --watch             print throughput every interval\n"
        "    --json              with --watch: one JSON object a line:\n"
        "                        {\"t\": seconds since start, \"pid\": P, \"comm\": name,\n"
        "                         \"tx_bytes\": N, \"rx_bytes\": N, \"tx_bps\": X, \"rx_bps\": X}\n"
        "                        tx_bytes/rx_bytes are cumulative since the probe was loaded;\n"
        "                        tx_bps/rx_bps are BYTES per second over the last interval\n"
        "    --pid P             with --watch (implied): only process P, a line every interval,\n"
        "                        even idle; stops when P exits (exit status 0); P must exist\n"
        "    --interval-ms N     with --watch: interval, default 1000\n"
        "    --count N           with --watch: stop after N intervals, default 0 (until SIGINT)\n"
        "    --top N             with --watch, table: the N busiest processes, default 20\n"
        "    --pin DIR           bpffs directory of the pinned maps, default /sys/fs/bpf/prophet\n"
        "    --shm-period-ms N   with --daemon: shared-memory export period, default 100\n"
        "    --no-shm            with --daemon: no shared-memory export\n"
        "    -h, --help          this text\n"
        "    --version           print the version and exit\n"
        "\n"
        "PRIVILEGES\n"
        "    --daemon and --watch without a daemon load BPF: root, or CAP_BPF + CAP_PERFMON\n"
        "    (+ CAP_SYS_ADMIN to mount bpffs). Readers need no privilege: the pin directory is\n"
        "    mode 0755 and the pinned maps 0644, which lets any user open them read-only\n"
        "    (BPF_OBJ_GET with BPF_F_RDONLY) on kernels >= 6.5 even with\n"
        "    kernel.unprivileged_bpf_disabled=2; older kernels refuse that, and readers then use\n"
        "    the shared-memory export (0644), which prophet_bw_open picks automatically.\n"
        "\n"
        "FILES\n"
        "    /sys/fs/bpf/prophet/prophet_proc  per-process counters (LRU per-CPU hash, key tgid)\n"
        "    /sys/fs/bpf/prophet/prophet_host  host counters (per-CPU array, one entry)\n"
        "    /dev/shm/prophet-bw               shared-memory export (seqlock snapshot); for "
        "another\n"
        "                                      --pin DIR: /dev/shm/prophet-bw-<hash of DIR>\n"
        "    /sys/fs/bpf is mounted (mount -t bpf) when DIR lies under it and it is not a bpffs.\n"
        "\n"
        "EXIT STATUS\n"
        "    0 success; 1 failure (probe not loadable, pin or export failed, daemon already\n"
        "    running, no process --pid P); 2 bad usage (one line naming the problem, then a\n"
        "    pointer to --help); 3 not permitted (not root / missing capabilities).\n"
        "\n"
        "ENVIRONMENT\n"
        "    PROPHET_DEBUG=TRACE  show libbpf's own messages\n"
        "\n"
        "EXAMPLES\n"
        "    sudo prophet-bwmon --daemon &                 # once per host\n"
        "    prophet-bwmon --watch                         # table, any user once the daemon runs\n"
        "    prophet-bwmon --watch --json --pid 1234 --interval-ms 200 --count 10\n"
        "    sudo prophet-bwmon --daemon --pin /sys/fs/bpf/prophet-test --no-shm\n",
        f);
}

/* The value of option OPT, a number MIN..10^9, into *out: 0, or -1 after the usage error. */
static int prophet_bwmon_parse_int(const char *opt, const char *s, int min, int *out)
{
    long v;
    if (prophet_cli_long_opt(PROPHET_BWMON_PROG, opt, s, min, 1000000000, &v))
        return -1;
    *out = (int)v;
    return 0;
}

/* Is process PID there and not yet exited (a zombie has exited)? */
static int prophet_bwmon_alive(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return kill(pid, 0) == 0 || errno == EPERM;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *st = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return !st || (st[1] == ' ' && st[2] != 'Z' && st[2] != 'X');
}

static int prophet_bwmon_parse(int argc, char **argv, struct prophet_bwmon_opts *o)
{
    static const struct option longopts[] = {
        {"daemon", no_argument, 0, 'd'},
        {"watch", no_argument, 0, 'w'},
        {"json", no_argument, 0, 'j'},
        {"pid", required_argument, 0, 'p'},
        {"interval-ms", required_argument, 0, 'i'},
        {"count", required_argument, 0, 'c'},
        {"top", required_argument, 0, 't'},
        {"pin", required_argument, 0, 'P'},
        {"shm-period-ms", required_argument, 0, 's'},
        {"no-shm", no_argument, 0, 'n'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0},
    };
    int c, bad = 0;
    *o = (struct prophet_bwmon_opts){
        .interval_ms = 1000, .top = 20, .shm_period_ms = 100, .pin_dir = PROPHET_BW_PIN_DEFAULT};
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1 && !bad) {
        switch (c) {
        case 'd':
            o->daemon = 1;
            break;
        case 'w':
            o->watch = 1;
            break;
        case 'j':
            o->json = 1;
            break;
        case 'p':
            bad |= prophet_bwmon_parse_int("--pid", optarg, 1, &o->pid);
            break;
        case 'i':
            bad |= prophet_bwmon_parse_int("--interval-ms", optarg, 1, &o->interval_ms);
            break;
        case 'c':
            bad |= prophet_bwmon_parse_int("--count", optarg, 0, &o->count);
            break;
        case 't':
            bad |= prophet_bwmon_parse_int("--top", optarg, 1, &o->top);
            break;
        case 'P':
            o->pin_dir = optarg;
            break;
        case 's':
            bad |= prophet_bwmon_parse_int("--shm-period-ms", optarg, 1, &o->shm_period_ms);
            break;
        case 'n':
            o->no_shm = 1;
            break;
        case 'h':
            prophet_bwmon_usage(stdout);
            exit(PROPHET_BWMON_EXIT_OK);
        case 'V':
            prophet_cli_version(PROPHET_BWMON_PROG);
            exit(PROPHET_BWMON_EXIT_OK);
        default:
            prophet_cli_getopt_error(PROPHET_BWMON_PROG, c, argv, longopts);
            return -1;
        }
    }
    if (bad)
        return -1;
    if (o->pid && !o->daemon)
        o->watch = 1; /* --pid P alone watches P */
    if (optind < argc) {
        prophet_cli_usage_error(PROPHET_BWMON_PROG, "unexpected argument '%s'", argv[optind]);
        return -1;
    }
    if (o->daemon == o->watch) {
        prophet_cli_usage_error(PROPHET_BWMON_PROG, "give exactly one of --daemon or --watch");
        return -1;
    }
    if (strlen(o->pin_dir) > 400 || o->pin_dir[0] != '/') {
        prophet_cli_bad_value(PROPHET_BWMON_PROG, "--pin", o->pin_dir, "an absolute path");
        return -1;
    }
    return 0;
}

static void prophet_bwmon_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (!prophet_bwmon_stop && nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

static int prophet_bwmon_exit_for(int err)
{
    return (err == -EPERM || err == -EACCES) ? PROPHET_BWMON_EXIT_PERM : PROPHET_BWMON_EXIT_FAIL;
}

/* Reads every tgid of the per-process map. Returns the count, or a negative errno. */
static int prophet_bwmon_collect(int proc_fd, int ncpu, struct prophet_bw_counts *percpu,
                                 struct prophet_bwmon_entry *out, int cap)
{
    uint32_t key, next;
    int n = 0;
    void *prev = NULL;
    while (n < cap && !bpf_map_get_next_key(proc_fd, prev, &next)) {
        struct prophet_bw_counts c;
        key = next;
        prev = &key;
        if (prophet_bw_sum_percpu(proc_fd, &key, ncpu, percpu, &c))
            continue; /* evicted meanwhile */
        out[n++] = (struct prophet_bwmon_entry){key, c.tx_bytes, c.rx_bytes};
    }
    return n;
}

/* ------------------------------------------------------------------------------ daemon */

struct prophet_bwmon_daemon {
    struct prophet_bw_probe *probe;
    char pin_proc[512], pin_host[512];
    int made_dir;
    char shm_name[128];
    struct prophet_bw_shm *shm;
};

static int prophet_bwmon_ensure_bpffs(const char *dir)
{
    struct statfs sf;
    if (strncmp(dir, "/sys/fs/bpf/", 12))
        return 0;
    if (!statfs("/sys/fs/bpf", &sf) && (unsigned long)sf.f_type == PROPHET_BWMON_BPF_FS_MAGIC)
        return 0;
    if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0755"))
        return -errno;
    return 0;
}

static int prophet_bwmon_other_daemon(const char *shm_name)
{
    int fd = shm_open(shm_name, O_RDONLY, 0);
    if (fd < 0)
        return 0;
    struct prophet_bw_shm *shm = mmap(NULL, sizeof(*shm), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (shm == MAP_FAILED)
        return 0;
    int pid = shm->magic == PROPHET_BW_SHM_MAGIC ? shm->daemon_pid : 0;
    munmap(shm, sizeof(*shm));
    if (pid <= 0 || pid == getpid() || kill(pid, 0))
        return 0;
    char path[64], comm[32] = "";
    snprintf(path, sizeof(path), "/proc/%d/comm", pid);
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(comm, sizeof(comm), f))
            comm[0] = '\0';
        fclose(f);
    }
    return strncmp(comm, "prophet-bwmon", 13) ? 0 : pid;
}

static int prophet_bwmon_shm_create(struct prophet_bwmon_daemon *d, int period_ms)
{
    shm_unlink(d->shm_name);
    int fd = shm_open(d->shm_name, O_CREAT | O_EXCL | O_RDWR, 0644);
    if (fd < 0)
        return -errno;
    if (fchmod(fd, 0644) || ftruncate(fd, sizeof(struct prophet_bw_shm))) {
        int err = -errno;
        close(fd);
        return err;
    }
    void *m = mmap(NULL, sizeof(struct prophet_bw_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = -errno;
    close(fd);
    if (m == MAP_FAILED)
        return err;
    d->shm = m;
    d->shm->version = PROPHET_BW_SHM_VERSION;
    d->shm->period_us = (int64_t)period_ms * 1000;
    d->shm->daemon_pid = getpid();
    d->shm->capacity = PROPHET_BW_MAX_PROCS;
    d->shm->t_us = prophet_bw_now_us();
    __atomic_store_n(&d->shm->magic, PROPHET_BW_SHM_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

static void prophet_bwmon_shm_update(struct prophet_bwmon_daemon *d, int ncpu,
                                     struct prophet_bw_counts *percpu,
                                     struct prophet_bwmon_entry *buf)
{
    struct prophet_bw_counts host = {0};
    uint32_t zero = 0;
    int n = prophet_bwmon_collect(prophet_bw_probe_proc_fd(d->probe), ncpu, percpu, buf,
                                  PROPHET_BW_MAX_PROCS);
    prophet_bw_sum_percpu(prophet_bw_probe_host_fd(d->probe), &zero, ncpu, percpu, &host);
    struct prophet_bw_shm *s = d->shm;
    uint32_t seq = s->seq;
#if defined(__SANITIZE_THREAD__)
    __atomic_store_n(&s->seq, seq + 1, __ATOMIC_SEQ_CST); /* TSan has no fences */
#else
    __atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
    s->t_us = prophet_bw_now_us();
    s->host = host;
    for (int i = 0; i < n; i++)
        s->procs[i] = (struct prophet_bw_shm_proc){
            .tgid = buf[i].tgid, .tx_bytes = buf[i].tx, .rx_bytes = buf[i].rx};
    s->nprocs = (uint32_t)(n > 0 ? n : 0);
    __atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
}

static void prophet_bwmon_daemon_cleanup(struct prophet_bwmon_daemon *d, const char *dir)
{
    unlink(d->pin_proc);
    unlink(d->pin_host);
    if (d->made_dir)
        rmdir(dir);
    if (d->shm) {
        munmap(d->shm, sizeof(*d->shm));
        shm_unlink(d->shm_name);
    }
    prophet_bw_probe_destroy(d->probe);
}

static int prophet_bwmon_pin(int fd, const char *path)
{
    unlink(path); /* a stale pin of a daemon that was killed */
    if (bpf_obj_pin(fd, path))
        return -errno;
    if (chmod(path, 0644))
        return -errno;
    return 0;
}

static int prophet_bwmon_daemon(const struct prophet_bwmon_opts *o)
{
    struct prophet_bwmon_daemon d = {0};
    char why[256];
    int err, rc = PROPHET_BWMON_EXIT_FAIL;
    int ncpu = libbpf_num_possible_cpus();
    struct prophet_bw_counts *percpu = calloc((size_t)(ncpu > 0 ? ncpu : 1), sizeof(*percpu));
    struct prophet_bwmon_entry *buf = calloc(PROPHET_BW_MAX_PROCS, sizeof(*buf));
    if (!percpu || !buf || ncpu <= 0) {
        fprintf(stderr, "prophet-bwmon: out of memory\n");
        goto out;
    }
    prophet_bw_shm_name(o->pin_dir, d.shm_name, sizeof(d.shm_name));
    int other = prophet_bwmon_other_daemon(d.shm_name);
    if (other) {
        fprintf(stderr, "prophet-bwmon: already running for %s (pid %d)\n", o->pin_dir, other);
        goto out;
    }
    err = prophet_bw_probe_load(&d.probe, 0, why, sizeof(why));
    if (err) {
        fprintf(stderr, "prophet-bwmon: %s\n", why);
        rc = prophet_bwmon_exit_for(err);
        goto out;
    }
    err = prophet_bwmon_ensure_bpffs(o->pin_dir);
    if (err) {
        fprintf(stderr, "prophet-bwmon: cannot mount bpffs on /sys/fs/bpf: %s\n", strerror(-err));
        rc = prophet_bwmon_exit_for(err);
        goto out;
    }
    if (!mkdir(o->pin_dir, 0755))
        d.made_dir = 1;
    else if (errno != EEXIST) {
        fprintf(stderr, "prophet-bwmon: cannot create %s: %s\n", o->pin_dir, strerror(errno));
        rc = prophet_bwmon_exit_for(-errno);
        goto out;
    }
    chmod(o->pin_dir, 0755);
    snprintf(d.pin_proc, sizeof(d.pin_proc), "%s/%s", o->pin_dir, PROPHET_BW_MAP_PROC);
    snprintf(d.pin_host, sizeof(d.pin_host), "%s/%s", o->pin_dir, PROPHET_BW_MAP_HOST);
    err = prophet_bwmon_pin(prophet_bw_probe_proc_fd(d.probe), d.pin_proc);
    if (!err)
        err = prophet_bwmon_pin(prophet_bw_probe_host_fd(d.probe), d.pin_host);
    if (err) {
        fprintf(stderr, "prophet-bwmon: cannot pin maps in %s (is it on a bpffs?): %s\n",
                o->pin_dir, strerror(-err));
        goto out;
    }
    if (!o->no_shm) {
        err = prophet_bwmon_shm_create(&d, o->shm_period_ms);
        if (err) {
            fprintf(stderr, "prophet-bwmon: cannot create /dev/shm%s: %s\n", d.shm_name,
                    strerror(-err));
            goto out;
        }
    }
    fprintf(stderr, "prophet-bwmon: serving %s (probe %s)%s%s\n", o->pin_dir,
            prophet_bw_probe_kind(d.probe), o->no_shm ? "" : ", export /dev/shm",
            o->no_shm ? "" : d.shm_name);
    while (!prophet_bwmon_stop) {
        if (d.shm)
            prophet_bwmon_shm_update(&d, ncpu, percpu, buf);
        prophet_bwmon_sleep_ms(d.shm ? o->shm_period_ms : 1000);
    }
    rc = PROPHET_BWMON_EXIT_OK;
out:
    prophet_bwmon_daemon_cleanup(&d, o->pin_dir);
    free(percpu);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------------------ watch */

static int prophet_bwmon_cmp_tgid(const void *a, const void *b)
{
    uint32_t x = ((const struct prophet_bwmon_entry *)a)->tgid;
    uint32_t y = ((const struct prophet_bwmon_entry *)b)->tgid;
    return (x > y) - (x < y);
}

static const struct prophet_bwmon_entry *prophet_bwmon_find(const struct prophet_bwmon_entry *v,
                                                            int n, uint32_t tgid)
{
    struct prophet_bwmon_entry k = {.tgid = tgid};
    return bsearch(&k, v, (size_t)n, sizeof(k), prophet_bwmon_cmp_tgid);
}

static void prophet_bwmon_comm(uint32_t pid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%u/comm", pid);
    FILE *f = fopen(path, "r");
    buf[0] = '\0';
    if (f) {
        if (!fgets(buf, (int)len, f))
            buf[0] = '\0';
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = '\0';
    for (char *c = buf; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
            *c = '?';
    if (!buf[0])
        snprintf(buf, len, "?");
}

struct prophet_bwmon_row {
    uint32_t tgid;
    uint64_t tx, rx;
    double tx_bps, rx_bps;
};

static int prophet_bwmon_cmp_rate(const void *a, const void *b)
{
    const struct prophet_bwmon_row *x = a, *y = b;
    double rx = x->tx_bps + x->rx_bps, ry = y->tx_bps + y->rx_bps;
    return (rx < ry) - (rx > ry);
}

static void prophet_bwmon_print_rows(const struct prophet_bwmon_opts *o, double t,
                                     struct prophet_bwmon_row *rows, int n,
                                     const struct prophet_bw_counts *host, double host_tx,
                                     double host_rx)
{
    char comm[32];
    if (o->json) {
        for (int i = 0; i < n; i++) {
            prophet_bwmon_comm(rows[i].tgid, comm, sizeof(comm));
            printf("{\"t\": %.3f, \"pid\": %u, \"comm\": \"%s\", \"tx_bytes\": %llu, "
                   "\"rx_bytes\": %llu, \"tx_bps\": %.1f, \"rx_bps\": %.1f}\n",
                   t, rows[i].tgid, comm, (unsigned long long)rows[i].tx,
                   (unsigned long long)rows[i].rx, rows[i].tx_bps, rows[i].rx_bps);
        }
        fflush(stdout);
        return;
    }
    qsort(rows, (size_t)n, sizeof(*rows), prophet_bwmon_cmp_rate);
    printf("\n%9.3f s  host: tx %10.2f MB/s  rx %10.2f MB/s  (total tx %llu B, rx %llu B)\n", t,
           host_tx / 1e6, host_rx / 1e6, (unsigned long long)host->tx_bytes,
           (unsigned long long)host->rx_bytes);
    printf("%8s %-16s %14s %14s %11s %11s\n", "PID", "COMM", "TX_BYTES", "RX_BYTES", "TX_MB/s",
           "RX_MB/s");
    for (int i = 0; i < n && i < o->top; i++) {
        prophet_bwmon_comm(rows[i].tgid, comm, sizeof(comm));
        printf("%8u %-16s %14llu %14llu %11.2f %11.2f\n", rows[i].tgid, comm,
               (unsigned long long)rows[i].tx, (unsigned long long)rows[i].rx, rows[i].tx_bps / 1e6,
               rows[i].rx_bps / 1e6);
    }
    fflush(stdout);
}

static int prophet_bwmon_watch(const struct prophet_bwmon_opts *o)
{
    struct prophet_bw_probe *probe = NULL;
    char path[512], why[256];
    int proc_fd = -1, host_fd = -1, rc = PROPHET_BWMON_EXIT_FAIL;
    int ncpu = libbpf_num_possible_cpus();
    struct prophet_bw_counts *percpu = calloc((size_t)(ncpu > 0 ? ncpu : 1), sizeof(*percpu));
    struct prophet_bwmon_entry *cur = calloc(PROPHET_BW_MAX_PROCS, sizeof(*cur));
    struct prophet_bwmon_entry *prev = calloc(PROPHET_BW_MAX_PROCS, sizeof(*prev));
    struct prophet_bwmon_row *rows = calloc(PROPHET_BW_MAX_PROCS, sizeof(*rows));
    struct prophet_bw_counts host = {0}, host_prev = {0};
    int ncur = 0, nprev = 0;
    if (!percpu || !cur || !prev || !rows || ncpu <= 0) {
        fprintf(stderr, "prophet-bwmon: out of memory\n");
        goto out;
    }
    /* a running daemon's pins first, else our own probe */
    LIBBPF_OPTS(bpf_obj_get_opts, ro, .file_flags = BPF_F_RDONLY);
    snprintf(path, sizeof(path), "%s/%s", o->pin_dir, PROPHET_BW_MAP_PROC);
    proc_fd = bpf_obj_get_opts(path, &ro);
    snprintf(path, sizeof(path), "%s/%s", o->pin_dir, PROPHET_BW_MAP_HOST);
    host_fd = proc_fd >= 0 ? bpf_obj_get_opts(path, &ro) : -1;
    if (proc_fd < 0 || host_fd < 0) {
        int pin_err = errno;
        int err = prophet_bw_probe_load(&probe, 0, why, sizeof(why));
        if (err) {
            fprintf(stderr, "prophet-bwmon: no daemon pins in %s (%s) and %s\n", o->pin_dir,
                    strerror(pin_err), why);
            rc = prophet_bwmon_exit_for(err);
            goto out;
        }
        if (proc_fd >= 0)
            close(proc_fd);
        proc_fd = dup(prophet_bw_probe_proc_fd(probe));
        host_fd = dup(prophet_bw_probe_host_fd(probe));
    }
    uint32_t zero = 0;
    /* the baseline: rates of the first interval are over the first interval only */
    nprev = prophet_bwmon_collect(proc_fd, ncpu, percpu, prev, PROPHET_BW_MAX_PROCS);
    qsort(prev, (size_t)nprev, sizeof(*prev), prophet_bwmon_cmp_tgid);
    prophet_bw_sum_percpu(host_fd, &zero, ncpu, percpu, &host_prev);
    int64_t t0 = prophet_bw_now_us(), tprev = t0;
    for (int iter = 0; !prophet_bwmon_stop && (o->count == 0 || iter < o->count);) {
        prophet_bwmon_sleep_ms(o->interval_ms);
        if (prophet_bwmon_stop)
            break;
        int64_t now = prophet_bw_now_us();
        double dt = (double)(now - tprev) / 1e6;
        ncur = prophet_bwmon_collect(proc_fd, ncpu, percpu, cur, PROPHET_BW_MAX_PROCS);
        qsort(cur, (size_t)ncur, sizeof(*cur), prophet_bwmon_cmp_tgid);
        prophet_bw_sum_percpu(host_fd, &zero, ncpu, percpu, &host);
        int nrows = 0;
        if (o->pid) {
            const struct prophet_bwmon_entry zero_entry = {.tgid = (uint32_t)o->pid};
            const struct prophet_bwmon_entry *c = prophet_bwmon_find(cur, ncur, (uint32_t)o->pid);
            const struct prophet_bwmon_entry *p = prophet_bwmon_find(prev, nprev, (uint32_t)o->pid);
            if (!c)
                c = &zero_entry;
            if (!p)
                p = &zero_entry;
            rows[nrows++] = (struct prophet_bwmon_row){
                c->tgid, c->tx, c->rx, (double)(c->tx - p->tx) / dt, (double)(c->rx - p->rx) / dt};
        } else {
            for (int i = 0; i < ncur; i++) {
                const struct prophet_bwmon_entry *p = prophet_bwmon_find(prev, nprev, cur[i].tgid);
                uint64_t ptx = p ? p->tx : 0, prx = p ? p->rx : 0;
                if (cur[i].tx == ptx && cur[i].rx == prx)
                    continue; /* idle this interval */
                rows[nrows++] = (struct prophet_bwmon_row){cur[i].tgid, cur[i].tx, cur[i].rx,
                                                           (double)(cur[i].tx - ptx) / dt,
                                                           (double)(cur[i].rx - prx) / dt};
            }
        }
        prophet_bwmon_print_rows(o, (double)(now - t0) / 1e6, rows, nrows, &host,
                                 (double)(host.tx_bytes - host_prev.tx_bytes) / dt,
                                 (double)(host.rx_bytes - host_prev.rx_bytes) / dt);
        if (o->pid && !prophet_bwmon_alive(o->pid)) { /* its last interval is printed */
            fflush(stdout);
            fprintf(stderr, "prophet-bwmon: pid %d exited\n", o->pid);
            break;
        }
        struct prophet_bwmon_entry *tmp = prev;
        prev = cur;
        cur = tmp;
        nprev = ncur;
        host_prev = host;
        tprev = now;
        iter++;
    }
    rc = PROPHET_BWMON_EXIT_OK;
out:
    if (proc_fd >= 0)
        close(proc_fd);
    if (host_fd >= 0)
        close(host_fd);
    prophet_bw_probe_destroy(probe);
    free(percpu);
    free(cur);
    free(prev);
    free(rows);
    return rc;
}

int main(int argc, char **argv)
{
    struct prophet_bwmon_opts o;
    if (prophet_bwmon_parse(argc, argv, &o))
        return PROPHET_BWMON_EXIT_USAGE;
    if (o.pid && !prophet_bwmon_alive(o.pid)) {
        fprintf(stderr, "prophet-bwmon: --pid %d: no such process\n", o.pid);
        return PROPHET_BWMON_EXIT_FAIL;
    }
    struct sigaction sa = {.sa_handler = prophet_bwmon_on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return o.daemon ? prophet_bwmon_daemon(&o) : prophet_bwmon_watch(&o);
}
