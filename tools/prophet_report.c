/* prophet-report: summaries, pictures, traces and tuning advice from prophet-log/1 schedule logs.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prophet_cli.h"
#include "report.h"

#define EXIT_BADLOG 1
#define EXIT_USAGE 2

static const char usage_text[] =
    "NAME\n"
    "    prophet-report - summarise Prophet-for-NCCL schedule logs\n"
    "\n"
    "SYNOPSIS\n"
    "    prophet-report [--json] [--svg OUT [--iteration N]] [--trace OUT]\n"
    "                   [--allow-truncated] LOG...\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads one or more schedule logs (prophet-rank<R>.json, format prophet-log/1, written by\n"
    "    libprophet.so when PROPHET_LOG=DIR is set) and prints, for each rank:\n"
    "      iteration time      median and 90th percentile of the time between the starts of\n"
    "                          consecutive logged iterations (first call arrival)\n"
    "      network busy        median fraction of an iteration during which a block was on the\n"
    "                          network (union of launch..completion intervals)\n"
    "      idle gaps           time per iteration during which the network was idle while a\n"
    "                          gradient was ready and waiting for its block (median, p90)\n"
    "      blocks              blocks per iteration (median), members per block (mean, max)\n"
    "      bandwidth           the logged network model (source: fitted, ebpf, fixed or default),\n"
    "                          a least-squares fit over the logged blocks, and the median rate\n"
    "      advice              DDP bucket_cap_mb, HOROVOD_FUSION_THRESHOLD and HOROVOD_CYCLE_TIME\n"
    "                          chosen by simulating candidates on the learned profile with the\n"
    "                          network model (the sched planners and simulator), next to the\n"
    "                          predicted Prophet and optimal iteration times. Candidates can\n"
    "                          only regroup the logged calls: for a DDP job those are its\n"
    "                          buckets, so log a run with per-tensor calls (or small buckets)\n"
    "                          for the finest advice. Without a logged profile, one is rebuilt\n"
    "                          from the iterations (median readiness of each call)\n"
    "\n"
    "OPTIONS\n"
    "    --json              print one JSON object {\"logs\":[...]} instead of text\n"
    "    --svg OUT           draw the first LOG: an early iteration (before the plan) and a late\n"
    "                        one (after it), arrivals and readiness against the blocks on a time\n"
    "                        axis, as SVG\n"
    "    --iteration N       the late iteration of --svg (default: the last complete one)\n"
    "    --trace OUT         write every LOG as a Chrome trace (Trace Event Format; open it in\n"
    "                        https://ui.perfetto.dev or chrome://tracing), one process per rank\n"
    "    --allow-truncated   read a truncated log (job killed) up to its last complete record\n"
    "                        instead of rejecting it\n"
    "    -h, --help          show this help\n"
    "    --version           print the version and exit\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 1 a log is unreadable, malformed or truncated, or an output cannot be\n"
    "    written (one line on stderr naming the file and the problem); 2 bad arguments.\n"
    "\n"
    "EXAMPLES\n"
    "    PROPHET_LOG=/tmp/logs LD_PRELOAD=libprophet.so torchrun ...\n"
    "    prophet-report /tmp/logs/prophet-rank*.json\n"
    "    prophet-report --svg iter.svg --trace job.trace.json /tmp/logs/prophet-rank0.json\n"
    "\n"
    "SEE ALSO\n"
    "    docs/log-schema.md (the log format), docs/log-schema.json (its JSON Schema)\n";

typedef struct args {
    int json, allow_truncated;
    const char *svg, *trace;
    long long iteration;
    char **logs;
    int n_logs;
} args_t;

static int usage_error(const char *fmt, const char *what)
{
    return prophet_cli_usage_error("prophet-report", fmt, what);
}

/* 0 to run, 1 after --help, EXIT_USAGE on a bad argument. */
static int parse_args(int argc, char **argv, args_t *a)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"svg", required_argument, NULL, 's'},
                                         {"iteration", required_argument, NULL, 'i'},
                                         {"trace", required_argument, NULL, 't'},
                                         {"allow-truncated", no_argument, NULL, 'a'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof(*a));
    a->iteration = -1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            a->json = 1;
            break;
        case 's':
            a->svg = optarg;
            break;
        case 't':
            a->trace = optarg;
            break;
        case 'a':
            a->allow_truncated = 1;
            break;
        case 'i': {
            char *end;
            errno = 0;
            long long v = strtoll(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 0)
                return prophet_cli_bad_value("prophet-report", "--iteration", optarg,
                                             "a non-negative integer");
            a->iteration = v;
            break;
        }
        case 'h':
            fputs(usage_text, stdout);
            return 1;
        case 'V':
            prophet_cli_version("prophet-report");
            return 1;
        default:
            return prophet_cli_getopt_error("prophet-report", c, argv, opts);
        }
    }
    if (optind >= argc)
        return usage_error("%s", "no LOG given");
    if (a->iteration >= 0 && !a->svg)
        return usage_error("%s", "--iteration only applies to --svg");
    a->logs = argv + optind;
    a->n_logs = argc - optind;
    return 0;
}

