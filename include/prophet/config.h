/* Every PROPHET_* knob, declared once in PROPHET_KNOBS below and parsed and validated in one
 * place (lib/config/config.c). */
#ifndef PROPHET_CONFIG_H
#define PROPHET_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* The names each enum knob takes, in value order: V(enumerator, name). The enums below and the
 * parser's name tables are made from these lists. */
#define PROPHET_VALUES_debug(V)                                                                    \
    V(PROPHET_LOG_NONE, "NONE")                                                                    \
    V(PROPHET_LOG_WARN, "WARN")                                                                    \
    V(PROPHET_LOG_INFO, "INFO")                                                                    \
    V(PROPHET_LOG_TRACE, "TRACE")
#define PROPHET_VALUES_policy(V)                                                                   \
    V(PROPHET_POLICY_PASSTHROUGH, "passthrough")                                                   \
    V(PROPHET_POLICY_FUSION, "fusion")                                                             \
    V(PROPHET_POLICY_BUCKETS, "buckets")                                                           \
    V(PROPHET_POLICY_PROPHET, "prophet")                                                           \
    V(PROPHET_POLICY_OPTIMAL, "optimal")
/* observe: learn, plan and log only, every call goes to NCCL at once; hold: the default, hold
 * completions and regroup (docs/completion-holding.md). PROPHET_GATE=call is a deprecated alias of
 * observe; block was removed and means hold (config.c, prophet_cfg_gate_alias). */
#define PROPHET_VALUES_gate(V)                                                                     \
    V(PROPHET_GATE_OBSERVE, "observe")                                                             \
    V(PROPHET_GATE_HOLD, "hold")
/* auto: prophet-bwmon's pins, else the host's shared probe, else an in-process probe, else fitted;
 * process, daemon, shared: only that one (the values are bw.h's PROPHET_BW_OPEN_*) */
#define PROPHET_VALUES_bwmon(V)                                                                    \
    V(PROPHET_BWMON_AUTO, "auto")                                                                  \
    V(PROPHET_BWMON_OFF, "off")                                                                    \
    V(PROPHET_BWMON_PROCESS, "process")                                                            \
    V(PROPHET_BWMON_DAEMON, "daemon")                                                              \
    V(PROPHET_BWMON_SHARED, "shared")

#define PROPHET_ENUM_ITEM(id, name) id,
#define PROPHET_ENUM_NAME(id, name) [id] = name,

typedef enum prophet_log_level { PROPHET_VALUES_debug(PROPHET_ENUM_ITEM) } prophet_log_level_t;
typedef enum prophet_policy {
    PROPHET_VALUES_policy(PROPHET_ENUM_ITEM) PROPHET_POLICY_COUNT
} prophet_policy_t;
typedef enum prophet_gate_mode { PROPHET_VALUES_gate(PROPHET_ENUM_ITEM) } prophet_gate_mode_t;
typedef enum prophet_bwmon_mode { PROPHET_VALUES_bwmon(PROPHET_ENUM_ITEM) } prophet_bwmon_mode_t;

#define PROPHET_PATH_MAX 512 /* PATH knobs: up to 511 characters */

/* Every knob, once: X(kind, name, field, type, dflt, lo, hi, shown, help). From this table come
 * prophet_config_t (below), the defaults, the parser and its messages (lib/config/config.c), the
 * field map of test/config and README's knob table (scripts/knob-table.sh, checked by ctest
 * config.readme_knobs).
 *   kind   how the value is parsed: BOOL (0/1, true/false, yes/no, on/off), ENUM (one of
 *          PROPHET_VALUES_<field>, any case), POLICY (an ENUM that also sets <field>_set), U32
 *          (integer in lo..hi), BYTES (size with K/M/G/KiB/MiB/GiB suffixes, >= lo), RATE
 *          (bandwidth, > 0), USEC (microseconds in lo..hi), PATH (1 to 511 characters), ITERS (A:B
 *          with 0 <= A < B; fields <field>_begin and <field>_end)
 *   name   the variable is PROPHET_<name>
 *   field  member of prophet_config_t; type: its C type (PATH: char[PROPHET_PATH_MAX])
 *   dflt   the default (ITERS: the default window is lo:hi)
 *   shown  the default as messages and README write it; help: README's description */
