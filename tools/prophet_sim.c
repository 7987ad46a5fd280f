/* prophet-sim: predicted iteration time of every scheduling policy on a prophet-profile/1 file.
 * The model is the one of sched/sim.c (see there); this file is only the command line. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "prophet/sched.h"
#include "prophet_cli.h"

#define EXIT_USAGE PROPHET_CLI_EXIT_USAGE
#define PROG "prophet-sim"

/* the names of include/prophet/config.h's one list (prophet-sim does not link the parser) */
static const char *const policy_names[PROPHET_POLICY_COUNT] = {
    PROPHET_VALUES_policy(PROPHET_ENUM_NAME)};

static const char usage_text[] =
    "NAME\n"
    "    prophet-sim - predicted iteration time of every Prophet scheduling policy\n"
    "\n"
    "SYNOPSIS\n"
    "    prophet-sim --profile FILE [OPTION]...\n"
    "\n"
    "DESCRIPTION\n"
    "    Predicts the iteration time of each scheduling policy (passthrough, fusion, buckets,\n"
    "    prophet, optimal) for the gradients of a prophet-profile/1 file and prints it with its\n"
    "    ratio to the optimum (the MG-WFBP dynamic programme: the earliest possible end of the\n"
    "    last all-reduce block). The default policy (the one libprophet.so uses when\n"
    "    PROPHET_POLICY is unset) is marked in the table.\n"
    "\n"
    "MODEL\n"
    "    Backward starts at t = 0; gradient i is ready at its \"ready_us\"; backward ends at\n"
    "    max(\"backward_us\", last ready). A policy cuts the gradients, in backward order, into\n"
    "    blocks of consecutive gradients; blocks run one after another, block k starting at\n"
    "    max(end of block k-1, latest ready time of its members) and lasting\n"
    "    ALPHA + 2(N-1)/N * bytes / BANDWIDTH (ring all-reduce over N ranks). The iteration time\n"
    "    runs from one backward start to the next: the next forward (\"forward_us\") starts as\n"
    "    --wait says.\n"
    "\n"
    "OPTIONS\n"
    "    --profile FILE       prophet-profile/1 JSON file to simulate (required)\n"
    "    --ranks N            number of ranks in the ring, 1..1048576 (default 8)\n"
    "    --bandwidth BW       link bandwidth per rank (default 10Gbit), the grammar of\n"
    "                         PROPHET_BANDWIDTH: bits per second with bit, Kbit, Mbit, Gbit,\n"
    "                         Tbit (or bps, Kbps, Mbps, Gbps, Tbps; powers of 10); bytes per\n"
    "                         second with B, KB, MB, GB (powers of 10) or KiB, MiB, GiB (powers\n"
    "                         of 2), each optionally followed by /s. A bare number is bytes per\n"
    "                         second\n"
    "    --alpha T            fixed cost of one all-reduce (default 60us); units us, ms, s\n"
    "                         (a bare number is microseconds)\n"
    "    --wait MODE          all (default): the next forward waits for the last block;\n"
    "                         per-layer: the next forward runs layers in priority order (0\n"
    "                         first), the forward time shared in proportion to each gradient's\n"
    "                         backward compute, and layer p waits only for the block holding\n"
    "                         gradient p\n"
    "    --fusion-bytes SIZE  fusion policy: most bytes fused into one block (default 64MiB)\n"
    "    --cycle-us US        fusion policy: cycle time in microseconds (default 1000)\n"
    "    --bucket-bytes SIZE  buckets policy: bucket size (default 25MiB; the first is 1MiB)\n"
    "    --compute-scale F    multiply every compute time of the profile (each gradient's\n"
    "                         ready time, forward and backward) by F, 0 < F <= 100 (default 1):\n"
    "                         0.25 is a GPU four times faster than the one the profile was\n"
    "                         measured on, which leaves the all-reduces less compute to hide\n"
    "                         behind\n"
    "    --credit-bytes SIZE  prophet policy: credit window after gradient 0 (default 0: one\n"
    "                         block). SIZE: a byte count with K, M, G or KiB, MiB, GiB (powers\n"
    "                         of 2) or KB, MB, GB (powers of 10), as the PROPHET_*_BYTES knobs\n"
    "    --jitter FRAC        robustness check (default 0: off): plans are made on the profile\n"
    "                         as given, then run on --trials perturbed copies in which every\n"
    "                         gap between consecutive gradients is scaled by an independent\n"
    "                         factor drawn uniformly from [1-FRAC, 1+FRAC] (0 <= FRAC <= 1).\n"
    "                         Iteration times are means over the copies; the optimum is the\n"
    "                         mean of each copy's own optimum (a clairvoyant planner), so even\n"
    "                         optimal may exceed 1\n"
    "    --trials N           number of perturbed copies for --jitter, 1..100000 (default 50)\n"
    "    --seed N             seed of the perturbations (default 1)\n"
    "    --json               print exactly one JSON object instead of the table:\n"
    "                         {\"default\": NAME, \"policies\": {NAME: {\"iteration_us\": X,\n"
    "                         \"ratio_to_optimum\": R}, ...}}\n"
    "    -h, --help           print this help and exit\n"
    "    --version            print the version and exit\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 1 the profile cannot be read or simulated; 2 bad arguments (one line naming\n"
    "    the problem, then a pointer to --help).\n"
    "\n"
    "EXAMPLES\n"
    "    prophet-sim --profile PREFIX/share/prophet/profiles/resnet50.json --ranks 8 \\\n"
    "        --bandwidth 25Gbit --alpha 300us\n"
    "\n"
    "FILES\n"
    "    PREFIX/share/prophet/profiles/*.json   the gradient profiles of common models\n"
    "                                           (PREFIX: the install prefix, e.g. /usr)\n"
    "\n"
    "SEE ALSO\n"
    "    prophet-report(1), prophet-run(1)\n";

