/* Every PROPHET_* knob is parsed and validated here, and nowhere else. The table in
 * include/prophet/config.h documents names, defaults and meanings; keep the two in step. */
#include "prophet/config.h"

#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Index of v (any case) in names[0..n), or -1. */
static int prophet_cfg_name_index(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(v, names[i]))
            return i;
    return -1;
}

static const char *const prophet_policy_names[PROPHET_POLICY_COUNT] = {
    [PROPHET_POLICY_PASSTHROUGH] = "passthrough", [PROPHET_POLICY_FUSION] = "fusion",
    [PROPHET_POLICY_BUCKETS] = "buckets",         [PROPHET_POLICY_PROPHET] = "prophet",
    [PROPHET_POLICY_OPTIMAL] = "optimal",
};

const char *prophet_policy_name(prophet_policy_t p)
{
    if ((unsigned)p >= PROPHET_POLICY_COUNT)
        return "unknown";
    return prophet_policy_names[p];
}

static const char *const prophet_gate_names[] = {
    [PROPHET_GATE_OBSERVE] = "observe",
    [PROPHET_GATE_HOLD] = "hold",
};

const char *prophet_gate_name(prophet_gate_mode_t g)
{
    if ((unsigned)g >= sizeof(prophet_gate_names) / sizeof(prophet_gate_names[0]))
        return "unknown";
    return prophet_gate_names[g];
}

int prophet_policy_from_name(const char *name, prophet_policy_t *out)
{
    int i;

    if (!name || !out ||
        (i = prophet_cfg_name_index(name, prophet_policy_names, PROPHET_POLICY_COUNT)) < 0)
        return -1;
    *out = (prophet_policy_t)i;
    return 0;
}

/* Splits "12.5Gbit" into 12.5 and "Gbit". Rejects empty numbers, NaN, infinities, negatives. */
static int prophet_split_number(const char *s, double *value, const char **unit)
{
    char *end = NULL;

    if (!s)
        return -1;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '\0' || *s == '-' || *s == '+')
        return -1;
    if (!isdigit((unsigned char)*s) && *s != '.')
        return -1; /* refuses "inf", "nan", hex floats spelled with letters first */
    errno = 0;
    *value = strtod(s, &end);
    if (errno != 0 || end == s || !isfinite(*value) || *value < 0)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    *unit = end;
    return 0;
}

static int prophet_unit_scale(const char *unit, const char *const *names, const double *scales,
                              int n, double *scale)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(unit, names[i]) == 0) {
            *scale = scales[i];
            return 0;
        }
    }
    return -1;
}

int prophet_parse_bandwidth(const char *s, double *Bps)
{
    /* Bits are decimal (Gbit = 1e9 bit/s); bytes are decimal (GB = 1e9 B/s) unless binary (GiB). */
    static const char *const names[] = {
        "",     "B",     "B/s",  "KB",    "KB/s", "MB",    "MB/s", "GB",   "GB/s",
        "KiB",  "KiB/s", "MiB",  "MiB/s", "GiB",  "GiB/s", "bit",  "bps",  "Kbit",
        "Kbps", "Mbit",  "Mbps", "Gbit",  "Gbps", "Tbit",  "Tbps", "kbit", "kbps",
    };
    static const double scales[] = {
        1,      1,      1,         1e3,       1e3,          1e6,          1e6,   1e9,   1e9,
        1024.0, 1024.0, 1048576.0, 1048576.0, 1073741824.0, 1073741824.0, 0.125, 0.125, 125.0,
        125.0,  125e3,  125e3,     125e6,     125e6,        125e9,        125e9, 125.0, 125.0,
    };
    double v = 0, scale = 0;
    const char *unit = NULL;

    if (!Bps || prophet_split_number(s, &v, &unit) != 0)
        return -1;
    if (prophet_unit_scale(unit, names, scales, (int)(sizeof(names) / sizeof(names[0])), &scale))
        return -1;
    v *= scale;
    if (v <= 0 || !isfinite(v))
        return -1;
    *Bps = v;
    return 0;
}

