/* Every PROPHET_* knob is parsed and validated here, and nowhere else, from the one table
 * PROPHET_KNOBS in include/prophet/config.h (name, field, type, default, range, help). */
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

static const char *const prophet_names_debug[] = {PROPHET_VALUES_debug(PROPHET_ENUM_NAME)};
static const char *const prophet_names_policy[] = {PROPHET_VALUES_policy(PROPHET_ENUM_NAME)};
static const char *const prophet_names_gate[] = {PROPHET_VALUES_gate(PROPHET_ENUM_NAME)};
static const char *const prophet_names_bwmon[] = {PROPHET_VALUES_bwmon(PROPHET_ENUM_NAME)};
#define PROPHET_NAMES_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *prophet_policy_name(prophet_policy_t p)
{
    if ((unsigned)p >= PROPHET_POLICY_COUNT)
        return "unknown";
    return prophet_names_policy[p];
}

const char *prophet_gate_name(prophet_gate_mode_t g)
{
    if ((unsigned)g >= (unsigned)PROPHET_NAMES_COUNT(prophet_names_gate))
        return "unknown";
    return prophet_names_gate[g];
}

int prophet_policy_from_name(const char *name, prophet_policy_t *out)
{
    int i;

    if (!name || !out ||
        (i = prophet_cfg_name_index(name, prophet_names_policy, PROPHET_POLICY_COUNT)) < 0)
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

typedef struct prophet_unit {
    const char *name;
    double scale;
} prophet_unit_t;

/* A number followed by one of the units (exact spelling): the number times the unit's scale. */
static int prophet_parse_scaled(const char *s, const prophet_unit_t *units, int n, double *out)
{
    double v = 0;
    const char *unit = NULL;

    if (prophet_split_number(s, &v, &unit) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (strcmp(unit, units[i].name) == 0) {
            *out = v * units[i].scale;
            return 0;
        }
    }
    return -1;
}

int prophet_parse_bandwidth(const char *s, double *Bps)
{
    /* Bits are decimal (Gbit = 1e9 bit/s); bytes are decimal (GB = 1e9 B/s) unless binary (GiB). */
    static const prophet_unit_t units[] = {
        {"", 1},
        {"B", 1},
        {"B/s", 1},
        {"KB", 1e3},
        {"KB/s", 1e3},
        {"MB", 1e6},
        {"MB/s", 1e6},
        {"GB", 1e9},
        {"GB/s", 1e9},
        {"KiB", 1024.0},
        {"KiB/s", 1024.0},
        {"MiB", 1048576.0},
        {"MiB/s", 1048576.0},
        {"GiB", 1073741824.0},
        {"GiB/s", 1073741824.0},
        {"bit", 0.125},
        {"bps", 0.125},
        {"Kbit", 125.0},
        {"Kbps", 125.0},
        {"Mbit", 125e3},
        {"Mbps", 125e3},
        {"Gbit", 125e6},
        {"Gbps", 125e6},
        {"Tbit", 125e9},
        {"Tbps", 125e9},
        {"kbit", 125.0},
        {"kbps", 125.0},
    };
    double v = 0;

    if (!Bps || prophet_parse_scaled(s, units, (int)(sizeof(units) / sizeof(units[0])), &v) != 0 ||
        v <= 0 || !isfinite(v))
        return -1;
    *Bps = v;
    return 0;
}

int prophet_parse_bytes(const char *s, uint64_t *bytes)
{
    static const prophet_unit_t units[] = {
        {"", 1},
        {"B", 1},
        {"K", 1024.0},
        {"KB", 1e3},
        {"KiB", 1024.0},
        {"M", 1048576.0},
        {"MB", 1e6},
        {"MiB", 1048576.0},
        {"G", 1073741824.0},
        {"GB", 1e9},
        {"GiB", 1073741824.0},
        {"k", 1024.0},
        {"kB", 1e3},
        {"kiB", 1024.0},
    };
    double v = 0;

    if (!bytes ||
        prophet_parse_scaled(s, units, (int)(sizeof(units) / sizeof(units[0])), &v) != 0 || v < 0 ||
        v > 1.8e19)
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

/* The knob table at run time, made from PROPHET_KNOBS. */
#define PROPHET_KNOB_NAMES_BOOL(field) NULL, 0
#define PROPHET_KNOB_NAMES_ENUM(field)                                                             \
    prophet_names_##field, PROPHET_NAMES_COUNT(prophet_names_##field)
#define PROPHET_KNOB_NAMES_POLICY(field) PROPHET_KNOB_NAMES_ENUM(field)
#define PROPHET_KNOB_NAMES_U32(field) NULL, 0
#define PROPHET_KNOB_NAMES_BYTES(field) NULL, 0
#define PROPHET_KNOB_NAMES_RATE(field) NULL, 0
#define PROPHET_KNOB_NAMES_USEC(field) NULL, 0
#define PROPHET_KNOB_NAMES_PATH(field) NULL, 0
#define PROPHET_KNOB_NAMES_ITERS(field) NULL, 0
#define PROPHET_KNOB_OFFSETS_BOOL(field) offsetof(prophet_config_t, field), 0
#define PROPHET_KNOB_OFFSETS_ENUM(field) offsetof(prophet_config_t, field), 0
#define PROPHET_KNOB_OFFSETS_POLICY(field)                                                         \
    offsetof(prophet_config_t, field), offsetof(prophet_config_t, field##_set)
#define PROPHET_KNOB_OFFSETS_U32(field) offsetof(prophet_config_t, field), 0
#define PROPHET_KNOB_OFFSETS_BYTES(field) offsetof(prophet_config_t, field), 0
#define PROPHET_KNOB_OFFSETS_RATE(field) offsetof(prophet_config_t, field), 0
#define PROPHET_KNOB_OFFSETS_USEC(field) offsetof(prophet_config_t, field), 0
#define PROPHET_KNOB_OFFSETS_PATH(field) offsetof(prophet_config_t, field), 0
#define PROPHET_KNOB_OFFSETS_ITERS(field)                                                          \
    offsetof(prophet_config_t, field##_begin), offsetof(prophet_config_t, field##_end)
#define PROPHET_KNOB_ROW(kind, name, field, type, dflt, lo, hi, shown, help)                       \
    {"PROPHET_" #name,                                                                             \
     #field,                                                                                       \
     PROPHET_KNOB_##kind,                                                                          \
     PROPHET_KNOB_OFFSETS_##kind(field),                                                           \
     sizeof(type),                                                                                 \
     PROPHET_KNOB_NAMES_##kind(field),                                                             \
     (double)(lo),                                                                                 \
     (double)(hi),                                                                                 \
     shown,                                                                                        \
     help},

static const prophet_knob_t prophet_knobs[] = {PROPHET_KNOBS(PROPHET_KNOB_ROW)};

const prophet_knob_t *prophet_config_knobs(int *n)
{
    if (n)
        *n = PROPHET_NAMES_COUNT(prophet_knobs);
    return prophet_knobs;
}

/* The parser stores an int into enum fields and a uint32_t into ITERS fields through offsets. */
#define PROPHET_KNOB_TYPE_CHECK(kind, name, field, type, dflt, lo, hi, shown, help)                \
    _Static_assert(PROPHET_KNOB_##kind != PROPHET_KNOB_ENUM || sizeof(type) == sizeof(int),        \
                   "PROPHET_" #name ": enums are int-sized (C11 6.7.2.2)");
PROPHET_KNOBS(PROPHET_KNOB_TYPE_CHECK)

/* The defaults, from the table's dflt column. */
#define PROPHET_DEFAULT_BOOL(f, d, lo, hi) cfg->f = (d);
#define PROPHET_DEFAULT_ENUM(f, d, lo, hi) cfg->f = (d);
#define PROPHET_DEFAULT_POLICY(f, d, lo, hi)                                                       \
    cfg->f = (d); /* replaced by prophet_policy_default() */
#define PROPHET_DEFAULT_U32(f, d, lo, hi) cfg->f = (d);
#define PROPHET_DEFAULT_BYTES(f, d, lo, hi) cfg->f = (d);
#define PROPHET_DEFAULT_RATE(f, d, lo, hi) cfg->f = (d);
#define PROPHET_DEFAULT_USEC(f, d, lo, hi) cfg->f = (d);
#define PROPHET_DEFAULT_PATH(f, d, lo, hi) snprintf(cfg->f, sizeof(cfg->f), "%s", (d));
#define PROPHET_DEFAULT_ITERS(f, d, lo, hi)                                                        \
    cfg->f##_begin = (lo);                                                                         \
    cfg->f##_end = (hi);
#define PROPHET_KNOB_DEFAULT(kind, name, field, type, dflt, lo, hi, shown, help)                   \
    PROPHET_DEFAULT_##kind(field, dflt, lo, hi)

void prophet_config_defaults(prophet_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    PROPHET_KNOBS(PROPHET_KNOB_DEFAULT)
}

const char *prophet_config_number(double v, char *buf, size_t len)
{
    int e = 0;
    double p = 1;

    while (v >= 1e6 && p < v && e < 300) {
        p *= 10;
        e++;
    }
    if (v >= 1e6 && p == v)
        snprintf(buf, len, "1e%d", e); /* 10000000 is written 1e7 */
    else
        snprintf(buf, len, "%.15g", v);
    return buf;
}

/* "expected a, b or c" from an enum knob's names. */
static void prophet_cfg_expected(const prophet_knob_t *k, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "expected ");

    for (int i = 0; i < k->n_names && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 i == 0                ? ""
                                 : i == k->n_names - 1 ? " or "
                                                       : ", ",
                                 k->names[i]);
}

static int prophet_cfg_log_iters(char *base, const prophet_knob_t *k, const char *v)
{
    char a[32], b[32];
    const char *colon = strchr(v, ':');
    uint32_t ia = 0, ib = 0;
    size_t la;

    if (!colon || (la = (size_t)(colon - v)) == 0 || la >= sizeof(a) || strlen(colon + 1) == 0 ||
        strlen(colon + 1) >= sizeof(b))
        return -1;
    memcpy(a, v, la);
    a[la] = '\0';
    snprintf(b, sizeof(b), "%s", colon + 1);
    if (prophet_parse_u32(a, 0, UINT32_MAX - 1, &ia) || prophet_parse_u32(b, 1, UINT32_MAX, &ib) ||
        ib <= ia)
        return -1;
    memcpy(base + k->offset, &ia, sizeof(ia));
    memcpy(base + k->offset2, &ib, sizeof(ib));
    return 0;
}

static int prophet_cfg_alpha(const char *v, double lo, double hi, double *out)
{
    char *end = NULL;
    double d;

    errno = 0;
    d = isdigit((unsigned char)*v) ? strtod(v, &end) : -1;
    if (d < lo || errno != 0 || !end || *end != '\0' || !isfinite(d) || d > hi)
        return -1;
    *out = d;
    return 0;
}

/* One knob's value into cfg: 0, or -1 with why (what was expected) and the default to report. */
static int prophet_cfg_knob(prophet_config_t *cfg, const prophet_knob_t *k, const char *v,
                            char *why, size_t why_len, const char **dflt)
{
    char *base = (char *)cfg;
    uint64_t bytes = 0;
    double d = 0;
    int i = 0;
    char num[32];

    *dflt = k->shown;
    switch (k->kind) {
    case PROPHET_KNOB_BOOL:
        if (prophet_parse_bool(v, &i) == 0)
            return memcpy(base + k->offset, &i, sizeof(i)), 0;
        snprintf(why, why_len, "expected 0 or 1");
        return -1;
    case PROPHET_KNOB_POLICY:
    case PROPHET_KNOB_ENUM:
        if ((i = prophet_cfg_name_index(v, k->names, k->n_names)) >= 0) {
            memcpy(base + k->offset, &i, sizeof(i));
            if (k->kind == PROPHET_KNOB_POLICY)
                memcpy(base + k->offset2, &(int){1}, sizeof(int));
            return 0;
        }
        prophet_cfg_expected(k, why, why_len);
        if (k->kind == PROPHET_KNOB_POLICY)
            *dflt = "the default"; /* the built-in default is the caller's (sched/) */
        return -1;
    case PROPHET_KNOB_U32:
        if (prophet_parse_u32(v, (uint32_t)k->lo, (uint32_t)k->hi,
                              (uint32_t *)(base + k->offset)) == 0)
            return 0;
        snprintf(why, why_len, "expected an integer from %u to %u", (unsigned)k->lo,
                 (unsigned)k->hi);
        return -1;
    case PROPHET_KNOB_BYTES:
        if (prophet_parse_bytes(v, &bytes) == 0 && (double)bytes >= k->lo)
            return memcpy(base + k->offset, &bytes, sizeof(bytes)), 0;
        snprintf(why, why_len, "expected a size such as 4096, 64KiB, 25MiB or 1GB");
        return -1;
    case PROPHET_KNOB_RATE:
        if (prophet_parse_bandwidth(v, &d) == 0)
            return memcpy(base + k->offset, &d, sizeof(d)), 0;
        snprintf(why, why_len, "expected a rate such as 10Gbit, 25Gbps, 1.25GB or 800Mbit");
        return -1;
    case PROPHET_KNOB_USEC:
        if (prophet_cfg_alpha(v, k->lo, k->hi, &d) == 0)
            return memcpy(base + k->offset, &d, sizeof(d)), 0;
        snprintf(why, why_len, "expected microseconds from %g to %s", k->lo,
                 prophet_config_number(k->hi, num, sizeof(num)));
        return -1;
    case PROPHET_KNOB_PATH:
        if (prophet_parse_path(v, base + k->offset, PROPHET_PATH_MAX) == 0)
            return 0;
        snprintf(why, why_len, "empty or longer than %d characters", PROPHET_PATH_MAX - 1);
        *dflt = "its default";
        return -1;
    case PROPHET_KNOB_ITERS:
        if (prophet_cfg_log_iters(base, k, v) == 0)
            return 0;
        snprintf(why, why_len, "expected A:B with integers 0 <= A < B");
        return -1;
    }
    snprintf(why, why_len, "unknown knob kind");
    return -1;
}

/* PROPHET_GATE's names from before the default held completions: one line each says what they
 * mean now (a notice, not an invalid value). 0 when v was one of them. */
static int prophet_cfg_gate_alias(prophet_config_t *cfg, const char *v, prophet_cfg_errs_t *e)
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
        return -1;
    }
    e->count = count;
    return 0;
}

int prophet_config_parse(prophet_config_t *cfg, const char *(*lookup)(const char *name, void *ctx),
                         void *ctx, char *errs, int errs_len)
{
    prophet_cfg_errs_t e = {.buf = errs, .len = errs_len, .used = 0, .count = 0};

    if (!cfg || !lookup)
        return -1;
    if (errs && errs_len > 0)
        errs[0] = '\0';
    prophet_config_defaults(cfg);
    for (int i = 0; i < PROPHET_NAMES_COUNT(prophet_knobs); i++) {
        const prophet_knob_t *k = &prophet_knobs[i];
        const char *v = lookup(k->name, ctx), *dflt = NULL;
        char why[128];

        if (v && k->offset == offsetof(prophet_config_t, gate) &&
            prophet_cfg_gate_alias(cfg, v, &e) == 0)
            continue;
        if (v && prophet_cfg_knob(cfg, k, v, why, sizeof(why), &dflt) != 0)
            PROPHET_BAD(&e, k->name, v, why, dflt);
    }
    return e.count;
}

/* Edit distance (insertions, deletions, substitutions) between a and b, or limit + 1 when it is
 * larger than limit. Names are short: longer ones (64 or more) count as far. */
static int prophet_cfg_distance(const char *a, const char *b, int limit)
{
    int row[64], la = (int)strlen(a), lb = (int)strlen(b);

    if (la >= 64 || lb >= 64 || abs(la - lb) > limit)
        return limit + 1;
    for (int j = 0; j <= lb; j++)
        row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0], best;

        row[0] = best = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j], v = diag + (a[i - 1] != b[j - 1]);

            if (up + 1 < v)
                v = up + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            diag = up;
            row[j] = v;
            if (v < best)
                best = v;
        }
        if (best > limit)
            return limit + 1;
    }
    return row[lb] <= limit ? row[lb] : limit + 1;
}

