/* Helpers of the CUDA interception tests (preload.cuda_*): checks that abort with file:line, and
 * which object and symbol an address belongs to (dladdr). */
#ifndef PROPHET_CUDA_HOOK_TEST_H
#define PROPHET_CUDA_HOOK_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CU_OK(call) CHECK((call) == CUDA_SUCCESS)

/* 1 when p is the exported symbol `sym` of an object whose file name contains `lib`. */
static inline int hook_is(const void *p, const char *lib, const char *sym)
{
    Dl_info info;

    if (!p || !dladdr(p, &info) || !info.dli_fname || !strstr(info.dli_fname, lib))
        return 0;
    return !sym || (info.dli_sname && info.dli_saddr == p && !strcmp(info.dli_sname, sym));
}

static inline const char *hook_where(const void *p)
{
    static char buf[512];
    Dl_info info;

    if (!p || !dladdr(p, &info))
        return "(none)";
    snprintf(buf, sizeof(buf), "%s in %s", info.dli_sname ? info.dli_sname : "?",
             info.dli_fname ? info.dli_fname : "?");
    return buf;
}

/* CHECK that p is `sym` in `lib`, printing where it really is. */
#define CHECK_IS(p, lib, sym)                                                                      \
    do {                                                                                           \
        const void *p_ = (const void *)(p);                                                        \
        if (!hook_is(p_, (lib), (sym))) {                                                          \
            fprintf(stderr, "%s:%d: %s is %s, expected %s in %s\n", __FILE__, __LINE__, #p,        \
                    hook_where(p_), (sym) ? (sym) : "*", (lib));                                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