int prophet_parse_bytes(const char *s, uint64_t *bytes)
{
    static const char *const names[] = {"",    "B", "K",  "KB",  "KiB", "M",  "MB",
                                        "MiB", "G", "GB", "GiB", "k",   "kB", "kiB"};
    static const double scales[] = {1,   1,         1024.0,       1e3, 1024.0,       1048576.0,
                                    1e6, 1048576.0, 1073741824.0, 1e9, 1073741824.0, 1024.0,
                                    1e3, 1024.0};
    double v = 0, scale = 0;
    const char *unit = NULL;

    if (!bytes || prophet_split_number(s, &v, &unit) != 0)
        return -1;
    if (prophet_unit_scale(unit, names, scales, (int)(sizeof(names) / sizeof(names[0])), &scale))
        return -1;
    v *= scale;
    if (v < 0 || v > 1.8e19)
        return -1;
    *bytes = (uint64_t)llround(v);
    return 0;
}

static int prophet_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    char *end = NULL;
    unsigned long long v;

    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int prophet_parse_bool(const char *s, int *out)
{
    if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") ||
        !strcasecmp(s, "on")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") ||
        !strcasecmp(s, "off")) {
        *out = 0;
        return 0;
    }
    return -1;
}

static int prophet_parse_path(const char *s, char *dst, size_t len)
{
    size_t n = strlen(s);

    if (n == 0 || n >= len)
        return -1;
    memcpy(dst, s, n + 1);
    return 0;
}

/* Error sink: one line per invalid value, to the caller's buffer or stderr. */
typedef struct prophet_cfg_errs {
    char *buf;
    int len, used, count;
} prophet_cfg_errs_t;

__attribute__((format(printf, 2, 3))) static void prophet_cfg_error(prophet_cfg_errs_t *e,
                                                                    const char *fmt, ...)
{
    char line[768];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    e->count++;
    if (!e->buf) {
        fprintf(stderr, "%s\n", line);
        return;
    }
    if (e->used < e->len - 1) {
        int w = snprintf(e->buf + e->used, (size_t)(e->len - e->used), "%s\n", line);
        if (w > 0)
            e->used += w < e->len - e->used ? w : e->len - e->used - 1;
    }
}

#define PROPHET_BAD(e, name, val, why, dflt)                                                       \
    prophet_cfg_error((e), "prophet: WARN ignoring %s=\"%.200s\": %s; using %s", (name), (val),    \
                      (why), (dflt))

void prophet_config_defaults(prophet_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->debug = PROPHET_LOG_WARN;
    cfg->policy = PROPHET_POLICY_OPTIMAL; /* replaced by prophet_policy_default() by the caller */
    cfg->gate = PROPHET_GATE_HOLD;
    cfg->stall_ms = 50;
    snprintf(cfg->cuda_lib, sizeof(cfg->cuda_lib), "%s", "libcuda.so.1");
    cfg->learn_iters = 5;
    cfg->replan_iters = 50;
    cfg->bandwidth_Bps = 0;
    cfg->alpha_us = -1;
    cfg->fusion_bytes = 64ull << 20;
    cfg->cycle_us = 1000;
    cfg->bucket_bytes = 25ull << 20;
    cfg->credit_bytes = 0;
    cfg->bwmon = PROPHET_BWMON_AUTO;
    snprintf(cfg->bwmon_pin, sizeof(cfg->bwmon_pin), "%s", "/sys/fs/bpf/prophet");
    cfg->log_iter_begin = 0;
    cfg->log_iter_end = 100;
}

/* The knobs that take a name: enum value i is names[i]. One parser for all of them. */
typedef struct prophet_enum_knob {
    const char *name;
    size_t offset; /* an enum field of prophet_config_t */
    const char *const *names;
    int n;
    const char *expected, *dflt;
} prophet_enum_knob_t;

