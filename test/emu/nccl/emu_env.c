/* Environment of the emulated NCCL: network model and addresses, read once. */
#include "emu_nccl.h"

#include <arpa/inet.h>
#include <ctype.h>
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
    env.latency_us = env_int("EMU_NCCL_LATENCY_US", 0);
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
