/* Aggregating the ranks' timings: the summary line and the --json object. */
#include "report.h"

#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct emu_stats {
    double *rank0; /* measured iterations of rank 0 */
    double *max;   /* per measured iteration, max over ranks */
    int n;
    double median, mean, median_max;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double *c = malloc(sizeof(double) * (size_t)n), m;

    if (!c || n == 0) {
        free(c);
        return 0;
    }
    memcpy(c, v, sizeof(double) * (size_t)n);
    qsort(c, (size_t)n, sizeof(double), cmp_double);
    m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}

static int stats_compute(const struct emu_options *opt, const struct emu_shared *sh,
                         struct emu_stats *s)
{
    int w = opt->warmup;

    s->n = opt->iters;
    s->rank0 = calloc((size_t)s->n, sizeof(double));
    s->max = calloc((size_t)s->n, sizeof(double));
    if (!s->rank0 || !s->max)
        return -1;
    s->mean = 0;
    for (int i = 0; i < s->n; i++) {
        s->rank0[i] = sh->iter_us[w + i];
        s->max[i] = 0;
        for (int r = 0; r < opt->ranks; r++) {
            double v = sh->iter_us[(size_t)r * (size_t)sh->total_iters + (size_t)(w + i)];
            s->max[i] = v > s->max[i] ? v : s->max[i];
        }
        s->mean += s->rank0[i] / s->n;
    }
    s->median = median(s->rank0, s->n);
    s->median_max = median(s->max, s->n);
    return 0;
}

static json_t *array_of(const double *v, int n)
{
    json_t *a = json_array();

    for (int i = 0; a && i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

/* --kill-rank: {"rank", "iter", "survivor_exit_s": [per rank, -1 = killed or not measured],
 * "max_survivor_exit_s", "survivors_failed"}. */
static json_t *kill_json(const struct emu_options *opt, const struct emu_shared *sh)
{
    json_t *a = json_array();
    double mx = -1;
    int failed = 0;

    for (int r = 0; a && r < opt->ranks; r++) {
        double v = sh->exit_after_kill_s[r];
        json_array_append_new(a, json_real(v));
        mx = v > mx ? v : mx;
        failed += r != opt->kill_rank && sh->result[r].finished && !sh->result[r].ok;
    }
    return json_pack("{s:i, s:i, s:o, s:f, s:i}", "rank", opt->kill_rank, "iter", opt->kill_at_iter,
                     "survivor_exit_s", a, "max_survivor_exit_s", mx, "survivors_failed", failed);
}

/* --rss: {"at_iter", "warm_kb", "end_kb", "heap_warm_kb", "heap_end_kb" (per rank),
 * "max_growth_kb", "max_heap_growth_kb"}. */
static json_t *kb_array(const struct emu_options *opt, const struct emu_shared *sh, size_t off)
{
    json_t *a = json_array();

    for (int r = 0; a && r < opt->ranks; r++)
        json_array_append_new(
            a, json_integer((json_int_t) * (const uint64_t *)((const char *)&sh->result[r] + off)));
    return a;
}

static long long max_growth(const struct emu_options *opt, const struct emu_shared *sh, size_t w,
                            size_t e)
{
    long long mx = 0;

    for (int r = 0; r < opt->ranks; r++) {
        const char *x = (const char *)&sh->result[r];
        long long g = (long long)*(const uint64_t *)(x + e) - (long long)*(const uint64_t *)(x + w);
        mx = r == 0 || g > mx ? g : mx;
    }
    return mx;
}

static json_t *rss_json(const struct emu_options *opt, const struct emu_shared *sh)
{
    return json_pack(
        "{s:i, s:o, s:o, s:o, s:o, s:I, s:I}", "at_iter", opt->rss_at, "warm_kb",
        kb_array(opt, sh, offsetof(struct emu_rank_result, rss_warm_kb)), "end_kb",
        kb_array(opt, sh, offsetof(struct emu_rank_result, rss_end_kb)), "heap_warm_kb",
        kb_array(opt, sh, offsetof(struct emu_rank_result, heap_warm_kb)), "heap_end_kb",
        kb_array(opt, sh, offsetof(struct emu_rank_result, heap_end_kb)), "max_growth_kb",
        (json_int_t)max_growth(opt, sh, offsetof(struct emu_rank_result, rss_warm_kb),
                               offsetof(struct emu_rank_result, rss_end_kb)),
        "max_heap_growth_kb",
        (json_int_t)max_growth(opt, sh, offsetof(struct emu_rank_result, heap_warm_kb),
                               offsetof(struct emu_rank_result, heap_end_kb)));
}

/* Per rank: the uint64_t field at `off` of each rank's result. */
static json_t *u64_array(const struct emu_options *opt, const struct emu_shared *sh, size_t off)
{
    return kb_array(opt, sh, off);
}

/* Per rank: the long long field at `off` of each rank's calls on communicator c. */
static json_t *calls_array(const struct emu_options *opt, const struct emu_shared *sh, int c,
                           size_t off)
{
    json_t *a = json_array();

    for (int r = 0; a && r < opt->ranks; r++)
        json_array_append_new(
            a, json_integer((json_int_t) *
                            (const long long *)((const char *)&sh->result[r].comm[c] + off)));
    return a;
}

/* {"allreduce", "allreduce_after_warmup", "broadcast", "broadcast_after_warmup",
 * "job_allreduce", "job_broadcast"}, each per rank. */
static json_t *comm_json(const struct emu_options *opt, const struct emu_shared *sh, int c)
{
    return json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o}", "allreduce",
        calls_array(opt, sh, c, offsetof(struct emu_comm_calls, allreduce)),
        "allreduce_after_warmup",
        calls_array(opt, sh, c, offsetof(struct emu_comm_calls, allreduce_after_warmup)),
        "broadcast", calls_array(opt, sh, c, offsetof(struct emu_comm_calls, broadcast)),
        "broadcast_after_warmup",
        calls_array(opt, sh, c, offsetof(struct emu_comm_calls, broadcast_after_warmup)),
        "job_allreduce", calls_array(opt, sh, c, offsetof(struct emu_comm_calls, job_allreduce)),
        "job_broadcast", calls_array(opt, sh, c, offsetof(struct emu_comm_calls, job_broadcast)));
}