static const char *const prophet_debug_names[] = {"NONE", "WARN", "INFO", "TRACE"};
static const char *const prophet_bwmon_names[] = {"auto", "off", "process", "daemon"};

static const prophet_enum_knob_t prophet_knob_debug = {"PROPHET_DEBUG",
                                                       offsetof(prophet_config_t, debug),
                                                       prophet_debug_names,
                                                       4,
                                                       "expected NONE, WARN, INFO or TRACE",
                                                       "WARN"};
static const prophet_enum_knob_t prophet_knob_gate = {"PROPHET_GATE",
                                                      offsetof(prophet_config_t, gate),
                                                      prophet_gate_names,
                                                      2,
                                                      "expected hold or observe",
                                                      "hold"};
static const prophet_enum_knob_t prophet_knob_bwmon = {"PROPHET_BWMON",
                                                       offsetof(prophet_config_t, bwmon),
                                                       prophet_bwmon_names,
                                                       4,
                                                       "expected auto, off, process or daemon",
                                                       "auto"};

_Static_assert(sizeof(prophet_log_level_t) == sizeof(int) &&
                   sizeof(prophet_gate_mode_t) == sizeof(int) &&
                   sizeof(prophet_bwmon_mode_t) == sizeof(int),
               "prophet_cfg_enum stores an int");

static void prophet_cfg_enum(prophet_config_t *cfg, const prophet_enum_knob_t *k, const char *v,
                             prophet_cfg_errs_t *e)
{
    int i = prophet_cfg_name_index(v, k->names, k->n);
    if (i >= 0)
        memcpy((char *)cfg + k->offset, &i, sizeof(i)); /* enums are int-sized (C11 6.7.2.2) */
    else
        PROPHET_BAD(e, k->name, v, k->expected, k->dflt);
}

/* PROPHET_GATE: the two modes, plus the names of the previous ones (one line each says so, not
 * counted as an error). */
static void prophet_cfg_gate(prophet_config_t *cfg, const char *v, prophet_cfg_errs_t *e)
{
    int count = e->count;

    if (strcasecmp(v, "call") == 0) {
        cfg->gate = PROPHET_GATE_OBSERVE;
        if (cfg->debug >= PROPHET_LOG_INFO)
            prophet_cfg_error(e, "prophet: INFO PROPHET_GATE=call is deprecated: it means observe");
    } else if (strcasecmp(v, "block") == 0) {
        cfg->gate = PROPHET_GATE_HOLD;
        if (cfg->debug >= PROPHET_LOG_WARN)
            prophet_cfg_error(e, "prophet: WARN PROPHET_GATE=block was removed: it now means hold "
                                 "(the default, exact in every job)");
    } else {
        prophet_cfg_enum(cfg, &prophet_knob_gate, v, e);
        return;
    }
    e->count = count; /* a notice, not an invalid value */
}

static void prophet_cfg_log_iters(prophet_config_t *cfg, const char *v, prophet_cfg_errs_t *e)
{
    char a[32], b[32];
    const char *colon = strchr(v, ':');
    uint32_t ia = 0, ib = 0;
    size_t la;

    if (!colon || (la = (size_t)(colon - v)) == 0 || la >= sizeof(a) || strlen(colon + 1) == 0 ||
        strlen(colon + 1) >= sizeof(b))
        goto bad;
    memcpy(a, v, la);
    a[la] = '\0';
    snprintf(b, sizeof(b), "%s", colon + 1);
    if (prophet_parse_u32(a, 0, UINT32_MAX - 1, &ia) || prophet_parse_u32(b, 1, UINT32_MAX, &ib) ||
        ib <= ia)
        goto bad;
    cfg->log_iter_begin = ia;
    cfg->log_iter_end = ib;
    return;
bad:
    PROPHET_BAD(e, "PROPHET_LOG_ITERS", v, "expected A:B with integers 0 <= A < B", "0:100");
}

