/* glibc's own dlsym, for every lookup the preload makes itself (nccl_symbols.c, cuda_driver.c,
 * bw_loader.c, cuda_hooks.c): libprophet.so exports a dlsym of its own (cuda_dlsym.c), which its
 * own calls would otherwise reach. A leaf. Built without sanitizer instrumentation (CMakeLists.txt)
 * and with no TLS, lock or malloc: the exported dlsym jumps here from sanitizer runtimes' start-up
 * lookups, before those runtimes are initialised. RTLD_NEXT in a call made through
 * prophet_dlsym_real is relative to libprophet.so (glibc's dlsym is called from this object). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "real_libs/dlsym_real.h"

static _Atomic(prophet_dlsym_fn) prophet_dlsym_glibc_fn;

prophet_dlsym_fn prophet_dlsym_glibc(void)
{
    static const char msg[] = "prophet: WARN glibc's dlsym not found (GLIBC_2.34, GLIBC_2.2.5)\n";
    prophet_dlsym_fn fn = atomic_load_explicit(&prophet_dlsym_glibc_fn, memory_order_acquire);

    if (fn)
        return fn;
    /* glibc >= 2.34 defines dlsym in libc.so.6 (GLIBC_2.34); older ones in libdl (GLIBC_2.2.5) */
    *(void **)&fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!fn)
        *(void **)&fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!fn) {
        ssize_t w = write(2, msg, sizeof(msg) - 1);
        (void)w;
        abort();
    }
    atomic_store_explicit(&prophet_dlsym_glibc_fn, fn, memory_order_release);
    return fn;
}

void *prophet_dlsym_real(void *handle, const char *name)
{
    return prophet_dlsym_glibc()(handle, name);
}