#define PROPHET_KNOBS(X)                                                                           \
    X(BOOL, DISABLE, disable, int, 0, 0, 1, "0", "`1`: pure passthrough, nothing else is touched") \
    X(ENUM, DEBUG, debug, prophet_log_level_t, PROPHET_LOG_WARN, 0, 0, "WARN",                     \
      "what is written to stderr; lines start with `prophet: HOST:PID [RANK] LEVEL`, `NONE` "      \
      "silences warnings")                                                                         \
    X(PATH, DEBUG_FILE, debug_file, char, "", 0, 0, "stderr",                                      \
      "a file for those lines instead, one per process: `%h` is the host, `%p` the pid (as "       \
      "`NCCL_DEBUG_FILE`); appended to; one that cannot be opened: a warning, and stderr")         \
    X(ENUM, GATE, gate, prophet_gate_mode_t, PROPHET_GATE_HOLD, 0, 0, "hold",                      \
      "what the preload does with an all-reduce (above)")                                          \
    X(POLICY, POLICY, policy, prophet_policy_t, PROPHET_POLICY_OPTIMAL, 0, 0, "optimal",           \
      "the planner, when given; unset, the default mode runs the closed loop: every planner and "  \
      "holding nothing tried in agreed iterations, the best measured kept (observe mode plans "    \
      "with `optimal`)")                                                                           \
    X(U32, STALL_MS, stall_ms, uint32_t, 50, 1, 60000, "50",                                       \
      "warn once when a held block waits this many milliseconds for its next call")                \
    X(U32, LEARN_ITERS, learn_iters, uint32_t, 5, 2, 1000, "5",                                    \
      "observe mode: iterations before the first plan; the default mode first holds after "        \
      "max(16, 2 x this) stable iterations")                                                       \
    X(U32, REPLAN_ITERS, replan_iters, uint32_t, 50, 1, 100000, "50",                              \
      "iterations between plan agreements under a fixed PROPHET_POLICY and in observe mode "       \
      "(the closed loop agrees every 7 while trying, then every 10, backing off to 40 under a "    \
      "kept passthrough)")                                                                         \
    X(RATE, BANDWIDTH, bandwidth_Bps, double, 0, 0, 0, "fitted",                                   \
      "fix the bandwidth instead of fitting it from NCCL operations")                              \
    X(USEC, ALPHA_US, alpha_us, double, -1, 0, 1e7, "fitted",                                      \
      "fix the per-operation cost, in microseconds")                                               \
    X(BYTES, FUSION_BYTES, fusion_bytes, uint64_t, 64ull << 20, 1, 0, "64MiB",                     \
      "the `fusion` policy's threshold")                                                           \
    X(U32, CYCLE_US, cycle_us, uint32_t, 1000, 1, 10000000, "1000",                                \
      "the `fusion` policy's cycle, in microseconds")                                              \
    X(BYTES, BUCKET_BYTES, bucket_bytes, uint64_t, 25ull << 20, 1, 0, "25MiB",                     \
      "the `buckets` policy's bucket size (the first bucket 1MiB)")                                \
    X(BYTES, CREDIT_BYTES, credit_bytes, uint64_t, 0, 0, 0, "0",                                   \
      "the `prophet` policy's credit window after gradient 0 (`0`: auto)")                         \
    X(ENUM, BWMON, bwmon, prophet_bwmon_mode_t, PROPHET_BWMON_AUTO, 0, 0, "auto",                  \
      "eBPF throughput: `auto` is prophet-bwmon's maps, else one probe shared by the host's "      \
      "ranks, else a probe per rank, else fitted; `daemon`, `shared`, `process` only that one")    \
    X(PATH, BWMON_PIN, bwmon_pin, char, "/sys/fs/bpf/prophet", 0, 0, "/sys/fs/bpf/prophet",        \
      "prophet-bwmon's bpffs directory")                                                           \
    X(PATH, LOG, log_dir, char, "", 0, 0, "unset",                                                 \
      "directory for JSON schedule logs, one file per rank")                                       \
    X(ITERS, LOG_ITERS, log_iter, uint32_t, 0, 0, 100, "0:100",                                    \
      "iterations logged, `A:B` (B exclusive)")                                                    \
    X(BOOL, TRACE, trace, int, 0, 0, 1, "0", "`1`: also a Chrome/Perfetto trace next to each log") \
    X(PATH, NCCL_LIB, nccl_lib, char, "", 0, 0, "unset",                                           \
      "the real NCCL to use instead of the one the job loaded")                                    \
    X(PATH, CUDA_LIB, cuda_lib, char, "libcuda.so.1", 0, 0, "libcuda.so.1",                        \
      "the CUDA driver to load")