/* OPT: 'VALUE' is not WHAT (prophet_cli.h's usage error) */
static int bad_value(const char *opt, const char *value, const char *what)
{
    return prophet_cli_bad_value(PROG, opt, value, what);
}

/* Splits "12.5Gbit" into 12.5 and "Gbit"; -1 when there is no leading number. */
static int split_number(const char *s, double *v, const char **unit)
{
    char *end;

    errno = 0;
    *v = strtod(s, &end);
    if (end == s || errno || !isfinite(*v) || *v < 0)
        return -1;
    while (*end == ' ')
        end++;
    *unit = end;
    return 0;
}

/* The same parsers as PROPHET_BANDWIDTH and the PROPHET_*_BYTES knobs (lib/config/config.c). */
static int parse_bandwidth(const char *s, double *Bps)
{
    return prophet_parse_bandwidth(s, Bps);
}

static int parse_size(const char *s, uint64_t *bytes)
{
    return prophet_parse_bytes(s, bytes);
}

static int parse_time_us(const char *s, double *us)
{
    const char *unit;
    double v;

    if (split_number(s, &v, &unit))
        return -1;
    if (!*unit || !strcmp(unit, "us"))
        *us = v;
    else if (!strcmp(unit, "ms"))
        *us = v * 1e3;
    else if (!strcmp(unit, "s"))
        *us = v * 1e6;
    else
        return -1;
    return 0;
}