/* The knob nearest to name (without the PROPHET_ prefix, any case): within 2 edits and under a
 * third of the name's length, else NULL. */
static const char *prophet_cfg_nearest(const char *name, size_t len)
{
    char upper[64];
    const char *best = NULL;
    int best_d = 3;

    if (len >= sizeof(upper))
        return NULL;
    for (size_t i = 0; i < len; i++)
        upper[i] = (char)toupper((unsigned char)name[i]);
    upper[len] = '\0';
    for (int i = 0; i < PROPHET_NAMES_COUNT(prophet_knobs); i++) {
        const char *k = prophet_knobs[i].name + 8; /* after "PROPHET_" */
        int d = prophet_cfg_distance(upper, k, best_d - 1);

        if (d < best_d && 3 * d <= (int)strlen(k)) {
            best_d = d;
            best = prophet_knobs[i].name;
        }
    }
    return best;
}

int prophet_config_unknown(char *const *envp, char *errs, int errs_len)
{
    prophet_cfg_errs_t e = {.buf = errs, .len = errs_len, .used = 0, .count = 0};

    if (errs && errs_len > 0)
        errs[0] = '\0';
    for (; envp && *envp; envp++) {
        const char *var = *envp, *eq = strchr(var, '='), *near;
        size_t len = eq ? (size_t)(eq - var) : strlen(var);
        int known = 0;

        if (len <= 8 || strncmp(var, "PROPHET_", 8) != 0)
            continue;
        for (int i = 0; i < PROPHET_NAMES_COUNT(prophet_knobs) && !known; i++)
            known =
                strlen(prophet_knobs[i].name) == len && !strncmp(prophet_knobs[i].name, var, len);
        if (known)
            continue;
        near = prophet_cfg_nearest(var + 8, len - 8);
        if (near)
            prophet_cfg_error(&e, "prophet: WARN unknown variable %.*s (did you mean %s?): ignored",
                              (int)(len > 200 ? 200 : len), var, near);
        else
            prophet_cfg_error(&e, "prophet: WARN unknown variable %.*s: ignored",
                              (int)(len > 200 ? 200 : len), var);
    }
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
