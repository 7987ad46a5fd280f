/* Lazy initialisation (no constructor: loading the library does nothing), fork handling and the
 * the exit hook. prophet_init() reads the configuration and resolves NCCL (cheap, no threads, no
 * CUDA); the CUDA driver and the poller thread are started by comm_life.c on the first
 * communicator's setup. PROPHET_DISABLE=1 stops after the first stage. At exit without any NCCL
 * call, the exit check (exit_check.c). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/init.h"
#include "debug_lines/log_line.h"
#include "process/exit_check.h"
#include "real_libs/nccl_exports.h"
#include "real_libs/nccl_symbols.h"
#include "config/process_config.h"

_Atomic int prophet_mode;

static pthread_mutex_t prophet_init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t prophet_config_once = PTHREAD_ONCE_INIT;
static _Atomic int prophet_heavy; /* threads or CUDA state exist in this process */
static void (*_Atomic prophet_exit_hook)(void);

void prophet_init_mark_heavy(void)
{
    atomic_store(&prophet_heavy, 1);
}

void prophet_init_set_exit_hook(void (*fn)(void))
{
    atomic_store(&prophet_exit_hook, fn);
}

/* A child after fork has no poller thread and may hold copies of locks taken mid-operation: if
 * the parent had started anything, the child passes everything through (one INFO line). */
/* An NCCL newer than the releases reviewed is named once. One that exports an entry point the
 * preload does not know (real_libs/nccl_exports.h) is passed through: work such an entry point
 * enqueues behind a held call would reach NCCL ahead of it. 1 then. */
static int prophet_init_nccl_unknown(char *nccl, size_t len)
{
    char names[256];
    int n =
        prophet_nccl_unknown_exports((const void *)prophet_nccl.AllReduce, names, sizeof(names));

    prophet_nccl_version_text(prophet_nccl_version(), nccl, len);
    if (n > 0) {
        prophet_msg(PROPHET_LOG_WARN,
                    "NCCL %s exports %d entry point(s) this preload does not know (%s): work they "
                    "enqueue behind a held all-reduce would reach NCCL ahead of it, so nothing is "
                    "held (passthrough); a preload reviewed against NCCL %s lifts this",
                    nccl, n, names, nccl);
        return 1;
    }
    if (prophet_nccl_newer_than_reviewed())
        prophet_msg(PROPHET_LOG_WARN,
                    "NCCL %s is newer than the releases this preload was reviewed against (up to "
                    "%d.%d); every entry point it exports is one the preload knows",
                    nccl, PROPHET_NCCL_REVIEWED_MAJOR, PROPHET_NCCL_REVIEWED_MINOR);
    return 0;
}

static void prophet_atfork_child(void)
{
    if (atomic_load(&prophet_heavy)) {
        atomic_store(&prophet_mode, PROPHET_MODE_PASSTHROUGH);
        prophet_msg(PROPHET_LOG_INFO, "forked child of an initialised process: passthrough");
    }
}

/* The exit teardown belongs to comm_life.c, which registers it (a hook: init.c calls nothing
 * above it). atexit() itself is registered here, at initialisation, as before. */
static void prophet_atexit(void)
{
    void (*fn)(void) = atomic_load(&prophet_exit_hook);

    if (atomic_load(&prophet_mode) != PROPHET_MODE_ACTIVE || !fn)
        return;
    fn();
}

static const char *prophet_init_getenv(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

/* config.c's lines ("prophet: WARN ...", "prophet: INFO ..."), each written again as a line of
 * this process (its sender, PROPHET_DEBUG_FILE). */
static void prophet_init_config_lines(char *errs)
{
    static const struct {
        const char *prefix;
        prophet_log_level_t level;
    } levels[] = {{"prophet: WARN ", PROPHET_LOG_WARN}, {"prophet: INFO ", PROPHET_LOG_INFO}};

    for (char *l = errs, *end; l && *l; l = end ? end + 1 : NULL) {
        if ((end = strchr(l, '\n')))
            *end = '\0';
        for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
            size_t n = strlen(levels[i].prefix);

            if (!strncmp(l, levels[i].prefix, n)) {
                prophet_msg(levels[i].level, "%s", l + n);
                break;
            }
        }
    }
}

