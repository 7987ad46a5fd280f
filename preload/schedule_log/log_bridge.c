/* Bridge to the JSON schedule log (include/prophet/log.h, lib/schedule_log/) when PROPHET_LOG names
 * a directory. One writer per rank. Built with the log writer (CMake option PROPHET_SCHEDULE_LOG,
 * on by default); without it CMake builds log_bridge_stub.c instead. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schedule_log/log_bridge.h"
#include "debug_lines/log_line.h"
#include "real_libs/nccl_dtype.h"
#include "real_libs/nccl_symbols.h"
#include "config/process_config.h"
#include "prophet/log.h"

/* PROPHET_LOG=DIR: the directory is created (with its parents) when missing, as mkdir -p. */
static int prophet_mkdir_p(const char *dir)
{
    char path[sizeof(prophet_cfg.log_dir)];
    size_t n = strlen(dir);

    if (n == 0 || n >= sizeof(path))
        return errno = EINVAL, -1;
    memcpy(path, dir, n + 1);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static pthread_mutex_t prophet_logb_lock = PTHREAD_MUTEX_INITIALIZER;
static int prophet_logb_ranks[256]; /* ranks that already have a writer in this process */
static int prophet_logb_nranks;

static int prophet_logb_claim(int rank)
{
    int ok = 1;

    pthread_mutex_lock(&prophet_logb_lock);
    for (int i = 0; i < prophet_logb_nranks; i++)
        ok &= prophet_logb_ranks[i] != rank;
    if (ok && prophet_logb_nranks < 256)
        prophet_logb_ranks[prophet_logb_nranks++] = rank;
    pthread_mutex_unlock(&prophet_logb_lock);
    return ok;
}

void prophet_logb_open(prophet_comm_t *c)
{
    char host[256] = "", ver[32], why[256] = "";
    int code = prophet_nccl_version();
    prophet_log_meta_t meta;

    if (!prophet_cfg.log_dir[0] || !prophet_logb_claim(c->rank))
        return;
    gethostname(host, sizeof(host) - 1);
    prophet_nccl_version_text(code, ver, sizeof(ver));
    meta = (prophet_log_meta_t){
        .rank = c->rank,
        .nranks = c->nranks,
        .pid = (int)getpid(),
        .hostname = host,
        .nccl_version = ver,
        .policy = prophet_policy_name(prophet_cfg_policy()),
        .gate = prophet_gate_name(prophet_cfg.gate),
    };
    if (prophet_mkdir_p(prophet_cfg.log_dir) != 0)
        prophet_msg(PROPHET_LOG_WARN, "cannot create %s: %s", prophet_cfg.log_dir, strerror(errno));
    c->log = prophet_log_open(prophet_cfg.log_dir, &meta, prophet_cfg.log_iter_begin,
                              prophet_cfg.log_iter_end, prophet_cfg.trace, why, (int)sizeof(why));
    if (!c->log)
        prophet_msg(PROPHET_LOG_WARN, "no schedule log in %s: %s", prophet_cfg.log_dir, why);
}

void prophet_logb_call(prophet_comm_t *c, const prophet_inflight_t *f, uint32_t i, int64_t ready_us,
                       int64_t launch_us, int64_t complete_us)
{
    const prophet_member_t *m = &f->m[i];
    prophet_log_call_t rec;

    if (!c->log)
        return;
    rec = (prophet_log_call_t){
        .iteration = m->iteration,
        .index = m->index,
        .comm_id = c->id,
        .bytes = m->count * prophet_dtype_size(m->dtype),
        .block = f->block,
        .arrival_us = m->arrival_us,
        .ready_us = ready_us,
        .release_us = f->release_us,
        .launch_us = launch_us,
        .complete_us = complete_us,
        .deferred = f->deferred,
    };
    prophet_log_call(c->log, &rec);
}

void prophet_logb_profile(prophet_comm_t *c)
{
    const prophet_profile_t *p =
        c->models.learner ? prophet_learner_profile(c->models.learner) : NULL;

    if (c->log && p)
        prophet_log_profile(c->log, prophet_learner_iteration(c->models.learner), p);
}

void prophet_logb_plan(prophet_comm_t *c, uint64_t from_iter, const prophet_plan_t *p)
{
    if (c->log)
        prophet_log_plan(c->log, from_iter, p);
}

void prophet_logb_net(prophet_comm_t *c, double probe_Bps)
{
    prophet_net_t net;

    if (!c->log || !c->models.net)
        return;
    prophet_netmodel_get(c->models.net, &net);
    prophet_log_net(c->log, prophet_now_us(), &net, probe_Bps);
}

void prophet_logb_sample(prophet_comm_t *c, const prophet_log_sample_t *s)
{
    if (c->log)
        prophet_log_sample(c->log, s);
}

void prophet_logb_observed(prophet_comm_t *c, uint64_t iteration, uint64_t bytes, int flags)
{
    if (c->log)
        prophet_log_observed(c->log, iteration, bytes, (flags & PROPHET_LEARN_ITER_START) != 0);
}

void prophet_logb_close(prophet_comm_t *c)
{
    if (c->log)
        prophet_log_close(c->log);
    c->log = NULL;
}
