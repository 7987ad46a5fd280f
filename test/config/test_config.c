/* Data-driven tests of the PROPHET_* parser: data/valid.tsv (value accepted, field set) and
 * data/invalid.tsv (one warning line naming the variable, field keeps its default). */
#include "prophet/config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct one_var {
    const char *name, *value;
} one_var_t;

static const char *one_lookup(const char *name, void *ctx)
{
    one_var_t *v = ctx;
    return strcmp(name, v->name) == 0 ? v->value : NULL;
}

/* The value of a prophet_config_t member named in the data files, found through the knob table
 * (include/prophet/config.h): no field list of its own to keep in step. Strings count as their
 * length. */
static double field_value(const prophet_config_t *c, const char *field, int *found)
{
    const char *base = (const char *)c;
    int n = 0;
    const prophet_knob_t *k = prophet_config_knobs(&n);
    char name[96];

    *found = 1;
    for (int i = 0; i < n; i++, k++) {
        size_t off = k->offset;
        if (k->kind == PROPHET_KNOB_ITERS) {
            snprintf(name, sizeof(name), "%s_begin", k->field);
            if (strcmp(field, name) != 0) {
                snprintf(name, sizeof(name), "%s_end", k->field);
                off = k->offset2;
            }
        } else {
            snprintf(name, sizeof(name), "%s", k->field);
        }
        if (strcmp(field, name) != 0)
            continue;
        switch (k->kind) {
        case PROPHET_KNOB_BOOL:
        case PROPHET_KNOB_ENUM:
        case PROPHET_KNOB_POLICY:
            return *(const int *)(base + off);
        case PROPHET_KNOB_U32:
        case PROPHET_KNOB_ITERS:
            return *(const uint32_t *)(base + off);
        case PROPHET_KNOB_BYTES:
            return (double)*(const uint64_t *)(base + off);
        case PROPHET_KNOB_RATE:
        case PROPHET_KNOB_USEC:
            return *(const double *)(base + off);
        case PROPHET_KNOB_PATH:
            return (double)strlen(base + off);
        }
    }
    *found = 0;
    return 0;
}

static int close_enough(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1.0, fabs(b));
}

/* Splits a TSV line in place into up to 4 fields; returns the count. */
static int split_tsv(char *line, char **f)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    f[n++] = line;
    for (char *p = line; *p && n < 4; p++) {
        if (*p == '\t') {
            *p = '\0';
            f[n++] = p + 1;
        }
    }
    return n;
}

static int run_file(const char *dir, const char *file, int valid)
{
    char path[1024], line[1024], errs[2048];
    prophet_config_t defaults, cfg;
    int failures = 0, cases = 0;
    FILE *fp;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    if (!(fp = fopen(path, "r"))) {
        perror(path);
        return 1;
    }
    prophet_config_defaults(&defaults);
    while (fgets(line, sizeof(line), fp)) {
        char *f[4];
        int n, found, nerr;
        one_var_t var;
        double got, want;

        if (line[0] == '#' || line[0] == '\n')
            continue;
        n = split_tsv(line, f);
        if (n < 3 || (valid && n < 4)) {
            fprintf(stderr, "%s: malformed line\n", path);
            failures++;
            continue;
        }
        cases++;
        var.name = f[0];
        var.value = f[1];
        nerr = prophet_config_parse(&cfg, one_lookup, &var, errs, sizeof(errs));
        got = field_value(&cfg, f[2], &found);
        want = valid ? strtod(f[3], NULL) : field_value(&defaults, f[2], &found);
        if (!found) {
            fprintf(stderr, "%s: unknown field %s\n", path, f[2]);
            failures++;
        } else if (valid && (nerr != 0 || !close_enough(got, want))) {
            fprintf(stderr, "FAIL %s=%s: %s=%g want %g (errors %d: %s)\n", f[0], f[1], f[2], got,
                    want, nerr, errs);
            failures++;
        } else if (!valid && (nerr != 1 || !close_enough(got, want) || !strstr(errs, f[0]) ||
                              strncmp(errs, "prophet: WARN ", 14) != 0 ||
                              strchr(errs, '\n') != errs + strlen(errs) - 1)) {
            fprintf(stderr, "FAIL invalid %s=\"%s\": errors=%d %s=%g default %g msg=[%s]\n", f[0],
                    f[1], nerr, f[2], got, want, errs);
            failures++;
        }
    }
    fclose(fp);
    printf("%s: %d cases, %d failures\n", file, cases, failures);
    return failures || cases == 0;
}