static void prophet_config_load_once(void)
{
    char errs[4096];

    /* invalid values: one line each, defaults kept */
    prophet_config_parse(&prophet_cfg, prophet_init_getenv, NULL, errs, sizeof(errs));
    prophet_init_config_lines(errs);
}

/* What PROPHET_DISABLE=1 leaves undone that other knobs ask for, and PROPHET_* names that are no
 * knob: one WARN line each, once per process. */
static void prophet_init_config_checks(void)
{
    char errs[4096];

    if (prophet_cfg.disable) {
        if (prophet_cfg.log_dir[0])
            prophet_msg(PROPHET_LOG_WARN,
                        "PROPHET_DISABLE=1: pure passthrough, no schedule log%s is written to "
                        "PROPHET_LOG=%s",
                        prophet_cfg.trace ? " or trace" : "", prophet_cfg.log_dir);
        return;
    }
    prophet_config_unknown(environ, errs, sizeof(errs));
    prophet_init_config_lines(errs);
}

void prophet_init_config(void)
{
    pthread_once(&prophet_config_once, prophet_config_load_once);
}

/* Process exit (or unload) with no NCCL call through the preload: exit_check.c looks for an NCCL
 * that was loaded but passed by, and says so in one line. The configuration is read only then
 * (PROPHET_DISABLE=1 and PROPHET_DEBUG=NONE silence it, as every other line). A destructor, not
 * atexit(): nothing was initialised, and loading the library still does nothing. */
__attribute__((destructor)) static void prophet_fini(void)
{
    char why[512];

    pthread_mutex_lock(&prophet_init_lock);
    if (atomic_load(&prophet_mode) == PROPHET_MODE_UNINIT &&
        prophet_exit_check_scan(why, sizeof(why))) {
        prophet_init_config();
        if (!prophet_cfg.disable)
            prophet_exit_check_warn(why);
    }
    pthread_mutex_unlock(&prophet_init_lock);
}

int prophet_init(void)
{
    char nccl[32];
    int mode;

    pthread_mutex_lock(&prophet_init_lock);
    mode = atomic_load(&prophet_mode);
    if (mode != PROPHET_MODE_UNINIT)
        goto out;
    prophet_init_config();
    prophet_init_config_checks();
    if (prophet_nccl_resolve() != 0) {
        mode = PROPHET_MODE_PASSTHROUGH;
        goto out;
    }
    if (prophet_cfg.disable) {
        mode = PROPHET_MODE_PASSTHROUGH;
        goto out;
    }
    if (!prophet_nccl_supported()) {
        prophet_msg(PROPHET_LOG_WARN, "NCCL version code %d is not supported; passthrough",
                    prophet_nccl_version());
        mode = PROPHET_MODE_PASSTHROUGH;
        goto out;
    }
    if (prophet_init_nccl_unknown(nccl, sizeof(nccl))) {
        mode = PROPHET_MODE_PASSTHROUGH;
        goto out;
    }
    pthread_atfork(NULL, NULL, prophet_atfork_child);
    atexit(prophet_atexit);
    mode = PROPHET_MODE_ACTIVE;
    prophet_msg(PROPHET_LOG_INFO, "active: NCCL %s, gate %s, policy %s",
                prophet_nccl_version_text(prophet_nccl_version(), nccl, sizeof(nccl)),
                prophet_gate_name(prophet_cfg.gate), prophet_policy_name(prophet_cfg_policy()));
out:
    atomic_store_explicit(&prophet_mode, mode, memory_order_release);
    pthread_mutex_unlock(&prophet_init_lock);
    return mode;
}
