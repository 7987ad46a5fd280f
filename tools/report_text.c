/* prophet-report's text: the job summary first, then (--per-rank) each rank's detail. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

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

const char *rep_iter_name(const rep_log_t *log, uint64_t iteration, char *buf, size_t len)
{
    int64_t step = rep_step_of(log, iteration);
    if (step >= 0)
        snprintf(buf, len, "step %lld (iteration %llu)", (long long)step,
                 (unsigned long long)iteration);
    else
        snprintf(buf, len, "iteration %llu", (unsigned long long)iteration);
    return buf;
}

const char *rep_nccl_version(const char *v, char *buf, size_t len)
{
    int digits = *v != '\0';
    for (const char *p = v; *p; p++)
        digits &= isdigit((unsigned char)*p) != 0;
    if (!digits) {
        snprintf(buf, len, "%s", v);
        return buf;
    }
    long code = strtol(v, NULL, 10);
    if (code >= 10000) /* NCCL >= 2.9: major * 10000 + minor * 100 + patch */
        snprintf(buf, len, "%ld.%ld.%ld", code / 10000, (code / 100) % 100, code % 100);
    else /* older: major * 1000 + minor * 100 + patch */
        snprintf(buf, len, "%ld.%ld.%ld", code / 1000, (code / 100) % 10, code % 100);
    return buf;
}

/* The closed loop's part of a plan: the figure of the candidate whose trial window closed at
 * this agreement, and what the plan is (a candidate timed, or the choice and its figure). */
static void print_trial(const rep_plan_t *p, const char *indent)
{
    char x[32];

    if (!p->trial)
        return;
    if (p->judged[0]) {
        ms(x, sizeof(x), (double)p->judged_us);
        printf("%strial round %lld  %s measured %s (median of %lld iterations)\n", indent, p->round,
               p->judged, x, p->judged_samples);
    }
    if (p->trial == 2) {
        ms(x, sizeof(x), p->chosen_us >= 0 ? (double)p->chosen_us : NAN);
        printf("%strial round %lld  kept %s (measured %s)\n", indent, p->round, p->candidate, x);
    } else {
        printf("%strial round %lld  trying %s\n", indent, p->round, p->candidate);
    }
}

static void print_plans(const rep_log_t *log, const char *indent)
{
    char x[48], it[64], what[64];
    for (size_t i = 0; i < log->n_plans; i++) {
        const rep_plan_t *p = &log->plans[i];
        ms(x, sizeof(x), p->predicted_us);
        if (p->trial && strcmp(p->candidate, p->policy) != 0)
            snprintf(what, sizeof(what), "%s (%s)", p->candidate, p->policy);
        else
            snprintf(what, sizeof(what), "%s", p->trial ? p->candidate : p->policy);
        printf("%splan v%-3u %-5s %s from %s: %u blocks for %u calls, predicted %s\n", indent,
               p->version, rep_plan_mark(p), what,
               rep_iter_name(log, p->from_iteration, it, sizeof(it)), p->n_blocks, p->n_calls, x);
        char deeper[32];
        snprintf(deeper, sizeof(deeper), "%s    ", indent);
        print_trial(p, deeper);
    }
}

