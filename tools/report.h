/* prophet-report: the loaded form of a prophet-log/1 file and the parts that use it. */
#ifndef PROPHET_REPORT_H
#define PROPHET_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "prophet/log.h"
#include "prophet/sched.h"

typedef struct rep_iter {
    uint64_t iteration;
    int64_t bytes_before;      /* logged: bytes before its first call (-1 unknown) */
    int64_t step;              /* the job's step it begins in (-1 unknown) */
    int step_exact;            /* it begins where the step does (else: numbered while learning) */
    prophet_log_call_t *calls; /* sorted by index, then comm */
    size_t n;
} rep_iter_t;

typedef struct rep_net {
    int64_t t_us;
    double alpha_us, bandwidth_Bps, probe_Bps;
    char source[16];
} rep_net_t;

typedef struct rep_plan {
    uint64_t from_iteration;
    uint32_t version, n_calls, n_blocks;
    char policy[16];
    double predicted_us;
    /* the closed loop's part ("trial"), when present */
    int trial;                                  /* 0 none, 1 a candidate timed, 2 the choice */
    char candidate[24], judged[24];             /* judged: "" when none */
    long long round, judged_samples, judged_us; /* us */
    long long chosen_us;                        /* -1 when null */
} rep_plan_t;

typedef struct rep_log {
    const char *path;
    int rank, nranks, pid;
    char host[256], nccl_version[32], policy[32], gate[16];
    int64_t t0_us;
    int complete;  /* the writer closed the log */
    int recovered; /* a truncated file read up to its last complete record (--allow-truncated) */
    uint64_t calls_dropped;
    prophet_profile_t *profile; /* latest profile record, or NULL */
    uint64_t profile_iteration;
    uint32_t n_profiles;
    rep_net_t *nets;
    size_t n_nets;
    rep_plan_t *plans;
    size_t n_plans;
    rep_iter_t *iters; /* merged by iteration number, ascending */
    size_t n_iters;
    int64_t period_bytes; /* bytes of one iteration (0 unknown) */
    int have_steps;       /* some iteration has its job step */
} rep_log_t;

/* Reads and validates a log. 0, or -1 with a one-line reason in err (without the file name). */
int rep_load(const char *path, int allow_truncated, rep_log_t *out, char *err, size_t errlen);
void rep_free(rep_log_t *log);
/* The job's step of a preload iteration (the nearest logged one's, moved by the difference), -1
 * when the log does not number steps. */
int64_t rep_step_of(const rep_log_t *log, uint64_t iteration);
/* The first and last step that a logged iteration begins; 0, or -1 when none does. */
int rep_step_range(const rep_log_t *log, int64_t *first, int64_t *last);

/* ---- statistics ----------------------------------------------------------------------- */
typedef struct rep_iter_stats {
    uint64_t iteration;
    double start_us, span_us; /* first arrival .. last completion */
    double busy_us, idle_wait_us;
    uint32_t n_calls, n_blocks, max_members;
    uint64_t bytes;
} rep_iter_stats_t;

typedef struct rep_summary {
    size_t n_iters;
    double iter_median_us, iter_p90_us; /* between consecutive iteration starts (span if one) */
    uint32_t iter_samples;
    double busy_fraction; /* median over iterations */
    double idle_wait_median_us, idle_wait_p90_us;
    double blocks_median, members_mean;
    uint32_t members_max;
    double observed_Bps; /* median over blocks of bytes / (complete - launch) */
    int have_net;
    rep_net_t net;     /* latest net record */
    prophet_net_t fit; /* fitted from the blocks (source FITTED), if possible */
    int have_fit;
} rep_summary_t;

int rep_iter_stats(const rep_iter_t *it, rep_iter_stats_t *out);
int rep_summarize(const rep_log_t *log, rep_summary_t *out);
double rep_quantile(double *v, size_t n, double q); /* sorts v */
/* The spans (absolute us) in which a call of `it` waited for launch while no block was running. */
int rep_idle_spans(const rep_iter_t *it, double *a, double *b, size_t cap, size_t *n_out);

/* ---- advice ------------------------------------------------------------------------------- */
typedef struct rep_advice {
    int available;
    char why[160];        /* when not available */
    int profile_from_log; /* 1: the logged profile, 0: rebuilt from the iterations */
    uint32_t n_calls;
    uint64_t total_bytes;
    prophet_net_t net;
    double bucket_mb, bucket_us, bucket_default_us;
    uint64_t fusion_bytes;
    double cycle_ms, fusion_us, fusion_default_us;
    double prophet_us, optimal_us, passthrough_us;
    /* every policy at its default knobs (buckets 25 MiB, fusion 64 MiB and 1 ms), as prophet-sim
     * predicts them, indexed by prophet_policy_t */
    double policy_us[PROPHET_POLICY_COUNT];
    int nranks;     /* the ring the predictions are for */
    int ranks_used; /* rep_advise_job: the ranks whose profiles made the job's */
} rep_advice_t;

/* a policy's name (include/prophet/config.h's list; prophet-report does not link the parser) */
const char *rep_policy_name(int policy);
void rep_advise(const rep_log_t *log, const rep_summary_t *sum, rep_advice_t *out);
/* One piece of advice for the job: a gradient's all-reduce can start only when every rank has it,
 * so the job's profile takes each call's latest readiness over the ranks (the ranks whose call
 * sequence matches the lowest rank's), and the network is the median of the ranks' models. */