/* The value S of OPT, a whole number in [lo, hi], into *out (prophet_cli's usage error). */
static int uint_value(const char *opt, const char *s, long lo, long hi, uint32_t *out)
{
    long v;
    int rc = prophet_cli_long_value(PROG, opt, s, lo, hi, NULL, &v);

    if (rc == 0)
        *out = (uint32_t)v;
    return rc;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;

    if (!f)
        return NULL;
    for (;;) {
        if (n == cap) {
            char *nb = realloc(buf, cap ? cap * 2 : 65536);

            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap = cap ? cap * 2 : 65536;
        }
        size_t r = fread(buf + n, 1, cap - n, f);

        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

typedef struct sim_args {
    const char *profile;
    uint32_t ranks;
    double link_Bps, alpha_us;
    int json, per_layer;
    double jitter, compute_scale;
    uint32_t trials, seed;
    prophet_planner_opts_t popts;
} sim_args_t;

static int parse_args(int argc, char **argv, sim_args_t *a)
{
    enum {
        O_PROFILE = 256,
        O_RANKS,
        O_BW,
        O_ALPHA,
        O_WAIT,
        O_JSON,
        O_FUSION,
        O_CYCLE,
        O_BUCKET,
        O_CREDIT,
        O_JITTER,
        O_TRIALS,
        O_SEED,
        O_SCALE,
        O_VERSION
    };
    static const struct option longopts[] = {
        {"profile", required_argument, 0, O_PROFILE},
        {"ranks", required_argument, 0, O_RANKS},
        {"bandwidth", required_argument, 0, O_BW},
        {"alpha", required_argument, 0, O_ALPHA},
        {"wait", required_argument, 0, O_WAIT},
        {"json", no_argument, 0, O_JSON},
        {"fusion-bytes", required_argument, 0, O_FUSION},
        {"cycle-us", required_argument, 0, O_CYCLE},
        {"bucket-bytes", required_argument, 0, O_BUCKET},
        {"credit-bytes", required_argument, 0, O_CREDIT},
        {"jitter", required_argument, 0, O_JITTER},
        {"trials", required_argument, 0, O_TRIALS},
        {"seed", required_argument, 0, O_SEED},
        {"compute-scale", required_argument, 0, O_SCALE},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        {0, 0, 0, 0},
    };
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case O_PROFILE:
            a->profile = optarg;
            break;
        case O_RANKS:
            if (uint_value("--ranks", optarg, 1, 1048576, &a->ranks))
                return PROPHET_CLI_EXIT_USAGE;
            break;
        case O_BW:
            if (parse_bandwidth(optarg, &a->link_Bps))
                return bad_value("--bandwidth", optarg,
                                 "a bandwidth such as 10Gbit, 25Gbps, 1.25GB");
            break;
        case O_ALPHA:
            if (parse_time_us(optarg, &a->alpha_us))
                return bad_value("--alpha", optarg, "a time such as 300us, 0.3ms");
            break;
        case O_WAIT:
            if (!strcmp(optarg, "all"))
                a->per_layer = 0;
            else if (!strcmp(optarg, "per-layer"))
                a->per_layer = 1;
            else
                return bad_value("--wait", optarg, "all or per-layer");
            break;
        case O_JSON:
            a->json = 1;
            break;
        case O_FUSION:
            if (parse_size(optarg, &a->popts.fusion_bytes) || !a->popts.fusion_bytes)
                return bad_value("--fusion-bytes", optarg, "a size such as 64MiB");
            break;
        case O_CYCLE:
            if (uint_value("--cycle-us", optarg, 1, 100000000, &a->popts.cycle_us))
                return PROPHET_CLI_EXIT_USAGE;
            break;
        case O_BUCKET:
            if (parse_size(optarg, &a->popts.bucket_bytes) || !a->popts.bucket_bytes)
                return bad_value("--bucket-bytes", optarg, "a size such as 25MiB");
            break;
        case O_CREDIT:
            if (parse_size(optarg, &a->popts.credit_bytes))
                return bad_value("--credit-bytes", optarg, "a size such as 4MiB");
            break;
        case O_JITTER:
            if (prophet_cli_double_value(PROG, "--jitter", optarg, 0, 1, 0, "a fraction 0..1",
                                         &a->jitter))
                return PROPHET_CLI_EXIT_USAGE;
            break;
        case O_TRIALS:
            if (uint_value("--trials", optarg, 1, 100000, &a->trials))
                return PROPHET_CLI_EXIT_USAGE;
            break;
        case O_SEED:
            if (uint_value("--seed", optarg, 0, 4294967295l, &a->seed))
                return PROPHET_CLI_EXIT_USAGE;
            break;
        case O_SCALE:
            if (prophet_cli_double_value(PROG, "--compute-scale", optarg, 0, 100, 1,
                                         "a factor 0 < F <= 100", &a->compute_scale))
                return PROPHET_CLI_EXIT_USAGE;
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(0);
        case O_VERSION:
            prophet_cli_version(PROG);
            exit(0);
        default:
            return prophet_cli_getopt_error(PROG, c, argv, longopts);
        }
    }
    if (optind < argc)
        return prophet_cli_usage_error(PROG, "unexpected argument '%s'", argv[optind]);
    if (!a->profile)
        return prophet_cli_usage_error(PROG, "--profile FILE is required");
    return 0;
}

