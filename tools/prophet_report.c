/* prophet-report: summaries, pictures, traces and tuning advice from prophet-log/1 schedule logs.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prophet_cli.h"
#include "report.h"

#define EXIT_BADLOG 1
#define EXIT_USAGE 2

static const char usage_text[] =
    "NAME\n"
    "    prophet-report - summarise the Prophet-for-NCCL schedule logs of a job\n"
    "\n"
    "SYNOPSIS\n"
    "    prophet-report [--per-rank] [--json] [--svg OUT [--step S | --iteration N]]\n"
    "                   [--trace OUT] [--profile-out FILE]\n"
    "                   [--allow-truncated] DIR|LOG...\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads the schedule logs of a job (prophet-rank<R>.json, format prophet-log/1, written by\n"
    "    libprophet.so when PROPHET_LOG=DIR is set). A DIR argument reads every\n"
    "    prophet-rank<R>.json in it. Chrome traces (*.trace.json, written next to the logs with\n"
    "    PROPHET_TRACE=1) are skipped with one note. A log that cannot be read is named on "
    "stderr,\n"
    "    one line each, and the others are still reported.\n"
    "\n"
    "    The report opens with the JOB, made from every rank's log:\n"
    "      steps               the job's own step numbers: step S is the job's S-th iteration\n"
    "                          counted from its first all-reduce (every step all-reduces the same\n"
    "                          bytes, and the log records the bytes before each iteration); the\n"
    "                          line maps the preload's iteration numbers to them. Everywhere an\n"
    "                          iteration is named the report gives its step first\n"
    "      iteration time      each rank's median time between consecutive iteration starts;\n"
    "                          their median, min and max over the ranks, and the slowest rank\n"
    "      plans               every agreed plan, once (plans are agreed, so the same on every\n"
    "                          rank; the report says so when a rank's differ), each marked:\n"
    "                          trial (a candidate the closed loop is timing), kept (the candidate\n"
    "                          a trial round chose) or fixed (PROPHET_POLICY fixed the policy),\n"
    "                          with the trial rounds' measured figures\n"
    "      kept                the plan the trials kept last, its measured iteration time and\n"
    "                          its gain over passthrough as measured by the trials (the\n"
    "                          passthrough figure of the kept plan's round, else the latest);\n"
    "                          a job that ended inside a trial round is said to\n"
    "      network             the preload's network model (latest, source fitted, ebpf, fixed\n"
    "                          or default), the eBPF probe's latest reading and prophet-report's\n"
    "                          own least-squares fit over the logged blocks: each the median over\n"
    "                          the ranks with the min..max spread\n"
    "      advice              ONE setting for the job: DDP bucket_cap_mb, "
    "HOROVOD_FUSION_THRESHOLD\n"
    "                          and HOROVOD_CYCLE_TIME, chosen by simulating candidates (the sched\n"
    "                          planners and simulator) on the job's profile over the job's\n"
    "                          network. The job's profile takes, for every gradient, its latest\n"
    "                          readiness over the ranks (an all-reduce cannot start before the\n"
    "                          last rank has its gradient), from the ranks whose call sequence\n"
    "                          matches the lowest rank's; the job's network is the median of the\n"
    "                          ranks' models. Candidates can only regroup the logged calls: log a\n"
    "                          run with per-tensor calls (or small buckets) for the finest advice\n"
    "      predicted           the iteration time of each policy (passthrough, fusion, buckets,\n"
    "                          prophet, optimal) at its default knobs, predicted on the same\n"
    "                          profile and network with prophet-sim's model, beside the median\n"
    "                          iteration time the logs measured. Run the job with\n"
    "                          prophet-run --observe first: what holding would give it, at no\n"
    "                          risk\n"
    "\n"
    "    With --per-rank each rank follows: its iterations, iteration time (median, p90),\n"
    "    network busy fraction, idle gaps (network idle while a gradient waited), blocks per\n"
    "    iteration, bandwidth and that rank's own advice.\n"
    "\n"
    "OPTIONS\n"
    "    --per-rank          add each rank's detail after the job summary\n"
    "    --json              print one JSON object instead of text: {\"format\":\n"
    "                        \"prophet-report/1\", \"job\": the summary with \"plans\" and\n"
    "                        \"trials\", \"logs\": each rank's detail, \"skipped\": the trace\n"
    "                        files, \"unreadable\": [{\"path\", \"error\"}]}\n"
    "    --svg OUT           draw the lowest rank's log: an early iteration (before the first\n"
    "                        plan) and a late one, arrivals and readiness against the blocks on\n"
    "                        a time axis, as SVG; each panel's title names the job's step and\n"
    "                        the plan in force with its mark (trial, kept or fixed)\n"
    "    --step S            the late iteration of --svg: the one that begins the job's step S\n"
    "    --iteration N       the late iteration of --svg, a preload iteration number (default:\n"
    "                        the last complete one)\n"
    "    --trace OUT         write every log as a Chrome trace (Trace Event Format; open it in\n"
    "                        https://ui.perfetto.dev or chrome://tracing), one process per rank,\n"
    "                        with a span per iteration named by its step and a marker where\n"
    "                        each plan starts\n"
    "    --profile-out FILE  write the job's profile that the predictions are made from (each\n"
    "                        call's latest readiness over the ranks) as a prophet-profile/1\n"
    "                        file: prophet-sim on FILE, given the ranks, link_Bps and alpha_us\n"
    "                        of the \"predicted_by_policy_us\" object of --json, predicts the\n"
    "                        same times\n"
    "    --allow-truncated   read a truncated log (job killed) up to its last complete record\n"
    "                        instead of rejecting it\n"
    "    -h, --help          show this help\n"
    "    --version           print the version and exit\n"
    "\n"
    "EXIT STATUS\n"
    "    0  at least one log was read and reported (unreadable ones are named on stderr)\n"
    "    1  no log could be read, or an output (--svg, --trace, stdout) cannot be written\n"
    "    2  bad arguments\n"
    "\n"
    "EXAMPLES\n"
    "    PROPHET_LOG=/tmp/logs LD_PRELOAD=libprophet.so torchrun ...\n"
    "    prophet-report /tmp/logs\n"
    "    prophet-report --per-rank /tmp/logs/prophet-rank*.json\n"
    "    prophet-report --svg iter.svg --trace job.trace.json /tmp/logs\n"
    "\n"
    "SEE ALSO\n"
    "    docs/log-schema.md (the log format), docs/log-schema.json (its JSON Schema)\n";

typedef struct args {
    int json, allow_truncated, per_rank;
    const char *svg, *trace, *profile_out;
    long long iteration, step;
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
                                         {"step", required_argument, NULL, 'S'},
                                         {"trace", required_argument, NULL, 't'},
                                         {"profile-out", required_argument, NULL, 'P'},
                                         {"allow-truncated", no_argument, NULL, 'a'},
                                         {"per-rank", no_argument, NULL, 'r'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof(*a));
    a->iteration = a->step = -1;
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
        case 'P':
            a->profile_out = optarg;
            break;
        case 'a':
            a->allow_truncated = 1;
            break;
        case 'r':
            a->per_rank = 1;
            break;
        case 'i':
        case 'S': {
            long v;
            if (prophet_cli_long_value("prophet-report", c == 'i' ? "--iteration" : "--step",
                                       optarg, 0, LONG_MAX, "a non-negative integer", &v))
                return PROPHET_CLI_EXIT_USAGE;
            *(c == 'i' ? &a->iteration : &a->step) = v;
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
    if (a->step >= 0 && (!a->svg || a->iteration >= 0))
        return usage_error("%s", "--step only applies to --svg, without --iteration");
    a->logs = argv + optind;
    a->n_logs = argc - optind;
    return 0;
}

static int cmp_rank(const void *a, const void *b)
{
    const rep_log_t *x = *(rep_log_t *const *)a, *y = *(rep_log_t *const *)b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* Reads every input; the good logs go to ptrs (sorted by rank), the others are named. */