/* One entry per knob that takes a number with a range. */
typedef struct prophet_u32_knob {
    const char *name;
    size_t offset;
    uint32_t lo, hi;
    const char *dflt;
} prophet_u32_knob_t;

static const prophet_u32_knob_t prophet_u32_knobs[] = {
    {"PROPHET_STALL_MS", offsetof(prophet_config_t, stall_ms), 1, 60000, "50"},
    {"PROPHET_LEARN_ITERS", offsetof(prophet_config_t, learn_iters), 2, 1000, "5"},
    {"PROPHET_REPLAN_ITERS", offsetof(prophet_config_t, replan_iters), 1, 100000, "50"},
    {"PROPHET_CYCLE_US", offsetof(prophet_config_t, cycle_us), 1, 10000000, "1000"},
};

typedef struct prophet_bytes_knob {
    const char *name;
    size_t offset;
    uint64_t lo;
    const char *dflt;
} prophet_bytes_knob_t;

static const prophet_bytes_knob_t prophet_bytes_knobs[] = {
    {"PROPHET_FUSION_BYTES", offsetof(prophet_config_t, fusion_bytes), 1, "64MiB"},
    {"PROPHET_BUCKET_BYTES", offsetof(prophet_config_t, bucket_bytes), 1, "25MiB"},
    {"PROPHET_CREDIT_BYTES", offsetof(prophet_config_t, credit_bytes), 0, "0"},
};

typedef struct prophet_path_knob {
    const char *name;
    size_t offset, len;
} prophet_path_knob_t;

static const prophet_path_knob_t prophet_path_knobs[] = {
    {"PROPHET_NCCL_LIB", offsetof(prophet_config_t, nccl_lib),
     sizeof(((prophet_config_t *)0)->nccl_lib)},
    {"PROPHET_CUDA_LIB", offsetof(prophet_config_t, cuda_lib),
     sizeof(((prophet_config_t *)0)->cuda_lib)},
    {"PROPHET_BWMON_PIN", offsetof(prophet_config_t, bwmon_pin),
     sizeof(((prophet_config_t *)0)->bwmon_pin)},
    {"PROPHET_LOG", offsetof(prophet_config_t, log_dir), sizeof(((prophet_config_t *)0)->log_dir)},
};

static void prophet_cfg_numbers(prophet_config_t *cfg, const char *(*lookup)(const char *, void *),
                                void *ctx, prophet_cfg_errs_t *e)
{
    char *base = (char *)cfg;
    const char *v;

    for (size_t i = 0; i < sizeof(prophet_u32_knobs) / sizeof(prophet_u32_knobs[0]); i++) {
        const prophet_u32_knob_t *k = &prophet_u32_knobs[i];
        char why[96];
        if (!(v = lookup(k->name, ctx)))
            continue;
        if (prophet_parse_u32(v, k->lo, k->hi, (uint32_t *)(base + k->offset)) == 0)
            continue;
        snprintf(why, sizeof(why), "expected an integer from %u to %u", k->lo, k->hi);
        PROPHET_BAD(e, k->name, v, why, k->dflt);
    }
    for (size_t i = 0; i < sizeof(prophet_bytes_knobs) / sizeof(prophet_bytes_knobs[0]); i++) {
        const prophet_bytes_knob_t *k = &prophet_bytes_knobs[i];
        uint64_t b = 0;
        if (!(v = lookup(k->name, ctx)))
            continue;
        if (prophet_parse_bytes(v, &b) == 0 && b >= k->lo) {
            *(uint64_t *)(base + k->offset) = b;
            continue;
        }
        PROPHET_BAD(e, k->name, v, "expected a size such as 4096, 64KiB, 25MiB or 1GB", k->dflt);
    }
    for (size_t i = 0; i < sizeof(prophet_path_knobs) / sizeof(prophet_path_knobs[0]); i++) {
        const prophet_path_knob_t *k = &prophet_path_knobs[i];
        if (!(v = lookup(k->name, ctx)))
            continue;
        if (prophet_parse_path(v, base + k->offset, k->len) != 0)
            PROPHET_BAD(e, k->name, v, "empty or longer than 511 characters", "its default");
    }
}

