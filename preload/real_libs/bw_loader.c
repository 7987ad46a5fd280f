/* The eBPF throughput reader lives in a plugin, libprophet_bw.so, next to libprophet.so, because it
 * needs libbpf.so.1 and the preload must load on a machine without libbpf (invariant 5). These
 * definitions of the include/prophet/bw.h API forward to the plugin, loaded once on first use; when
 * it cannot be loaded, prophet_bw_open() returns NULL with the loader's reason. */
#define _GNU_SOURCE
#include "prophet/bw.h"
#include "real_libs/dlsym_real.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* glibc's dlsym (dlsym_real.c): libprophet.so exports a dlsym of its own (cuda_dlsym.c). */
void *prophet_dlsym_real(void *handle, const char *name);

#define PROPHET_BW_PLUGIN "libprophet_bw.so"

typedef struct prophet_bw_plugin {
    prophet_bw_t *(*open)(int, const char *, int, char *, int);
    prophet_bw_source_t (*source)(const prophet_bw_t *);
    const char *(*source_name)(prophet_bw_source_t);
    int (*read)(prophet_bw_t *, prophet_bw_sample_t *);
    void (*close)(prophet_bw_t *);
    char why[256];
} prophet_bw_plugin_t;

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

static void prophet_bw_plugin_load(void)
{
    prophet_bw_plugin_t *p = &prophet_bw_plugin;
    char path[4096];
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
    *(void **)&p->open = prophet_dlsym_real(h, "prophet_bw_open");
    *(void **)&p->source = prophet_dlsym_real(h, "prophet_bw_source");
    *(void **)&p->source_name = prophet_dlsym_real(h, "prophet_bw_source_name");
    *(void **)&p->read = prophet_dlsym_real(h, "prophet_bw_read");
    *(void **)&p->close = prophet_dlsym_real(h, "prophet_bw_close");
    if (!p->open || !p->source || !p->source_name || !p->read || !p->close) {
        snprintf(p->why, sizeof(p->why), "%.200s lacks the prophet_bw API", path);
        p->open = NULL;
        dlclose(h);
    }
}

prophet_bw_t *prophet_bw_open(int mode, const char *pin_dir, int pid, char *why, int why_len)
{
    pthread_once(&prophet_bw_plugin_once, prophet_bw_plugin_load);
    if (!prophet_bw_plugin.open) {
        if (why && why_len > 0)
            snprintf(why, (size_t)why_len, "%s", prophet_bw_plugin.why);
        return NULL;
    }
    return prophet_bw_plugin.open(mode, pin_dir, pid, why, why_len);
}

prophet_bw_source_t prophet_bw_source(const prophet_bw_t *bw)
{
    return prophet_bw_plugin.source && bw ? prophet_bw_plugin.source(bw) : PROPHET_BW_NONE;
}

const char *prophet_bw_source_name(prophet_bw_source_t s)
{
    return prophet_bw_plugin.source_name ? prophet_bw_plugin.source_name(s) : "none";
}

int prophet_bw_read(prophet_bw_t *bw, prophet_bw_sample_t *out)
{
    return prophet_bw_plugin.read && bw ? prophet_bw_plugin.read(bw, out) : -1;
}

void prophet_bw_close(prophet_bw_t *bw)
{
    if (prophet_bw_plugin.close && bw)
        prophet_bw_plugin.close(bw);
}