/* ---- text output ------------------------------------------------------------------------ */

static void ms(char *buf, size_t len, double us)
{
    if (isfinite(us))
        snprintf(buf, len, "%.3f ms", us / 1000.0);
    else
        snprintf(buf, len, "n/a");
}

static void gbit(char *buf, size_t len, double Bps)
{
    if (isfinite(Bps) && Bps > 0)
        snprintf(buf, len, "%.3g Gbit/s", Bps * 8 / 1e9);
    else
        snprintf(buf, len, "n/a");
}

static const char *net_source(prophet_net_source_t s)
{
    static const char *const names[] = {"default", "fitted", "ebpf", "fixed"};
    return (unsigned)s < 4 ? names[s] : "?";
}

/* The closed loop's part of a plan: the figure of the candidate whose trial window closed at
 * this agreement, and what the plan is (a candidate timed, or the choice and its figure). */
static void print_trial(const rep_plan_t *p)
{
    char x[32];

    if (!p->trial)
        return;
    if (p->judged[0]) {
        ms(x, sizeof(x), (double)p->judged_us);
        printf("    trial round %lld  %s measured %s (median of %lld iterations)\n", p->round,
               p->judged, x, p->judged_samples);
    }
    if (p->trial == 2) {
        ms(x, sizeof(x), p->chosen_us >= 0 ? (double)p->chosen_us : NAN);
        printf("    trial round %lld  chose %s (measured %s)\n", p->round, p->candidate, x);
    } else {
        printf("    trial round %lld  trying %s\n", p->round, p->candidate);
    }
}