static int check_defaults(void)
{
    prophet_config_t c;
    one_var_t none = {"PROPHET_NOTHING", NULL};
    int bad = prophet_config_parse(&c, one_lookup, &none, NULL, 0);
    if (bad != 0 || c.disable || c.gate != PROPHET_GATE_HOLD || c.stall_ms != 50 ||
        c.learn_iters != 5 || c.bucket_bytes != 25ull << 20 || c.log_dir[0] != '\0' ||
        strcmp(c.cuda_lib, "libcuda.so.1") != 0 || c.alpha_us >= 0) {
        fprintf(stderr, "FAIL defaults\n");
        return 1;
    }
    return 0;
}

static int check_names(void)
{
    prophet_policy_t p;
    for (int i = 0; i < PROPHET_POLICY_COUNT; i++) {
        if (prophet_policy_from_name(prophet_policy_name((prophet_policy_t)i), &p) || (int)p != i) {
            fprintf(stderr, "FAIL policy name round trip %d\n", i);
            return 1;
        }
    }
    return prophet_policy_from_name(NULL, &p) != -1 || strcmp(prophet_policy_name(99), "unknown");
}

/* PROPHET_* names that are no knob: one line each, naming the nearest knob when it is close;
 * knobs, other variables and the bare prefix give nothing. */
static int check_unknown(void)
{
    static const struct {
        const char *var, *line; /* line: NULL when none is wanted */
    } cases[] = {
        {"PROPHET_POLICYY=fusion", "prophet: WARN unknown variable PROPHET_POLICYY (did you mean "
                                   "PROPHET_POLICY?): ignored\n"},
        {"PROPHET_DEBG=INFO",
         "prophet: WARN unknown variable PROPHET_DEBG (did you mean PROPHET_DEBUG?): ignored\n"},
        {"PROPHET_policy=fusion",
         "prophet: WARN unknown variable PROPHET_policy (did you mean PROPHET_POLICY?): ignored\n"},
        {"PROPHET_STAL_MS=5",
         "prophet: WARN unknown variable PROPHET_STAL_MS (did you mean PROPHET_STALL_MS?): "
         "ignored\n"},
        {"PROPHET_DEBUG_FIEL=/x",
         "prophet: WARN unknown variable PROPHET_DEBUG_FIEL (did you mean PROPHET_DEBUG_FILE?): "
         "ignored\n"},
        {"PROPHET_XYZZY=1", "prophet: WARN unknown variable PROPHET_XYZZY: ignored\n"},
        {"PROPHET_LG=/x",
         "prophet: WARN unknown variable PROPHET_LG (did you mean PROPHET_LOG?): ignored\n"},
        {"PROPHET_ABC=/x", "prophet: WARN unknown variable PROPHET_ABC: ignored\n"},
        {"PROPHET_FOO", "prophet: WARN unknown variable PROPHET_FOO: ignored\n"},
        {"PROPHET_POLICY=fusion", NULL},
        {"PROPHET_DEBUG_FILE=/tmp/p-%h-%p.log", NULL},
        {"PROPHET_LOG_ITERS=0:10", NULL},
        {"PROPHET_=1", NULL},
        {"NCCL_DEBUG=INFO", NULL},
        {"MY_PROPHET_POLICY=1", NULL},
    };
    char errs[512];
    int bad = 0, n;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *envp[] = {(char *)cases[i].var, NULL};
        const char *want = cases[i].line ? cases[i].line : "";

        n = prophet_config_unknown(envp, errs, sizeof(errs));
        if (n != (cases[i].line != NULL) || strcmp(errs, want) != 0) {
            fprintf(stderr, "FAIL unknown %s: %d lines [%s], want [%s]\n", cases[i].var, n, errs,
                    want);
            bad = 1;
        }
    }
    {
        char *envp[] = {"PROPHET_POLICYY=1", "HOME=/", "PROPHET_GATE=hold", "PROPHET_XYZZY=2",
                        NULL};

        if (prophet_config_unknown(envp, errs, sizeof(errs)) != 2 ||
            !strstr(errs, "PROPHET_POLICYY (did") || !strstr(errs, "PROPHET_XYZZY:")) {
            fprintf(stderr, "FAIL unknown, two of four: [%s]\n", errs);
            bad = 1;
        }
    }
    return bad;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "data";
    int rc = 0;
    rc |= check_defaults();
    rc |= check_names();
    rc |= check_unknown();
    rc |= run_file(dir, "valid.tsv", 1);
    rc |= run_file(dir, "invalid.tsv", 0);
    printf(rc ? "config: FAILED\n" : "config: all passed\n");
    return rc;
}
