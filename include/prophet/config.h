/* Every PROPHET_* knob, parsed and validated in one place (preload/config.c).
 * The table below is the documentation: name, type, default, meaning. */
#ifndef PROPHET_CONFIG_H
#define PROPHET_CONFIG_H

#include <stdint.h>

typedef enum prophet_log_level {
    PROPHET_LOG_NONE = 0,
    PROPHET_LOG_WARN = 1,
    PROPHET_LOG_INFO = 2,
    PROPHET_LOG_TRACE = 3,
} prophet_log_level_t;

typedef enum prophet_policy {
    PROPHET_POLICY_PASSTHROUGH = 0,
    PROPHET_POLICY_FUSION,
    PROPHET_POLICY_BUCKETS,
    PROPHET_POLICY_PROPHET,
    PROPHET_POLICY_OPTIMAL,
    PROPHET_POLICY_COUNT
} prophet_policy_t;

typedef enum prophet_gate_mode {
    PROPHET_GATE_OBSERVE = 0, /* learn, plan and log only: every call goes to NCCL at once */
    PROPHET_GATE_HOLD,        /* the default: hold completions, regroup (completion-holding.md) */
} prophet_gate_mode_t;

typedef enum prophet_bwmon_mode {
    PROPHET_BWMON_AUTO =
        0, /* in-process probe if privileged, else prophet-bwmon's pin, else fitted */
    PROPHET_BWMON_OFF,
    PROPHET_BWMON_PROCESS, /* only the in-process probe */
    PROPHET_BWMON_DAEMON,  /* only prophet-bwmon's pinned map */
} prophet_bwmon_mode_t;

/*  knob                       default          meaning
 *  PROPHET_DISABLE            0                1: pure passthrough, nothing else is touched
 *  PROPHET_DEBUG              WARN             WARN | INFO | TRACE (NONE silences warnings)
 *  PROPHET_POLICY             (best measured)  passthrough | fusion | buckets | prophet | optimal
 *  PROPHET_GATE               hold             hold | observe (call: deprecated alias of observe;
 *                                              block: removed, now means hold)
 *  PROPHET_STALL_MS           50               release a pending block whose next member is late
 * (1..60000) PROPHET_NCCL_LIB           (unset)          path of the real libnccl to dlopen instead
 * of RTLD_NEXT PROPHET_CUDA_LIB           libcuda.so.1     the CUDA driver library to dlopen
 *  PROPHET_LEARN_ITERS        5                iterations observed before the first plan (2..1000)
 *  PROPHET_REPLAN_ITERS       50               iterations between plan agreements (1..100000)
 *  PROPHET_BANDWIDTH          (fitted)         fix the bandwidth, e.g. 10Gbit, 1.25GB, 800Mbit
 *  PROPHET_ALPHA_US           (fitted)         fix the per-operation cost in microseconds
 *  PROPHET_FUSION_BYTES       64MiB            fusion policy: threshold (bytes; K/M/G/KiB/MiB
 * suffixes) PROPHET_CYCLE_US           1000             fusion policy: cycle time
 *  PROPHET_BUCKET_BYTES       25MiB            buckets policy: bucket size (first bucket 1MiB)
 *  PROPHET_CREDIT_BYTES       0                prophet policy: credit window after gradient 0 (0 =
 * auto) PROPHET_BWMON              auto             auto | off | process | daemon PROPHET_BWMON_PIN
 * /sys/fs/bpf/prophet   bpffs directory of prophet-bwmon's pinned maps PROPHET_LOG (unset)
 * directory for JSON schedule logs, one file per rank PROPHET_LOG_ITERS          0:100 window of
 * iterations logged, A:B (B exclusive) PROPHET_TRACE              0                1: also write a
 * Chrome trace next to each log
 */
typedef struct prophet_config {
    int disable;
    prophet_log_level_t debug;
    prophet_policy_t policy;
    int policy_set; /* 1 if PROPHET_POLICY was given */
    prophet_gate_mode_t gate;
    uint32_t stall_ms;
    char nccl_lib[512];
    char cuda_lib[512];
    uint32_t learn_iters;
    uint32_t replan_iters;
    double bandwidth_Bps; /* 0 = fitted */
    double alpha_us;      /* < 0 = fitted */
    uint64_t fusion_bytes;
    uint32_t cycle_us;
    uint64_t bucket_bytes;
    uint64_t credit_bytes;
    prophet_bwmon_mode_t bwmon;
    char bwmon_pin[512];
    char log_dir[512];
    uint32_t log_iter_begin, log_iter_end;
    int trace;
} prophet_config_t;

/* The documented defaults, no environment read. */
void prophet_config_defaults(prophet_config_t *cfg);

/* Fills *cfg with defaults, then applies the environment. An invalid value leaves the default and
 * writes one line "prophet: WARN ignoring PROPHET_X=...: <why>; using <default>" to stderr.
 * Returns the number of invalid values (0 when all were valid). */
int prophet_config_load(prophet_config_t *cfg);

/* Same, with a getenv-like lookup (for tests and fuzzing); errs receives the messages when not
 * NULL. */
int prophet_config_parse(prophet_config_t *cfg, const char *(*lookup)(const char *name, void *ctx),
                         void *ctx, char *errs, int errs_len);

const char *prophet_policy_name(prophet_policy_t p);
const char *prophet_gate_name(prophet_gate_mode_t g);                  /* "observe", "hold" */
int prophet_policy_from_name(const char *name, prophet_policy_t *out); /* 0 ok, -1 unknown */

/* Parses "10Gbit", "25Gbps", "1.25GB", "800Mbit", "100MB/s" into bytes per second. 0 ok, -1
 * invalid. */
int prophet_parse_bandwidth(const char *s, double *Bps);
/* Parses "64MiB", "1M", "4096" into bytes. 0 ok, -1 invalid. */
int prophet_parse_bytes(const char *s, uint64_t *bytes);

#endif