static double uniform_pm1(uint64_t *s) /* [-1, 1) */
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 4503599627370496.0 - 1.0;
}

/* A copy of `src` whose gaps between consecutive gradients (and before the first and after the
 * last) are each scaled by 1 + frac * U(-1, 1). */
static void perturb(const prophet_profile_t *src, prophet_profile_t *dst, double frac,
                    uint64_t *rng)
{
    double t = src->ready_us[0] * (1 + frac * uniform_pm1(rng));
    uint32_t i, n = src->n_calls;

    memcpy(dst, src, sizeof(*dst));
    dst->ready_us[0] = t;
    for (i = 1; i < n; i++) {
        double gap = src->ready_us[i] - src->ready_us[i - 1];

        t += gap * (1 + frac * uniform_pm1(rng));
        dst->ready_us[i] = t;
    }
    if (src->backward_us > src->ready_us[n - 1])
        dst->backward_us =
            t + (src->backward_us - src->ready_us[n - 1]) * (1 + frac * uniform_pm1(rng));
    else
        dst->backward_us = t;
}

/* A faster (F < 1) or slower GPU: every compute interval of the profile scaled by F. */
static void scale_compute(prophet_profile_t *p, double f)
{
    uint32_t i;

    for (i = 0; i < p->n_calls; i++) {
        p->ready_us[i] *= f;
        p->spread_us[i] *= f;
    }
    for (i = 0; i < p->n_steps; i++) {
        p->steps[i].ready_us *= f;
        p->steps[i].gap_after_us *= f;
    }
    p->iteration_us *= f;
    p->forward_us *= f;
    p->backward_us *= f;
}

static int simulate(const prophet_sim_opts_t *so, const prophet_profile_t *prof,
                    const prophet_net_t *net, const prophet_plan_t *plan, double *iter)
{
    prophet_sim_result_t res;
    int err = prophet_sim_run(so, prof, net, plan, &res);

    *iter = res.iteration_us;
    return err;
}

/* Fills iter[] (mean iteration time per policy) and *optimum; plans come from `prof`. */
static int evaluate(const sim_args_t *a, const prophet_profile_t *prof, const prophet_net_t *net,
                    double *iter, uint32_t *blocks, double *optimum)
{
    const prophet_sim_opts_t so = {.ranks = a->ranks, .wait_per_layer = a->per_layer};
    prophet_planner_opts_t po = a->popts;
    prophet_plan_t *plans = malloc(sizeof(*plans) * (PROPHET_POLICY_COUNT + 1));
    prophet_profile_t *q = malloc(sizeof(*q));
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ a->seed;
    double t, opt_sum = 0;
    uint32_t trial;
    int p, err = -ENOMEM;

    if (!plans || !q)
        goto out;
    for (p = 0; p < PROPHET_POLICY_COUNT; p++) {
        po.policy = (prophet_policy_t)p;
        err = prophet_plan_make(&po, prof, net, &plans[p]);
        if (err) {
            fprintf(stderr, "prophet-sim: %s: planning %s failed: %s\n", a->profile,
                    policy_names[p], strerror(-err));
            goto out;
        }
        blocks[p] = plans[p].n_blocks;
        iter[p] = 0;
    }
    for (trial = 0; trial < (a->jitter > 0 ? a->trials : 1); trial++) {
        const prophet_profile_t *inst = prof;

        if (a->jitter > 0) {
            perturb(prof, q, a->jitter, &rng);
            inst = q;
            po.policy = PROPHET_POLICY_OPTIMAL; /* the clairvoyant optimum of this copy */
            err = prophet_plan_make(&po, q, net, &plans[PROPHET_POLICY_COUNT]);
            if (!err)
                err = simulate(&so, q, net, &plans[PROPHET_POLICY_COUNT], &t);
            if (err)
                goto fail;
            opt_sum += t;
        }
        for (p = 0; p < PROPHET_POLICY_COUNT; p++) {
            err = simulate(&so, inst, net, &plans[p], &t);
            if (err)
                goto fail;
            iter[p] += t;
        }
    }
    for (p = 0; p < PROPHET_POLICY_COUNT; p++)
        iter[p] /= trial;
    *optimum = a->jitter > 0 ? opt_sum / trial : iter[PROPHET_POLICY_OPTIMAL];
    err = 0;
    goto out;
fail:
    fprintf(stderr, "prophet-sim: %s: simulation failed: %s\n", a->profile, strerror(-err));
out:
    free(plans);
    free(q);
    return err;
}