/* "nccl": {"grad": ..., "tp": ... (with --tp-comm)}. */
static json_t *nccl_json(const struct emu_options *opt, const struct emu_shared *sh)
{
    json_t *o = json_object();

    if (o)
        json_object_set_new(o, "grad", comm_json(opt, sh, EMU_COMM_GRAD));
    if (o && opt->tp_comm)
        json_object_set_new(o, "tp", comm_json(opt, sh, EMU_COMM_TP));
    return o;
}

/* "extras": the training-loop options and, per rank, what they issued and checked. */
static json_t *extras_json(const struct emu_options *opt, const struct emu_shared *sh)
{
#define EMU_RES(f) u64_array(opt, sh, offsetof(struct emu_rank_result, f))
    return json_pack("{s:i, s:i, s:i, s:i, s:I, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                     "loss_every", opt->loss_every, "eval_every", opt->eval_every, "eval_calls",
                     opt->eval_calls, "tp_comm", opt->tp_comm, "tp_elements",
                     (json_int_t)opt->tp_elements, "accumulate", opt->accumulate, "loss_allreduces",
                     EMU_RES(loss_allreduces), "loss_checked", EMU_RES(loss_checked),
                     "eval_allreduces", EMU_RES(eval_allreduces), "eval_checked",
                     EMU_RES(eval_checked), "tp_allreduces", EMU_RES(tp_allreduces), "tp_checked",
                     EMU_RES(tp_checked), "micro_steps", EMU_RES(micro_steps));
#undef EMU_RES
}

/* "max_run_ahead" and "drain_us", per rank. */
static void set_pace_json(json_t *o, const struct emu_options *opt, const struct emu_shared *sh)
{
    json_t *ahead = json_array(), *drain = json_array();

    for (int r = 0; ahead && drain && r < opt->ranks; r++) {
        json_array_append_new(ahead, json_integer(sh->result[r].max_run_ahead));
        json_array_append_new(drain, json_real(sh->result[r].drain_us));
    }
    json_object_set_new(o, "max_run_ahead", ahead);
    json_object_set_new(o, "drain_us", drain);
}