static size_t load_logs(const args_t *a, rep_inputs_t *in, rep_log_t *logs, rep_log_t **ptrs)
{
    size_t good = 0;
    char err[512];
    for (size_t i = 0; i < in->n_logs; i++) {
        if (rep_load(in->logs[i], a->allow_truncated, &logs[good], err, sizeof(err)) != 0) {
            rep_inputs_problem(in, in->logs[i], err);
            continue;
        }
        ptrs[good] = &logs[good];
        good++;
    }
    qsort(ptrs, good, sizeof(*ptrs), cmp_rank);
    for (size_t i = 1; i < good; i++)
        if (ptrs[i]->rank == ptrs[i - 1]->rank)
            fprintf(stderr,
                    "prophet-report: note: %s and %s are both rank %d (two jobs in one "
                    "directory?)\n",
                    ptrs[i - 1]->path, ptrs[i]->path, ptrs[i]->rank);
    if (in->n_traces)
        fprintf(stderr,
                "prophet-report: note: skipped %zu Chrome trace file%s (*.trace.json: open %s in "
                "https://ui.perfetto.dev)\n",
                in->n_traces, in->n_traces == 1 ? "" : "s", in->n_traces == 1 ? "it" : "them");
    return good;
}

static json_t *json_document(const rep_job_t *job, rep_log_t *const *ptrs,
                             const rep_summary_t *sums, const rep_advice_t *advs, size_t n,
                             const rep_inputs_t *in)
{
    json_t *logs = json_array(), *skipped = json_array(), *bad = json_array();
    for (size_t i = 0; logs && i < n; i++)
        json_array_append_new(logs, rep_json_rank(ptrs[i], &sums[i], &advs[i]));
    for (size_t i = 0; skipped && i < in->n_traces; i++)
        json_array_append_new(skipped, json_string(in->traces[i]));
    for (size_t i = 0; bad && i < in->n_problems; i++)
        json_array_append_new(bad, json_pack("{s:s, s:s}", "path", in->problems[i].path, "error",
                                             in->problems[i].error));
    return json_pack("{s:s, s:o, s:o, s:o, s:o}", "format", "prophet-report/1", "job",
                     rep_json_job(job, ptrs, sums, n), "logs", logs, "skipped", skipped,
                     "unreadable", bad);
}