static void print_text(const rep_log_t *log, const rep_summary_t *s, const rep_advice_t *a)
{
    char x[48], y[48], z[48];
    printf("%s: rank %d of %d, host %s, pid %d, NCCL %s, policy %s, gate %s\n", log->path,
           log->rank, log->nranks, log->host, log->pid, log->nccl_version, log->policy, log->gate);
    if (log->n_iters)
        printf("  iterations        %zu logged (%llu..%llu)\n", log->n_iters,
               (unsigned long long)log->iters[0].iteration,
               (unsigned long long)log->iters[log->n_iters - 1].iteration);
    else
        printf("  iterations        none logged\n");
    if (!log->complete)
        printf("  log               not closed (job still running or killed)%s\n",
               log->recovered ? "; truncated, read up to its last complete record" : "");
    if (log->calls_dropped)
        printf("  dropped records   %llu (the log ring was full)\n",
               (unsigned long long)log->calls_dropped);
    ms(x, sizeof(x), s->iter_median_us);
    ms(y, sizeof(y), s->iter_p90_us);
    printf("  iteration time    median %s, p90 %s (%u samples)\n", x, y, s->iter_samples);
    if (isfinite(s->busy_fraction))
        printf("  network busy      %.1f%% of the iteration (median)\n", 100 * s->busy_fraction);
    else
        printf("  network busy      n/a\n");
    ms(x, sizeof(x), s->idle_wait_median_us);
    ms(y, sizeof(y), s->idle_wait_p90_us);
    printf("  idle gaps         median %s, p90 %s per iteration (network idle while a gradient "
           "waited)\n",
           x, y);
    printf("  blocks            %.0f per iteration (median), %.2f members per block (mean), max "
           "%u\n",
           s->blocks_median, s->members_mean, s->members_max);
    if (s->have_net) {
        gbit(x, sizeof(x), s->net.bandwidth_Bps);
        printf("  bandwidth model   %s (%s), alpha %.1f us, %zu updates", x, s->net.source,
               s->net.alpha_us, log->n_nets);
        if (isfinite(s->net.probe_Bps) && s->net.probe_Bps > 0) {
            gbit(y, sizeof(y), s->net.probe_Bps);
            printf(", probe %s", y);
        }
        printf("\n");
    }
    gbit(x, sizeof(x), s->have_fit ? s->fit.bandwidth_Bps : NAN);
    gbit(y, sizeof(y), s->observed_Bps);
    printf("  bandwidth blocks  fitted %s (alpha %.1f us), median per block %s\n", x,
           s->have_fit ? s->fit.alpha_us : NAN, y);
    for (size_t i = 0; i < log->n_plans; i++) {
        ms(x, sizeof(x), log->plans[i].predicted_us);
        printf("  plan v%-3u         %s from iteration %llu: %u blocks for %u calls, predicted "
               "%s\n",
               log->plans[i].version, log->plans[i].policy,
               (unsigned long long)log->plans[i].from_iteration, log->plans[i].n_blocks,
               log->plans[i].n_calls, x);
        print_trial(&log->plans[i]);
    }
    if (!a->available) {
        printf("  advice            unavailable: %s\n", a->why);
        return;
    }
    gbit(x, sizeof(x), a->net.bandwidth_Bps);
    printf("  advice            simulated on %s profile (%u gradients, %.1f MiB) over %s "
           "(%s), alpha %.1f us:\n",
           a->profile_from_log ? "the learned" : "a rebuilt", a->n_calls,
           (double)a->total_bytes / (1024.0 * 1024.0), x, net_source(a->net.source),
           a->net.alpha_us);
    ms(x, sizeof(x), a->bucket_us);
    ms(y, sizeof(y), a->bucket_default_us);
    printf("    PyTorch DDP     bucket_cap_mb=%g  predicts %s (default 25: %s)\n", a->bucket_mb, x,
           y);
    ms(x, sizeof(x), a->fusion_us);
    ms(y, sizeof(y), a->fusion_default_us);
    printf("    Horovod         HOROVOD_FUSION_THRESHOLD=%llu HOROVOD_CYCLE_TIME=%g  predicts %s "
           "(default 64 MiB, 1 ms: %s)\n",
           (unsigned long long)a->fusion_bytes, a->cycle_ms, x, y);
    ms(x, sizeof(x), a->prophet_us);
    ms(y, sizeof(y), a->optimal_us);
    ms(z, sizeof(z), a->passthrough_us);
    printf("    for reference   prophet %s, optimum %s, one call per gradient %s\n", x, y, z);
}

/* ---- JSON output ------------------------------------------------------------------------ */

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *json_summary(const rep_log_t *log, const rep_summary_t *s, const rep_advice_t *a)
{
    json_t *advice;
    if (a->available)
        advice = json_pack(
            "{s:b, s:s, s:i, s:I, s:{s:o, s:o, s:s}, s:{s:f, s:o, s:o}, s:{s:I, s:f, s:o, s:o}, "
            "s:o, s:o, s:o}",
            "available", 1, "profile", a->profile_from_log ? "logged" : "rebuilt", "n_calls",
            (int)a->n_calls, "total_bytes", (json_int_t)a->total_bytes, "net", "alpha_us",
            jnum(a->net.alpha_us), "bandwidth_Bps", jnum(a->net.bandwidth_Bps), "source",
            net_source(a->net.source), "ddp", "bucket_cap_mb", a->bucket_mb, "predicted_us",
            jnum(a->bucket_us), "default_predicted_us", jnum(a->bucket_default_us), "horovod",
            "fusion_threshold_bytes", (json_int_t)a->fusion_bytes, "cycle_time_ms", a->cycle_ms,
            "predicted_us", jnum(a->fusion_us), "default_predicted_us", jnum(a->fusion_default_us),
            "prophet_predicted_us", jnum(a->prophet_us), "optimal_predicted_us",
            jnum(a->optimal_us), "passthrough_predicted_us", jnum(a->passthrough_us));
    else
        advice = json_pack("{s:b, s:s}", "available", 0, "why", a->why);
    json_t *net = s->have_net
                      ? json_pack("{s:o, s:o, s:s, s:o}", "bandwidth_Bps",
                                  jnum(s->net.bandwidth_Bps), "alpha_us", jnum(s->net.alpha_us),
                                  "source", s->net.source, "probe_Bps", jnum(s->net.probe_Bps))
                      : json_null();
    return json_pack(
        "{s:s, s:i, s:i, s:s, s:i, s:s, s:s, s:s, s:b, s:b, s:I, s:I, s:I, s:I, s:{s:o, s:o, s:i}, "
        "s:o, s:{s:o, s:o}, s:{s:o, s:o, s:i}, s:{s:o, s:o, s:o}, s:o, s:o}",
        "log", log->path, "rank", log->rank, "nranks", log->nranks, "host", log->host, "pid",
        log->pid, "nccl_version", log->nccl_version, "policy", log->policy, "gate", log->gate,
        "complete", log->complete, "recovered", log->recovered, "iterations",
        (json_int_t)log->n_iters, "first_iteration",
        (json_int_t)(log->n_iters ? log->iters[0].iteration : 0), "last_iteration",
        (json_int_t)(log->n_iters ? log->iters[log->n_iters - 1].iteration : 0), "calls_dropped",
        (json_int_t)log->calls_dropped, "iteration_time_us", "median", jnum(s->iter_median_us),
        "p90", jnum(s->iter_p90_us), "samples", (int)s->iter_samples, "network_busy_fraction",
        jnum(s->busy_fraction), "idle_gap_us", "median", jnum(s->idle_wait_median_us), "p90",
        jnum(s->idle_wait_p90_us), "blocks", "per_iteration_median", jnum(s->blocks_median),
        "members_mean", jnum(s->members_mean), "members_max", (int)s->members_max, "bandwidth",
        "fitted_Bps", jnum(s->have_fit ? s->fit.bandwidth_Bps : NAN), "fitted_alpha_us",
        jnum(s->have_fit ? s->fit.alpha_us : NAN), "block_median_Bps", jnum(s->observed_Bps),
        "net_model", net, "advice", advice);
}

