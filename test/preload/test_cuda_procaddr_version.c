/* preload.cuda_procaddr_version: cuGetProcAddress answers that no exported symbol names. The
 * emulated driver answers the names in EMU_CUDA_PROC_UNNAMED with an internal function. The preload
 * hands out its wrapper of the symbol cuda.h maps the name to only when the requested version is
 * known to get that symbol's ABI (from the version that introduced it up to the next ABI of the
 * name or this cuda.h's CUDA_VERSION); otherwise the driver's function, unwrapped, with one WARN
 * per name (read back from PROPHET_DEBUG_FILE). */
#define _GNU_SOURCE
#include <cuda.h>
#include <unistd.h>

#include "cuda_hook_test.h"

typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);

static const char *P = "libprophet.so";
static gpa2_fn gpa;

static void *ask(const char *name, int version, cuuint64_t flags)
{
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void *p = NULL;

    CU_OK(gpa(name, &p, version, flags, &q));
    CHECK(q == CU_GET_PROC_ADDRESS_SUCCESS && p);
    return p;
}

/* The driver's own answer: in libcuda, named by none of its exported symbols. */
#define CHECK_UNWRAPPED(p)                                                                         \
    do {                                                                                           \
        Dl_info i_;                                                                                \
        CHECK_IS((p), "libcuda.so", NULL);                                                         \
        CHECK(dladdr((p), &i_) && i_.dli_saddr != (p));                                            \
    } while (0)

/* WARN lines of the debug file that name cuGetProcAddress(`name`, */
static int warns(const char *path, const char *name)
{
    char line[2048], key[128];
    FILE *f = fopen(path, "r");
    int n = 0;

    CHECK(f);
    snprintf(key, sizeof(key), "cuGetProcAddress(%s,", name);
    while (fgets(line, sizeof(line), f))
        if (strstr(line, " WARN ") && strstr(line, key))
            n++;
    fclose(f);
    return n;
}

int main(void)
{
    char path[] = "/tmp/prophet-procaddr-version-XXXXXX";
    int fd = mkstemp(path);
    void *h, *p;

    CHECK(fd >= 0);
    close(fd);
    /* read lazily by the preload and the emulated driver, on their first call */
    setenv("PROPHET_DEBUG_FILE", path, 1);
    setenv("EMU_CUDA_PROC_UNNAMED", "cuEventRecord,cuStreamWaitEvent,cuCtxSynchronize", 1);
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(h);
    *(void **)&gpa = dlsym(h, "cuGetProcAddress_v2");
    CHECK_IS(gpa, P, "cuGetProcAddress_v2");

    /* the version is known to get cuda.h's symbol: its wrapper, per flavour */
    CHECK_IS(ask("cuEventRecord", 13000, 0), P, "cuEventRecord");
    CHECK_IS(ask("cuEventRecord", 2000, 1), P, "cuEventRecord");
    CHECK_IS(ask("cuEventRecord", 12000, 2), P, "cuEventRecord_ptsz");
    CHECK_IS(ask("cuStreamWaitEvent", 12080, 0), P, "cuStreamWaitEvent");
    CHECK_IS(ask("cuCtxSynchronize", 12090, 0), P, "cuCtxSynchronize");
    CHECK(warns(path, "cuEventRecord") == 0);

    /* a newer runtime than this cuda.h: the driver's function, one WARN for the name */
    p = ask("cuEventRecord", 13010, 0);
    CHECK_UNWRAPPED(p);
    CHECK_UNWRAPPED(ask("cuEventRecord", 14000, 2));
    CHECK(warns(path, "cuEventRecord") == 1);
    /* cuCtxSynchronize at 13000 has the new ABI (a context argument): not cuda.h's void form */
    CHECK_UNWRAPPED(ask("cuCtxSynchronize", 13000, 0));
    CHECK(warns(path, "cuCtxSynchronize") == 1);
    /* older than cuStreamWaitEvent's ABI (3020): the driver's */
    CHECK_UNWRAPPED(ask("cuStreamWaitEvent", 3010, 0));
    CHECK(warns(path, "cuStreamWaitEvent") == 1);
    /* names not wrapped pass unchanged, without a WARN */
    CHECK_IS(ask("cuInit", 14000, 0), "libcuda.so", "cuInit");
    CHECK(warns(path, "cuInit") == 0);

    /* the unwrapped answer reaches the driver */
    CUresult (*init)(unsigned), (*devget)(CUdevice *, int), (*retain)(CUcontext *, CUdevice);
    CUresult (*setcur)(CUcontext), (*evcreate)(CUevent *, unsigned), (*record)(CUevent, CUstream);
    CUdevice dev;
    CUcontext ctx;
    CUevent e;
    *(void **)&init = ask("cuInit", 13000, 0);
    *(void **)&devget = ask("cuDeviceGet", 13000, 0);
    *(void **)&retain = ask("cuDevicePrimaryCtxRetain", 13000, 0);
    *(void **)&setcur = ask("cuCtxSetCurrent", 13000, 0);
    *(void **)&evcreate = ask("cuEventCreate", 13000, 0);
    *(void **)&record = p;
    CU_OK(init(0));
    CU_OK(devget(&dev, 0));
    CU_OK(retain(&ctx, dev));
    CU_OK(setcur(ctx));
    CU_OK(evcreate(&e, 0));
    CU_OK(record(e, NULL));
    unlink(path);
    puts("cuda_procaddr_version: unnamed answers wrapped only where the version is known to match");
    return 0;
}