static void print_advice(const rep_advice_t *a, const char *label, double measured_us)
{
    char x[48], y[48], z[48];
    if (!a->available) {
        printf("  %-17s unavailable: %s\n", label, a->why);
        return;
    }
    gbit(x, sizeof(x), a->net.bandwidth_Bps);
    printf("  %-17s simulated on %s profile (%u gradients, %.1f MiB", label,
           a->ranks_used > 1     ? "the job's"
           : a->profile_from_log ? "the learned"
                                 : "a rebuilt",
           a->n_calls, (double)a->total_bytes / (1024.0 * 1024.0));
    if (a->ranks_used > 1)
        printf(", latest readiness of %d ranks", a->ranks_used);
    printf(") over %s (%s%s), alpha %.1f us:\n", x,
           a->ranks_used > 1 ? "the ranks' median model, " : "", net_source(a->net.source),
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
    /* every policy at its default knobs, beside the iteration time the logs measured */
    printf("  %-17s", "predicted");
    for (int k = 0; k < PROPHET_POLICY_COUNT; k++) {
        ms(x, sizeof(x), a->policy_us[k]);
        printf("%s%s %s", k ? ", " : " ", rep_policy_name(k), x);
    }
    ms(x, sizeof(x), measured_us);
    printf(
        "\n                    (%d ranks, default knobs, the model of prophet-sim); measured %s\n",
        a->nranks, x);
}

/* ---- the job ------------------------------------------------------------------------------ */

static void print_steps(const rep_job_t *j)
{
    const rep_log_t *ref = j->ref;
    if (!j->have_steps) {
        printf("  steps             unknown: the log does not number the job's steps (no "
               "bytes_before); numbers are the preload's iterations\n");
        return;
    }
    if (j->offset_constant) {
        printf("  steps             job step = preload iteration %s %lld (iterations %llu..%llu "
               "are steps %lld..%lld)\n",
               j->step_offset >= 0 ? "-" : "+",
               j->step_offset >= 0 ? j->step_offset : -j->step_offset,
               (unsigned long long)j->first_iter, (unsigned long long)j->last_iter,
               (long long)j->first_step, (long long)j->last_step);
    } else {
        /* the preload renumbered (it learned the iteration again): one line per numbering */
        printf("  steps             the preload renumbered its iterations when it learned "
               "again:\n");
        for (size_t i = 0; i < ref->n_iters;) {
            const rep_iter_t *a = &ref->iters[i];
            if (a->step < 0 || !a->step_exact) {
                i++;
                continue;
            }
            long long off = (long long)a->iteration - a->step;
            size_t k = i;
            while (k + 1 < ref->n_iters && ref->iters[k + 1].step >= 0 &&
                   ref->iters[k + 1].step_exact &&
                   (long long)ref->iters[k + 1].iteration - ref->iters[k + 1].step == off)
                k++;
            printf("                    job step = preload iteration %s %lld (iterations "
                   "%llu..%llu are steps %lld..%lld)\n",
                   off >= 0 ? "-" : "+", off >= 0 ? off : -off, (unsigned long long)a->iteration,
                   (unsigned long long)ref->iters[k].iteration, (long long)a->step,
                   (long long)ref->iters[k].step);
            i = k + 1;
        }
    }
    if (j->n_learning)
        printf("                    %zu logged iteration%s between %llu and %llu %s numbered while "
               "the preload was still finding the job's iteration: no step of %s own\n",
               j->n_learning, j->n_learning == 1 ? "" : "s", (unsigned long long)j->learning_first,
               (unsigned long long)j->learning_last, j->n_learning == 1 ? "was" : "were",
               j->n_learning == 1 ? "its" : "their");
}

static void print_spread(const char *label, const rep_spread_t *s, int is_rate, const char *tail)
{
    char x[48], y[48], z[48];
    if (s->n == 0) {
        printf("  %-17s n/a%s\n", label, tail);
        return;
    }
    if (is_rate) {
        gbit(x, sizeof(x), s->median);
        gbit(y, sizeof(y), s->min);
        gbit(z, sizeof(z), s->max);
    } else {
        ms(x, sizeof(x), s->median);
        ms(y, sizeof(y), s->min);
        ms(z, sizeof(z), s->max);
    }
    printf("  %-17s %s median over %zu rank%s (min %s rank %d, max %s rank %d)%s\n", label, x, s->n,
           s->n == 1 ? "" : "s", y, s->min_rank, z, s->max_rank, tail);
}

static void print_kept(const rep_job_t *j)
{
    const rep_log_t *ref = j->ref;
    char x[48], y[48], it[64];
    if (ref->n_plans == 0) {
        printf("  kept              no plan was agreed: every call ran as the job issued it\n");
        return;
    }
    if (!j->n_rounds) {
        const rep_plan_t *p = j->last;
        printf("  kept              plan v%u %s (fixed policy, no trials) from %s\n", p->version,
               p->policy, rep_iter_name(ref, p->from_iteration, it, sizeof(it)));
        return;
    }
    if (j->kept) {
        ms(x, sizeof(x), j->kept_us);
        printf("  kept              plan v%u %s (%s, kept by trial round %lld) from %s, measured "
               "%s\n",
               j->kept->version, j->kept->candidate, j->kept->policy, j->kept->round,
               rep_iter_name(ref, j->kept->from_iteration, it, sizeof(it)), x);
        if (isfinite(j->passthrough_us) && isfinite(j->kept_us) && j->kept_us > 0) {
            ms(y, sizeof(y), j->passthrough_us);
            double gain = j->passthrough_us / j->kept_us;
            printf("  gain              %.3fx over passthrough (%s measured in trial round %lld: "
                   "%.1f%% less time per iteration)\n",
                   gain, y, j->passthrough_round, 100.0 * (1.0 - j->kept_us / j->passthrough_us));
        } else {
            printf("  gain              unknown: the trials never timed passthrough\n");
        }
    } else {
        printf("  kept              none yet: no trial round had ended\n");
    }
    if (j->last && j->last->trial == 1)
        printf("  at the end        inside trial round %lld: trial plan v%u trying %s (policy %s) "
               "from %s\n",
               j->last->round, j->last->version, j->last->candidate, j->last->policy,
               rep_iter_name(ref, j->last->from_iteration, it, sizeof(it)));
}

void rep_text_job(const rep_job_t *j, rep_log_t *const *logs, size_t n, const rep_inputs_t *in)
{
    char v[32];
    const rep_log_t *ref = j->ref;
    size_t hosts = 0;
    for (size_t k = 0; k < n; k++) {
        int seen = 0;
        for (size_t m = 0; m < k; m++)
            seen |= !strcmp(logs[m]->host, logs[k]->host);
        hosts += !seen;
    }
    printf("job: %zu of %d ranks logged", n, j->nranks);
    if (hosts == 1)
        printf(", host %s", ref->host);
    else
        printf(", %zu hosts", hosts);
    printf(", NCCL %s, policy %s, gate %s\n", rep_nccl_version(ref->nccl_version, v, sizeof(v)),
           ref->policy, ref->gate);
    if (in->n_traces)
        printf("  skipped           %zu Chrome trace file%s (*.trace.json)\n", in->n_traces,
               in->n_traces == 1 ? "" : "s");
    if (in->n_problems)
        printf("  unreadable        %zu file%s (named on stderr)\n", in->n_problems,
               in->n_problems == 1 ? "" : "s");
    size_t open_logs = 0, recovered = 0;
    for (size_t k = 0; k < n; k++) {
        open_logs += !logs[k]->complete;
        recovered += logs[k]->recovered;
    }
    if (open_logs)
        printf("  log               %zu not closed (job still running or killed)%s\n", open_logs,
               recovered ? "; truncated ones read up to their last complete record" : "");
    print_steps(j);
    char tail[64] = "";
    if (j->iter_us.n > 1)
        snprintf(tail, sizeof(tail), "; slowest rank %d", j->iter_us.max_rank);
    print_spread("iteration time", &j->iter_us, 0, tail);
    if (j->plans_differ)
        printf("  plans             DIFFER between ranks (rank %d's are not rank %d's): see "
               "--per-rank; rank %d's:\n",
               j->differ_rank, ref->rank, ref->rank);
    else if (ref->n_plans && j->short_rank >= 0)
        printf("  plans             %zu, the same on every rank (rank %d's log holds only the "
               "first %zu: it ends earlier):\n",
               ref->n_plans, j->short_rank, j->short_plans);
    else if (ref->n_plans)
        printf("  plans             %zu, the same on every rank:\n", ref->n_plans);
    print_plans(ref, "    ");
    print_kept(j);
    char src[48];
    snprintf(src, sizeof(src), " (source %s)", j->model_source[0] ? j->model_source : "none");
    print_spread("network model", &j->model_Bps, 1, src);
    print_spread("network probe", &j->probe_Bps, 1, j->probe_Bps.n ? "" : " (no eBPF reading)");
    print_spread("network blocks", &j->fitted_Bps, 1, " (fitted by prophet-report)");
    print_advice(&j->advice, "advice (job)", j->iter_us.median);
}

/* ---- one rank ------------------------------------------------------------------------------ */

void rep_text_rank(const rep_log_t *log, const rep_summary_t *s, const rep_advice_t *a,
                   int show_plans)
{
    char x[48], y[48], v[32];
    printf("%s: rank %d of %d, host %s, pid %d, NCCL %s, policy %s, gate %s\n", log->path,
           log->rank, log->nranks, log->host, log->pid,
           rep_nccl_version(log->nccl_version, v, sizeof(v)), log->policy, log->gate);
    if (log->n_iters) {
        const rep_iter_t *a0 = &log->iters[0], *a1 = &log->iters[log->n_iters - 1];
        int64_t s0, s1;
        printf("  iterations        %zu logged (", log->n_iters);
        if (rep_step_range(log, &s0, &s1) == 0)
            printf("steps %lld..%lld, ", (long long)s0, (long long)s1);
        printf("preload iterations %llu..%llu)\n", (unsigned long long)a0->iteration,
               (unsigned long long)a1->iteration);
    } else {
        printf("  iterations        none logged\n");
    }
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
    if (show_plans)
        print_plans(log, "  ");
    print_advice(a, "advice (rank)", s->iter_median_us);
}
