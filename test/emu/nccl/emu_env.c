/* Environment of the emulated NCCL: network model and addresses, read once. */
#include "emu_nccl.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static struct emu_env env;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

int64_t emu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double emu_parse_bw(const char *s)
{
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {
        {"", 1},          {"B", 1},          {"KB", 1e3},        {"MB", 1e6},
        {"GB", 1e9},      {"Kbit", 1e3 / 8}, {"Mbit", 1e6 / 8},  {"Gbit", 1e9 / 8},
        {"bit", 1.0 / 8}, {"KiB", 1024.0},   {"MiB", 1048576.0}, {"GiB", 1073741824.0},
    };
    char *end;
    double v = strtod(s, &end);

    if (end == s || v < 0)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(end, units[i].suffix) == 0)
            return v * units[i].mult;
    }
    return -1;
}

static int64_t env_int(const char *name, int64_t def)
{
    const char *s = getenv(name);
    char *end;
    long long v;

    if (!s || !*s)
        return def;
    v = strtoll(s, &end, 10);
    if (*end || v < 0) {
        fprintf(stderr, "emu-nccl: ignoring %s=%s (not a non-negative integer)\n", name, s);
        return def;
    }
    return v;
}

/* A duration in microseconds, decimals allowed ("300", "300.0", "12.5"), rounded to the
 * microsecond. Scripts format numbers as they come: an integer-only parse that ignored "300.0"
 * ran every benchmark without the latency it asked for. */
static int64_t env_us(const char *name, int64_t def)
{
    const char *s = getenv(name);
    char *end;
    double v;

    if (!s || !*s)
        return def;
    v = strtod(s, &end);
    if (end == s || *end || !(v >= 0) || v > 1e12) {
        fprintf(stderr, "emu-nccl: ignoring %s=%s (not a non-negative number of microseconds)\n",
                name, s);
        return def;
    }
    return (int64_t)(v + 0.5);
}

static int env_addr(const char *name, struct in_addr *out)
{
    const char *s = getenv(name);

    if (!s || !*s)
        return 0;
    if (inet_pton(AF_INET, s, out) != 1) {
        fprintf(stderr, "emu-nccl: ignoring %s=%s (not an IPv4 address)\n", name, s);
        return 0;
    }
    return 1;
}

/* EMU_NCCL_BW_CHANGE=MS:BW, e.g. "2000:250Mbit": the link runs at BW from MS milliseconds after
 * this process's first paced transfer on (a link that changes speed in the middle of a run). */
static void env_read_change(void)
{
    const char *s = getenv("EMU_NCCL_BW_CHANGE");
    char *end;
    long long ms;

    env.change_ms = -1;
    if (!s || !*s)
        return;
    ms = strtoll(s, &end, 10);
    if (end == s || *end != ':' || ms < 0 || (env.bw_after = emu_parse_bw(end + 1)) < 0) {
        fprintf(stderr,
                "emu-nccl: ignoring EMU_NCCL_BW_CHANGE=%s (want MS:BW, e.g. 2000:250Mbit)\n", s);
        env.bw_after = 0;
        return;
    }
    env.change_ms = ms;
}

static void env_read(void)
{
    const char *bw = getenv("EMU_NCCL_BW");

    if (bw && *bw) {
        env.bw = emu_parse_bw(bw);
        if (env.bw < 0) {
            fprintf(stderr, "emu-nccl: ignoring EMU_NCCL_BW=%s (want e.g. 1Gbit, 125MB)\n", bw);
            env.bw = 0;
        }
    }
    env_read_change();
    env.latency_us = env_us("EMU_NCCL_LATENCY_US", 0);
    env.timeout_ms = env_int("EMU_NCCL_TIMEOUT_MS", 30000);
    if (env.timeout_ms == 0)
        env.timeout_ms = 30000;
    env.debug = (int)env_int("EMU_NCCL_DEBUG", 0);
    env.have_addr = env_addr("EMU_NCCL_ADDR", &env.addr);
    if (!env.have_addr)
        inet_pton(AF_INET, "127.0.0.1", &env.addr);
    env.have_root_addr = env_addr("EMU_NCCL_ROOT_ADDR", &env.root_addr);
}

const struct emu_env *emu_env(void)
{
    pthread_once(&env_once, env_read);
    return &env;
}

/* emuNcclSetLatency's value + 1; 0: not set (EMU_NCCL_LATENCY_US rules). */
static _Atomic int64_t latency_set;

void emu_latency_set(int64_t us)
{
    atomic_store(&latency_set, (us < 0 ? 0 : us) + 1);
}

int64_t emu_latency_us(void)
{
    int64_t v = atomic_load(&latency_set);
    return v ? v - 1 : emu_env()->latency_us;
}

/* emuNcclSetLinkBandwidth's value as double bits; 0 bits: not set (the environment rules). */
static _Atomic uint64_t link_bw_set_bits;

void emu_link_bw_set(double Bps)
{
    uint64_t bits;

    if (Bps < 0)
        Bps = 0;
    memcpy(&bits, &Bps, sizeof(bits));
    atomic_store(&link_bw_set_bits, bits | (Bps == 0 ? 1ull << 63 : 0)); /* -0.0: unpaced */
}

double emu_link_bw(void)
{
    static _Atomic int64_t first_ns; /* the first paced transfer; 0 until then */
    const struct emu_env *e = emu_env();
    int64_t now, zero = 0;
    uint64_t set = atomic_load(&link_bw_set_bits);

    if (set) {
        double v;
        memcpy(&v, &set, sizeof(v));
        return v > 0 ? v : 0;
    }
    if (e->change_ms < 0)
        return e->bw;
    now = emu_now_ns();
    if (!atomic_compare_exchange_strong(&first_ns, &zero, now))
        now -= atomic_load(&first_ns);
    else
        now = 0;
    return now >= e->change_ms * 1000000 ? e->bw_after : e->bw;
}
