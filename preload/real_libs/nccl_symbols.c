/* Resolution of the real NCCL, lazily and once: pnccl* (strong) via dlsym(RTLD_NEXT) (glibc's:
 * prophet_dlsym_real), else the already loaded libnccl.so.2 (dlopen RTLD_NOLOAD: PyTorch loads it
 * RTLD_LOCAL), or PROPHET_NCCL_LIB when set. Also detects a statically linked NCCL and the version.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "real_libs/nccl_symbols.h"
#include "real_libs/dlsym_real.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h"

prophet_nccl_api_t prophet_nccl;

static pthread_once_t prophet_nccl_once = PTHREAD_ONCE_INIT;
static int prophet_nccl_rc = -1;
static int prophet_nccl_code;
static void *prophet_nccl_handle;

/* Looks up pnccl<name> first (NCCL >= 2.16 exports strong pnccl* and weak nccl*), then nccl<name>.
 */
static void *prophet_nccl_sym(const char *name)
{
    char pname[96];
    void *p;

    snprintf(pname, sizeof(pname), "p%s", name);
    if (prophet_nccl_handle) {
        p = prophet_dlsym_real(prophet_nccl_handle, pname);
        return p ? p : prophet_dlsym_real(prophet_nccl_handle, name);
    }
    p = prophet_dlsym_real(RTLD_NEXT, pname);
    return p ? p : prophet_dlsym_real(RTLD_NEXT, name);
}

#define PROPHET_RESOLVE(field) prophet_nccl.field = prophet_nccl_sym("nccl" #field)

static void prophet_nccl_fill(void)
{
    PROPHET_RESOLVE(GetVersion);
    PROPHET_RESOLVE(GetErrorString);
    PROPHET_RESOLVE(CommUserRank);
    PROPHET_RESOLVE(CommCount);
    PROPHET_RESOLVE(AllReduce);
    PROPHET_RESOLVE(Broadcast);
    PROPHET_RESOLVE(Bcast);
    PROPHET_RESOLVE(Reduce);
    PROPHET_RESOLVE(AllGather);
    PROPHET_RESOLVE(ReduceScatter);
    PROPHET_RESOLVE(AlltoAll);
    PROPHET_RESOLVE(Gather);
    PROPHET_RESOLVE(Scatter);
    PROPHET_RESOLVE(Send);
    PROPHET_RESOLVE(Recv);
    PROPHET_RESOLVE(GroupStart);
    PROPHET_RESOLVE(GroupEnd);
    PROPHET_RESOLVE(GroupSimulateEnd);
    PROPHET_RESOLVE(CommInitRank);
    PROPHET_RESOLVE(CommInitRankConfig);
    PROPHET_RESOLVE(CommInitAll);
    PROPHET_RESOLVE(CommInitRankScalable);
    PROPHET_RESOLVE(CommSplit);
    PROPHET_RESOLVE(CommShrink);
    PROPHET_RESOLVE(CommDestroy);
    PROPHET_RESOLVE(CommAbort);
    PROPHET_RESOLVE(CommFinalize);
    PROPHET_RESOLVE(CommRevoke);
    PROPHET_RESOLVE(CommGetAsyncError);
    PROPHET_RESOLVE(RedOpDestroy);
}

/* A NCCL linked into the executable defines ncclAllReduce ahead of us in the global scope. */
static void prophet_nccl_check_static(void)
{
    void *first = prophet_dlsym_real(RTLD_DEFAULT, "ncclAllReduce");
    Dl_info info, self;

    /* ours if it lies in this library (compared by object, so that this file needs no symbol of
     * the interposer files: preload/README.md, "Layout") */
    if (!first || !dladdr(first, &info) ||
        (dladdr((void *)&prophet_nccl_check_static, &self) && info.dli_fbase == self.dli_fbase))
        return;
    if (info.dli_fname)
        prophet_msg(PROPHET_LOG_WARN,
                    "NCCL is linked statically into %s: its calls cannot be intercepted",
                    info.dli_fname[0] ? info.dli_fname : "the executable");
}

static void prophet_nccl_resolve_once(void)
{
    if (prophet_cfg.nccl_lib[0]) {
        prophet_nccl_handle = dlopen(prophet_cfg.nccl_lib, RTLD_LAZY | RTLD_LOCAL);
        if (!prophet_nccl_handle)
            prophet_msg(PROPHET_LOG_WARN, "cannot open PROPHET_NCCL_LIB=%s: %s",
                        prophet_cfg.nccl_lib, dlerror());
    }
    prophet_nccl_fill();
    if (!prophet_nccl.AllReduce && !prophet_nccl_handle) {
        /* Loaded RTLD_LOCAL by someone else: RTLD_NEXT cannot see it, RTLD_NOLOAD finds it. */
        prophet_nccl_handle = dlopen("libnccl.so.2", RTLD_NOLOAD | RTLD_LAZY);
        if (!prophet_nccl_handle)
            prophet_nccl_handle = dlopen("libnccl.so", RTLD_NOLOAD | RTLD_LAZY);
        if (prophet_nccl_handle)
            prophet_nccl_fill();
    }
    prophet_nccl_check_static();
    if (!prophet_nccl.AllReduce) {
        prophet_msg(PROPHET_LOG_WARN, "no NCCL library found to forward to");
        return;
    }
    if (prophet_nccl.GetVersion && prophet_nccl.GetVersion(&prophet_nccl_code) != ncclSuccess)
        prophet_nccl_code = 0;
    prophet_nccl_rc = 0;
}

int prophet_nccl_resolve(void)
{
    pthread_once(&prophet_nccl_once, prophet_nccl_resolve_once);
    return prophet_nccl_rc;
}

int prophet_nccl_version(void)
{
    return prophet_nccl_code;
}

int prophet_nccl_newer_than_reviewed(void)
{
    int major = prophet_nccl_code >= 10000 ? prophet_nccl_code / 10000 : prophet_nccl_code / 1000;
    int minor = prophet_nccl_code >= 10000 ? (prophet_nccl_code / 100) % 100
                                           : (prophet_nccl_code / 100) % 10;
    return major > PROPHET_NCCL_REVIEWED_MAJOR ||
           (major == PROPHET_NCCL_REVIEWED_MAJOR && minor > PROPHET_NCCL_REVIEWED_MINOR);
}

int prophet_nccl_supported(void)
{
    /* NCCL_VERSION(2,y,z) = 2*10000 + y*100 + z for y > 8; 2.0..2.8 used 2*1000 + y*100 + z. */
    int major = prophet_nccl_code >= 10000 ? prophet_nccl_code / 10000 : prophet_nccl_code / 1000;
    int minor = prophet_nccl_code >= 10000 ? (prophet_nccl_code / 100) % 100
                                           : (prophet_nccl_code / 100) % 10;
    return major == 2 && minor >= 12;
}

const char *prophet_nccl_errstr(ncclResult_t rc)
{
    const char *s = prophet_nccl.GetErrorString ? prophet_nccl.GetErrorString(rc) : NULL;

    return s ? s : "unknown NCCL error";
}

ncclResult_t prophet_nccl_missing(const char *name)
{
    prophet_msg(PROPHET_LOG_WARN, "the real NCCL has no %s", name);
    return ncclInternalError;
}

const char *prophet_nccl_version_text(int code, char *buf, size_t len)
{
    if (code <= 0)
        snprintf(buf, len, "unknown");
    else if (code >= 10000) /* NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9 */
        snprintf(buf, len, "%d.%d.%d", code / 10000, code % 10000 / 100, code % 100);
    else
        snprintf(buf, len, "%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
    return buf;
}
