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
} rep_log_t;

/* Reads and validates a log. 0, or -1 with a one-line reason in err (without the file name). */
int rep_load(const char *path, int allow_truncated, rep_log_t *out, char *err, size_t errlen);
void rep_free(rep_log_t *log);

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
} rep_advice_t;

void rep_advise(const rep_log_t *log, const rep_summary_t *sum, rep_advice_t *out);

/* ---- outputs ------------------------------------------------------------------------------ */
/* SVG of an early and a late iteration. iteration < 0: pick automatically. 0 or -1 + err. */
int rep_svg_write(const rep_log_t *log, long long iteration, const char *out_path, char *err,
                  size_t errlen);
/* Chrome trace of every log (one process per rank). 0 or -1 + err. */
int rep_trace_write(rep_log_t *const *logs, size_t n, const char *out_path, char *err,
                    size_t errlen);

#endif