/* prophet_config_t: one member per knob (two for ITERS, a <field>_set flag for POLICY). */
#define PROPHET_FIELD_BOOL(type, field) type field;
#define PROPHET_FIELD_ENUM(type, field) type field;
#define PROPHET_FIELD_POLICY(type, field)                                                          \
    type field;                                                                                    \
    int field##_set; /* 1 if the variable was given */
#define PROPHET_FIELD_U32(type, field) type field;
#define PROPHET_FIELD_BYTES(type, field) type field;
#define PROPHET_FIELD_RATE(type, field) type field;
#define PROPHET_FIELD_USEC(type, field) type field;
#define PROPHET_FIELD_PATH(type, field) char field[PROPHET_PATH_MAX];
#define PROPHET_FIELD_ITERS(type, field) type field##_begin, field##_end;
#define PROPHET_KNOB_FIELD(kind, name, field, type, dflt, lo, hi, shown, help)                     \
    PROPHET_FIELD_##kind(type, field)

typedef struct prophet_config {
    PROPHET_KNOBS(PROPHET_KNOB_FIELD)
} prophet_config_t;

/* The table at run time (README's generated table and test/config read it). */
typedef enum prophet_knob_kind {
    PROPHET_KNOB_BOOL,
    PROPHET_KNOB_ENUM,
    PROPHET_KNOB_POLICY,
    PROPHET_KNOB_U32,
    PROPHET_KNOB_BYTES,
    PROPHET_KNOB_RATE,
    PROPHET_KNOB_USEC,
    PROPHET_KNOB_PATH,
    PROPHET_KNOB_ITERS,
} prophet_knob_kind_t;

typedef struct prophet_knob {
    const char *name;  /* "PROPHET_STALL_MS" */
    const char *field; /* "stall_ms" (ITERS: the fields are <field>_begin and <field>_end) */
    prophet_knob_kind_t kind;
    size_t offset, offset2, size; /* offset2: ITERS' <field>_end, POLICY's <field>_set */
    const char *const *names;     /* ENUM and POLICY: n_names names in value order */
    int n_names;
    double lo, hi;
    const char *shown, *help;
} prophet_knob_t;

/* Every knob, in the table's order; *n receives the count. */
const prophet_knob_t *prophet_config_knobs(int *n);
/* A range bound as the messages and README write it ("60000", "1e7"); returns buf. */
const char *prophet_config_number(double v, char *buf, size_t len);

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

/* The PROPHET_* names among envp's NAME=VALUE strings that are no knob (a misspelling such as
 * PROPHET_POLICYY): one line each, "prophet: WARN unknown variable PROPHET_X (did you mean
 * PROPHET_Y?): ignored", the nearest knob named when it is close. errs as above. Returns the
 * number of such names. */
int prophet_config_unknown(char *const *envp, char *errs, int errs_len);

const char *prophet_policy_name(prophet_policy_t p);
const char *prophet_gate_name(prophet_gate_mode_t g);                  /* "observe", "hold" */
int prophet_policy_from_name(const char *name, prophet_policy_t *out); /* 0 ok, -1 unknown */

/* Parses "10Gbit", "25Gbps", "1.25GB", "800Mbit", "100MB/s" into bytes per second. 0 ok, -1
 * invalid. */
int prophet_parse_bandwidth(const char *s, double *Bps);
/* Parses "64MiB", "1M", "4096" into bytes. 0 ok, -1 invalid. */
int prophet_parse_bytes(const char *s, uint64_t *bytes);

#endif