int main(int argc, char **argv)
{
    sim_args_t a = {.ranks = 8,
                    .link_Bps = 1.25e9,
                    .alpha_us = 60,
                    .trials = 50,
                    .seed = 1,
                    .compute_scale = 1};
    prophet_profile_t *prof = NULL;
    prophet_net_t net;
    double iter[PROPHET_POLICY_COUNT], optimum;
    uint32_t blocks[PROPHET_POLICY_COUNT];
    prophet_policy_t def = prophet_policy_default();
    char errbuf[256] = "";
    char *text = NULL;
    size_t len = 0;
    int rc = 1, err, p;

    err = parse_args(argc, argv, &a);
    if (err)
        return err;
    prof = malloc(sizeof(*prof));
    if (!prof) {
        fprintf(stderr, "prophet-sim: out of memory\n");
        goto out;
    }
    text = read_file(a.profile, &len);
    if (!text) {
        fprintf(stderr, "prophet-sim: cannot read %s: %s\n", a.profile, strerror(errno));
        goto out;
    }
    if (prophet_profile_from_json(text, len, prof, errbuf, sizeof(errbuf))) {
        fprintf(stderr, "prophet-sim: %s: %s\n", a.profile, errbuf);
        goto out;
    }
    if (a.compute_scale != 1)
        scale_compute(prof, a.compute_scale);
    net.alpha_us = a.alpha_us;
    net.bandwidth_Bps = prophet_ring_algbw(a.link_Bps, a.ranks);
    net.source = PROPHET_NET_FIXED;
    a.popts.ranks = a.ranks;
    if (evaluate(&a, prof, &net, iter, blocks, &optimum))
        goto out;
    if (a.json) {
        printf("{\"default\": \"%s\", \"policies\": {", policy_names[def]);
        for (p = 0; p < PROPHET_POLICY_COUNT; p++)
            printf("%s\"%s\": {\"iteration_us\": %.3f, \"ratio_to_optimum\": %.6f}", p ? ", " : "",
                   policy_names[p], iter[p], iter[p] / optimum);
        printf("}}\n");
    } else {
        uint64_t total = 0;

        for (uint32_t i = 0; i < prof->n_calls; i++)
            total += prof->sig[i].bytes;
        printf("%s: %u gradients, %.1f MB; %u ranks, link %.3g Gbit/s (all-reduce %.3g GB/s), "
               "alpha %g us, wait %s, compute x%g\n",
               a.profile, prof->n_calls, total / 1e6, a.ranks, a.link_Bps * 8 / 1e9,
               net.bandwidth_Bps / 1e9, a.alpha_us, a.per_layer ? "per-layer" : "all",
               a.compute_scale);
        if (a.jitter > 0)
            printf("jitter %g over %u trials: means; optimum = mean clairvoyant optimum %.1f us\n",
                   a.jitter, a.trials, optimum);
        printf("%-12s %14s %10s %8s\n", "policy", "iteration_us", "ratio", "blocks");
        for (p = 0; p < PROPHET_POLICY_COUNT; p++)
            printf("%-12s %14.1f %10.4f %8u%s\n", policy_names[p], iter[p], iter[p] / optimum,
                   blocks[p], p == (int)def ? "  (default)" : "");
    }
    rc = 0;
out:
    free(text);
    free(prof);
    return rc;
}