static void print_rss(const struct emu_options *opt, const struct emu_shared *sh)
{
    for (int r = 0; r < opt->ranks; r++) {
        const struct emu_rank_result *x = &sh->result[r];
        fprintf(stderr,
                "prophet-emu: rank %d rss after iteration %d: %llu KiB, at the end: %llu KiB "
                "(%+lld KiB); malloc heap in use %llu KiB, at the end %llu KiB (%+lld KiB)\n",
                r, opt->rss_at, (unsigned long long)x->rss_warm_kb,
                (unsigned long long)x->rss_end_kb,
                (long long)x->rss_end_kb - (long long)x->rss_warm_kb,
                (unsigned long long)x->heap_warm_kb, (unsigned long long)x->heap_end_kb,
                (long long)x->heap_end_kb - (long long)x->heap_warm_kb);
    }
}

static int write_json(const struct emu_options *opt, const struct emu_profile *prof,
                      const struct emu_shared *sh, const struct emu_stats *s, int ok)
{
    json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:i, s:i, s:o, s:o, s:f, s:f, s:f, s:I, s:I, "
                          "s:s, s:f, s:f, s:b}",
                          "mode", emu_mode_name(opt->mode), "ranks", opt->ranks, "profile",
                          opt->profile, "wait", emu_wait_name(opt->wait), "iters", opt->iters,
                          "warmup", opt->warmup, "iteration_us", array_of(s->rank0, s->n),
                          "iteration_max_us", array_of(s->max, s->n), "median_us", s->median,
                          "mean_us", s->mean, "median_max_us", s->median_max, "calls_per_iter",
                          (json_int_t)sh->result[0].calls_per_iter, "bytes_per_iter",
                          (json_int_t)sh->result[0].bytes_per_iter, "model", prof->model, "scale",
                          opt->scale, "elements_scale", opt->elements_scale, "ok", ok);
    int err;

    if (o)
        json_object_set_new(o, "cuda_api", json_string(emu_cuda_api_name(opt->cuda_api)));
    if (o && opt->kill_rank >= 0)
        json_object_set_new(o, "kill", kill_json(opt, sh));
    if (o && opt->rss_at >= 0)
        json_object_set_new(o, "rss", rss_json(opt, sh));
    if (o) {
        set_pace_json(o, opt, sh);
        json_object_set_new(o, "nccl", nccl_json(opt, sh));
        json_object_set_new(o, "extras", extras_json(opt, sh));
    }
    if (!o) {
        fprintf(stderr, "prophet-emu: cannot build the JSON summary\n");
        return -1;
    }
    if (!strcmp(opt->json, "-"))
        err = json_dumpf(o, stdout, JSON_INDENT(1)) || fputc('\n', stdout) == EOF;
    else
        err = json_dump_file(o, opt->json, JSON_INDENT(1));
    json_decref(o);
    if (err) {
        fprintf(stderr, "prophet-emu: cannot write --json %s\n", opt->json);
        return -1;
    }
    return 0;
}

int emu_report(const struct emu_options *opt, const struct emu_profile *prof,
               const struct emu_shared *sh, int ok)
{
    struct emu_stats s = {0};
    int err = 0;

    if (stats_compute(opt, sh, &s)) {
        fprintf(stderr, "prophet-emu: out of memory\n");
        err = -1;
        goto out;
    }
    if (!ok)
        fprintf(stderr, "prophet-emu: %s %s ranks=%d wait=%s: FAILED\n", prof->model,
                emu_mode_name(opt->mode), opt->ranks, emu_wait_name(opt->wait));
    else if (!opt->quiet) /* on stderr when stdout carries the JSON */
        fprintf(opt->json && !strcmp(opt->json, "-") ? stderr : stdout,
                "prophet-emu: %s %s ranks=%d wait=%s iters=%d median=%.1fus mean=%.1fus "
                "median-max=%.1fus calls/iter=%llu bytes/iter=%llu %s\n",
                prof->model, emu_mode_name(opt->mode), opt->ranks, emu_wait_name(opt->wait),
                opt->iters, s.median, s.mean, s.median_max,
                (unsigned long long)sh->result[0].calls_per_iter,
                (unsigned long long)sh->result[0].bytes_per_iter, ok ? "ok" : "FAILED");
    if (opt->rss_at >= 0)
        print_rss(opt, sh);
    if (opt->json)
        err = write_json(opt, prof, sh, &s, ok);
out:
    free(s.rank0);
    free(s.max);
    return err;
}