void rep_advise_job(rep_log_t *const *logs, const rep_summary_t *sums, size_t n, rep_advice_t *out);
/* Writes the job's profile that rep_advise_job predicts from, as a prophet-profile/1 file that
 * prophet-sim reads (the predictions are made on this very text, read back). 0, or -1 with *why. */
int rep_job_profile_write(rep_log_t *const *logs, const rep_summary_t *sums, size_t n,
                          const char *path, const char **why);

/* ---- the job ------------------------------------------------------------------------------ */
typedef struct rep_spread {
    size_t n;                /* ranks with a figure */
    double min, median, max; /* over those ranks; NaN when n == 0 */
    int min_rank, max_rank;
} rep_spread_t;

/* A trial round as the plans record it: the candidates timed and the one kept. */
#define REP_MAX_TIMED 16
typedef struct rep_round {
    long long round;
    size_t n_timed;
    struct {
        char candidate[24];
        long long samples, median_us;
    } timed[REP_MAX_TIMED];
    const rep_plan_t *kept; /* the "chosen" plan of the round, or NULL (still trying) */
} rep_round_t;

typedef struct rep_job {
    size_t n_logs;
    int nranks;             /* the largest meta.nranks */
    rep_spread_t iter_us;   /* the ranks' median iteration times */
    rep_spread_t model_Bps; /* the preload's network model (latest net record) */
    rep_spread_t model_alpha_us;
    rep_spread_t probe_Bps;  /* the eBPF probe's latest reading */
    rep_spread_t fitted_Bps; /* prophet-report's fit over the logged blocks */
    char model_source[16];   /* the lowest rank's model source */
    /* the log whose plans, trials and steps are shown: the lowest rank of those with most plans */
    const rep_log_t *ref;
    int plans_differ; /* some rank's plans differ from ref's */
    int differ_rank;
    int short_rank; /* a rank that logged only the first short_plans of ref's (-1) */
    size_t short_plans;
    /* steps: step = iteration - step_offset for the iterations of ref from first_iter on */
    int have_steps, offset_constant;
    long long step_offset;
    uint64_t first_iter, last_iter; /* ref's iterations that carry a step */
    int64_t first_step, last_step;
    size_t n_learning; /* ref's iterations numbered while the preload learned (no step) */
    uint64_t learning_first, learning_last;
    /* trials */
    rep_round_t *rounds;
    size_t n_rounds;
    const rep_plan_t *kept;         /* the last plan a round kept, or NULL */
    const rep_plan_t *last;         /* the last plan */
    double kept_us, passthrough_us; /* measured (trial figures), NaN unknown */
    long long passthrough_round;
    rep_advice_t advice;
} rep_job_t;

/* logs sorted by rank; sums their summaries. 0 or -1 (out of memory). */
int rep_job_build(rep_log_t *const *logs, const rep_summary_t *sums, size_t n, rep_job_t *out);
void rep_job_free(rep_job_t *job);
const char *rep_plan_mark(const rep_plan_t *p); /* "trial", "kept" or "fixed" */

/* ---- inputs: DIR and FILE arguments ----------------------------------------------------- */
typedef struct rep_problem {
    char *path, *error;
} rep_problem_t;

typedef struct rep_inputs {
    char **logs; /* the files to read, in argument order (a DIR's sorted by rank) */
    size_t n_logs;
    char **traces; /* *.trace.json skipped */
    size_t n_traces;
    rep_problem_t *problems; /* arguments or files that gave no log */
    size_t n_problems;
} rep_inputs_t;

/* Expands the arguments. 0, or -1 when out of memory. */
int rep_inputs_expand(char *const *args, size_t n, rep_inputs_t *in);
/* Records (and prints, one line on stderr) a path that gave no log. */
void rep_inputs_problem(rep_inputs_t *in, const char *path, const char *error);
void rep_inputs_free(rep_inputs_t *in);

/* ---- text and JSON ------------------------------------------------------------------------ */
void rep_text_job(const rep_job_t *j, rep_log_t *const *logs, size_t n, const rep_inputs_t *in);
/* One rank's detail; its plans only when show_plans (they differ from the job's). */
void rep_text_rank(const rep_log_t *log, const rep_summary_t *s, const rep_advice_t *a,
                   int show_plans);
json_t *rep_json_job(const rep_job_t *j, rep_log_t *const *logs, const rep_summary_t *sums,
                     size_t n);
json_t *rep_json_rank(const rep_log_t *log, const rep_summary_t *s, const rep_advice_t *a);
json_t *rep_json_advice(const rep_advice_t *a);
/* "step S (iteration I)" when the log numbers steps, else "iteration I". */
const char *rep_iter_name(const rep_log_t *log, uint64_t iteration, char *buf, size_t len);
/* NCCL's version as x.y.z (a bare version code such as 22809 is converted). */
const char *rep_nccl_version(const char *v, char *buf, size_t len);

/* ---- outputs ------------------------------------------------------------------------------ */
/* SVG of an early and a late iteration. iteration < 0: pick automatically. 0 or -1 + err. */
int rep_svg_write(const rep_log_t *log, long long iteration, const char *out_path, char *err,
                  size_t errlen);
/* Chrome trace of every log (one process per rank). 0 or -1 + err. */
int rep_trace_write(rep_log_t *const *logs, size_t n, const char *out_path, char *err,
                    size_t errlen);

#endif