int main(int argc, char **argv)
{
    args_t a;
    rep_inputs_t in = {0};
    rep_job_t job = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    rc = EXIT_BADLOG;
    size_t good = 0;
    rep_log_t *logs = NULL, **ptrs = NULL;
    rep_summary_t *sums = NULL;
    rep_advice_t *advs = NULL;
    char err[512];
    if (rep_inputs_expand(a.logs, (size_t)a.n_logs, &in) != 0)
        goto oom;
    size_t cap = in.n_logs + 1;
    logs = calloc(cap, sizeof(*logs));
    ptrs = calloc(cap, sizeof(*ptrs));
    sums = calloc(cap, sizeof(*sums));
    advs = calloc(cap, sizeof(*advs));
    if (!logs || !ptrs || !sums || !advs)
        goto oom;
    good = load_logs(&a, &in, logs, ptrs);
    if (good == 0) {
        if (in.n_problems == 0)
            fprintf(stderr, "prophet-report: no log among the arguments (only trace files)\n");
        goto done;
    }
    for (size_t i = 0; i < good; i++) {
        if (rep_summarize(ptrs[i], &sums[i]) != 0)
            goto oom;
        if (a.per_rank || a.json)
            rep_advise(ptrs[i], &sums[i], &advs[i]);
    }
    if (rep_job_build(ptrs, sums, good, &job) != 0)
        goto oom;
    if (a.json) {
        json_t *doc = json_document(&job, ptrs, sums, advs, good, &in);
        if (!doc || json_dumpf(doc, stdout, JSON_COMPACT) != 0) {
            json_decref(doc);
            fprintf(stderr, "prophet-report: cannot write the JSON summary\n");
            goto done;
        }
        json_decref(doc);
        putchar('\n');
    } else {
        rep_text_job(&job, ptrs, good, &in);
        for (size_t i = 0; a.per_rank && i < good; i++) {
            putchar('\n');
            rep_text_rank(ptrs[i], &sums[i], &advs[i], job.plans_differ);
        }
    }
    if (a.svg && a.step >= 0) {
        a.iteration = -1;
        for (size_t i = 0; i < ptrs[0]->n_iters; i++)
            if (ptrs[0]->iters[i].step_exact && ptrs[0]->iters[i].step == a.step)
                a.iteration = (long long)ptrs[0]->iters[i].iteration;
        if (a.iteration < 0) {
            int64_t s0, s1;
            if (rep_step_range(ptrs[0], &s0, &s1) == 0)
                fprintf(stderr,
                        "prophet-report: %s: no logged iteration begins step %lld (the logged "
                        "ones lie in steps %lld..%lld)\n",
                        ptrs[0]->path, a.step, (long long)s0, (long long)s1);
            else
                fprintf(stderr, "prophet-report: %s: the log does not number the job's steps\n",
                        ptrs[0]->path);
            goto done;
        }
    }
    if (a.svg && rep_svg_write(ptrs[0], a.iteration, a.svg, err, sizeof(err)) != 0) {
        fprintf(stderr, "prophet-report: %s\n", err);
        goto done;
    }
    if (a.trace && rep_trace_write(ptrs, good, a.trace, err, sizeof(err)) != 0) {
        fprintf(stderr, "prophet-report: %s\n", err);
        goto done;
    }
    if (a.profile_out) {
        const char *why;
        if (rep_job_profile_write(ptrs, sums, good, a.profile_out, &why) != 0) {
            fprintf(stderr, "prophet-report: --profile-out %s: %s\n", a.profile_out, why);
            goto done;
        }
    }
    rc = fflush(stdout) == 0 ? 0 : EXIT_BADLOG;
    goto done;
oom:
    fprintf(stderr, "prophet-report: out of memory\n");
done:
    rep_job_free(&job);
    for (size_t i = 0; i < good; i++)
        rep_free(ptrs[i]);
    free(advs);
    free(sums);
    free(ptrs);
    free(logs);
    rep_inputs_free(&in);
    return rc;
}
