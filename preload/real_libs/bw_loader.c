/* The eBPF throughput reader lives in a plugin, libprophet_bw.so, next to libprophet.so, because it
 * needs libbpf.so.1 and the preload must load on a machine without libbpf (I5). These
 * definitions of the include/prophet/bw.h API forward to the plugin, loaded once on first use
 * through the newest interface version both know (include/prophet/bw_plugin.h); when it cannot be
 * loaded, prophet_bw_open() returns NULL with the loader's reason. */
#define _GNU_SOURCE
#include "prophet/bw.h"
#include "prophet/bw_plugin.h"
#include "real_libs/dlsym_real.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h" /* prophet_msg reads the level from it */

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* glibc's dlsym (dlsym_real.c): libprophet.so exports a dlsym of its own (cuda_dlsym.c). */
void *prophet_dlsym_real(void *handle, const char *name);

#define PROPHET_BW_PLUGIN "libprophet_bw.so"

/* The plugin as this library uses it: the newest interface version. */
typedef struct prophet_bw_plugin {
    const prophet_bw_plugin_v1_t *api; /* NULL: not loaded (why says why) */
    char why[400];
} prophet_bw_plugin_t;

/* The versions this library knows, newest first. An older version's row adapts its struct to the
 * newest one (none yet: version 1 is the only one). */
static const struct prophet_bw_plugin_version {
    const char *symbol;
} prophet_bw_plugin_versions[] = {
    {PROPHET_BW_PLUGIN_V1_SYMBOL},
};

static prophet_bw_plugin_t prophet_bw_plugin;
static pthread_once_t prophet_bw_plugin_once = PTHREAD_ONCE_INIT;

/* Path of the plugin: the directory this library was loaded from. */
static int prophet_bw_plugin_path(char *path, size_t len)
{
    Dl_info info;
    const char *slash;

    if (!dladdr((void *)prophet_bw_plugin_path, &info) || !info.dli_fname)
        return -1;
    slash = strrchr(info.dli_fname, '/');
    if (!slash)
        return snprintf(path, len, "%s", PROPHET_BW_PLUGIN) < (int)len ? 0 : -1;
    return snprintf(path, len, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
                    PROPHET_BW_PLUGIN) < (int)len
               ? 0
               : -1;
}

/* The names of the versions this library knows, for messages: "prophet_bw_plugin_v1". */
static void prophet_bw_plugin_known(char *buf, size_t len)
{
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0;
         i < sizeof(prophet_bw_plugin_versions) / sizeof(prophet_bw_plugin_versions[0]); i++)
        if (n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
                                  prophet_bw_plugin_versions[i].symbol);
}

/* The newest version that the plugin H exports and this library knows, or NULL. */
static const prophet_bw_plugin_v1_t *prophet_bw_plugin_find(void *h, const char **symbol)
{
    for (size_t i = 0;
         i < sizeof(prophet_bw_plugin_versions) / sizeof(prophet_bw_plugin_versions[0]); i++) {
        const prophet_bw_plugin_v1_t *api =
            prophet_dlsym_real(h, prophet_bw_plugin_versions[i].symbol);
        if (api) {
            *symbol = prophet_bw_plugin_versions[i].symbol;
            return api;
        }
    }
    return NULL;
}

/* A plugin that this library cannot use although it loads: one WARN, and the reason in p->why. */
static void prophet_bw_plugin_refuse(prophet_bw_plugin_t *p, const char *path, const char *what)
{
    snprintf(p->why, sizeof(p->why), "%.190s: %.200s", path, what);
    prophet_msg(PROPHET_LOG_WARN, "eBPF plugin %s not used: %s; eBPF throughput off", path, what);
}

static void prophet_bw_plugin_load(void)
{
    prophet_bw_plugin_t *p = &prophet_bw_plugin;
    const prophet_bw_plugin_v1_t *api;
    const char *symbol = NULL;
    char path[4096], what[200], known[96];
    void *h;

    if (prophet_bw_plugin_path(path, sizeof(path)) != 0) {
        snprintf(p->why, sizeof(p->why), "cannot locate %s", PROPHET_BW_PLUGIN);
        return;
    }
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(p->why, sizeof(p->why), "no eBPF support: %.200s", e ? e : path);
        return;
    }
    api = prophet_bw_plugin_find(h, &symbol);
    if (!api) {
        prophet_bw_plugin_known(known, sizeof(known));
        snprintf(what, sizeof(what),
                 "it exports no plugin interface version this libprophet.so knows (%s)", known);
        prophet_bw_plugin_refuse(p, path, what);
        dlclose(h);
        return;
    }
    if (!api->open || !api->source || !api->source_name || !api->read || !api->close) {
        snprintf(what, sizeof(what), "its %s lacks a function", symbol);
        prophet_bw_plugin_refuse(p, path, what);
        dlclose(h);
        return;
    }
    p->api = api;
}

prophet_bw_t *prophet_bw_open(const prophet_bw_opts_t *opts, char *why, size_t why_len)
{
    pthread_once(&prophet_bw_plugin_once, prophet_bw_plugin_load);
    if (!prophet_bw_plugin.api) {
        if (why && why_len > 0)
            snprintf(why, why_len, "%s", prophet_bw_plugin.why);
        return NULL;
    }
    return prophet_bw_plugin.api->open(opts, why, why_len);
}

prophet_bw_source_t prophet_bw_source(const prophet_bw_t *bw)
{
    return prophet_bw_plugin.api && bw ? prophet_bw_plugin.api->source(bw) : PROPHET_BW_NONE;
}

const char *prophet_bw_source_name(prophet_bw_source_t s)
{
    return prophet_bw_plugin.api ? prophet_bw_plugin.api->source_name(s) : "none";
}

int prophet_bw_read(prophet_bw_t *bw, prophet_bw_sample_t *out)
{
    return prophet_bw_plugin.api && bw ? prophet_bw_plugin.api->read(bw, out) : -1;
}

void prophet_bw_close(prophet_bw_t *bw)
{
    if (prophet_bw_plugin.api && bw)
        prophet_bw_plugin.api->close(bw);
}