int main(int argc, char **argv)
{
    args_t a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    rep_log_t *logs = calloc((size_t)a.n_logs, sizeof(*logs));
    rep_log_t **ptrs = calloc((size_t)a.n_logs, sizeof(*ptrs));
    json_t *out = a.json ? json_array() : NULL;
    int loaded = 0;
    char err[512];
    rc = EXIT_BADLOG;
    if (!logs || !ptrs || (a.json && !out)) {
        fprintf(stderr, "prophet-report: out of memory\n");
        goto done;
    }
    for (int i = 0; i < a.n_logs; i++) {
        if (rep_load(a.logs[i], a.allow_truncated, &logs[i], err, sizeof(err)) != 0) {
            fprintf(stderr, "prophet-report: %s: %s\n", a.logs[i], err);
            goto done;
        }
        ptrs[i] = &logs[i];
        loaded = i + 1;
    }
    for (int i = 0; i < a.n_logs; i++) {
        rep_summary_t s;
        rep_advice_t adv;
        if (rep_summarize(&logs[i], &s) != 0) {
            fprintf(stderr, "prophet-report: %s: out of memory\n", a.logs[i]);
            goto done;
        }
        rep_advise(&logs[i], &s, &adv);
        if (a.json) {
            json_t *o = json_summary(&logs[i], &s, &adv);
            if (!o || json_array_append_new(out, o)) {
                fprintf(stderr, "prophet-report: %s: out of memory\n", a.logs[i]);
                goto done;
            }
        } else {
            print_text(&logs[i], &s, &adv);
        }
    }
    if (a.svg && rep_svg_write(&logs[0], a.iteration, a.svg, err, sizeof(err)) != 0) {
        fprintf(stderr, "prophet-report: %s\n", err);
        goto done;
    }
    if (a.trace && rep_trace_write(ptrs, (size_t)a.n_logs, a.trace, err, sizeof(err)) != 0) {
        fprintf(stderr, "prophet-report: %s\n", err);
        goto done;
    }
    if (a.json) {
        json_t *doc = json_pack("{s:s, s:O}", "format", "prophet-report/1", "logs", out);
        if (!doc || json_dumpf(doc, stdout, JSON_COMPACT) != 0) {
            json_decref(doc);
            fprintf(stderr, "prophet-report: cannot write the JSON summary\n");
            goto done;
        }
        json_decref(doc);
        putchar('\n');
    }
    rc = fflush(stdout) == 0 ? 0 : EXIT_BADLOG;
done:
    for (int i = 0; i < loaded; i++)
        rep_free(&logs[i]);
    json_decref(out);
    free(ptrs);
    free(logs);
    return rc;
}