static void prophet_cfg_network(prophet_config_t *cfg, const char *(*lookup)(const char *, void *),
                                void *ctx, prophet_cfg_errs_t *e)
{
    const char *v;
    double d = 0;
    char *end = NULL;

    if ((v = lookup("PROPHET_BANDWIDTH", ctx))) {
        if (prophet_parse_bandwidth(v, &d) == 0)
            cfg->bandwidth_Bps = d;
        else
            PROPHET_BAD(e, "PROPHET_BANDWIDTH", v,
                        "expected a rate such as 10Gbit, 25Gbps, 1.25GB or 800Mbit", "fitted");
    }
    if ((v = lookup("PROPHET_ALPHA_US", ctx))) {
        errno = 0;
        d = isdigit((unsigned char)*v) ? strtod(v, &end) : -1;
        if (d >= 0 && errno == 0 && end && *end == '\0' && isfinite(d) && d <= 1e7)
            cfg->alpha_us = d;
        else
            PROPHET_BAD(e, "PROPHET_ALPHA_US", v, "expected microseconds from 0 to 1e7", "fitted");
    }
}

int prophet_config_parse(prophet_config_t *cfg, const char *(*lookup)(const char *name, void *ctx),
                         void *ctx, char *errs, int errs_len)
{
    prophet_cfg_errs_t e = {.buf = errs, .len = errs_len, .used = 0, .count = 0};
    const char *v;
    int b = 0;

    if (!cfg || !lookup)
        return -1;
    if (errs && errs_len > 0)
        errs[0] = '\0';
    prophet_config_defaults(cfg);

    if ((v = lookup("PROPHET_DEBUG", ctx)))
        prophet_cfg_enum(cfg, &prophet_knob_debug, v, &e);
    if ((v = lookup("PROPHET_DISABLE", ctx))) {
        if (prophet_parse_bool(v, &b) == 0)
            cfg->disable = b;
        else
            PROPHET_BAD(&e, "PROPHET_DISABLE", v, "expected 0 or 1", "0");
    }
    if ((v = lookup("PROPHET_POLICY", ctx))) {
        if (prophet_policy_from_name(v, &cfg->policy) == 0)
            cfg->policy_set = 1;
        else
            PROPHET_BAD(&e, "PROPHET_POLICY", v,
                        "expected passthrough, fusion, buckets, prophet or optimal", "the default");
    }
    if ((v = lookup("PROPHET_GATE", ctx)))
        prophet_cfg_gate(cfg, v, &e);
    if ((v = lookup("PROPHET_BWMON", ctx)))
        prophet_cfg_enum(cfg, &prophet_knob_bwmon, v, &e);
    if ((v = lookup("PROPHET_LOG_ITERS", ctx)))
        prophet_cfg_log_iters(cfg, v, &e);
    if ((v = lookup("PROPHET_TRACE", ctx))) {
        if (prophet_parse_bool(v, &b) == 0)
            cfg->trace = b;
        else
            PROPHET_BAD(&e, "PROPHET_TRACE", v, "expected 0 or 1", "0");
    }
    prophet_cfg_numbers(cfg, lookup, ctx, &e);
    prophet_cfg_network(cfg, lookup, ctx, &e);
    return e.count;
}

static const char *prophet_getenv_lookup(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

int prophet_config_load(prophet_config_t *cfg)
{
    return prophet_config_parse(cfg, prophet_getenv_lookup, NULL, NULL, 0);
}
