/* preload.cuda_procaddr: the CUDA runtime's table. The runtime dlsyms cuGetProcAddress_v2, asks it
 * for "cuGetProcAddress" and uses that pointer for every entry point, per stream flavour (flags 0
 * default = legacy, 1 legacy, 2 per-thread default stream). Under the preload, both answers are
 * the preload's cuGetProcAddress wrappers, and every answer for a wrapped name is the preload's
 * wrapper of the symbol the driver chose (version and flavour); other names pass through. */
#define _GNU_SOURCE
#include <cuda.h>

#include "cuda_hook_test.h"

typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);

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

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CUdriverProcAddressQueryResult q;
    gpa2_fn first;
    gpa1_fn legacy;
    void *p;

    CHECK(h);
    *(void **)&first = dlsym(h, "cuGetProcAddress_v2");
    CHECK_IS(first, P, "cuGetProcAddress_v2");
    /* the self-query, with the version the runtime uses for each form */
    p = NULL;
    CU_OK(first("cuGetProcAddress", &p, 13000, 0, NULL));
    CHECK_IS(p, P, "cuGetProcAddress_v2");
    *(void **)&gpa = p;
    CHECK_IS(ask("cuGetProcAddress", 11030, 0), P, "cuGetProcAddress");

    /* per flavour */
    CHECK_IS(ask("cuEventRecord", 13000, 0), P, "cuEventRecord");
    CHECK_IS(ask("cuEventRecord", 13000, 1), P, "cuEventRecord");
    CHECK_IS(ask("cuEventRecord", 13000, 2), P, "cuEventRecord_ptsz");
    CHECK_IS(ask("cuStreamWaitEvent", 13000, 2), P, "cuStreamWaitEvent_ptsz");
    CHECK_IS(ask("cuLaunchKernel", 13000, 2), P, "cuLaunchKernel_ptsz");
    CHECK_IS(ask("cuMemcpyHtoD", 13000, 1), P, "cuMemcpyHtoD_v2");
    CHECK_IS(ask("cuMemcpyHtoD", 13000, 2), P, "cuMemcpyHtoD_v2_ptds");
    CHECK_IS(ask("cuStreamWaitValue32", 13000, 0), P, "cuStreamWaitValue32_v2");
    CHECK_IS(ask("cuStreamWaitValue32", 13000, 2), P, "cuStreamWaitValue32_v2_ptsz");
    /* per version: the driver's choice is kept (legacy signatures differ) */
    CHECK_IS(ask("cuStreamBeginCapture", 13000, 0), P, "cuStreamBeginCapture_v2");
    CHECK_IS(ask("cuStreamBeginCapture", 13000, 2), P, "cuStreamBeginCapture_v2_ptsz");
    CHECK_IS(ask("cuStreamBeginCapture", 10000, 0), P, "cuStreamBeginCapture");
    /* entry points with no stream: one form for every flavour */
    CHECK_IS(ask("cuEventQuery", 13000, 2), P, "cuEventQuery");
    CHECK_IS(ask("cuStreamDestroy", 13000, 0), P, "cuStreamDestroy_v2");
    CHECK_IS(ask("cuCtxSynchronize", 13000, 2), P, "cuCtxSynchronize");
    /* not wrapped: the driver's own; unknown: the driver's error */
    CHECK_IS(ask("cuInit", 13000, 0), "libcuda.so", "cuInit");
    CHECK_IS(ask("cuStreamGetFlags", 13000, 2), "libcuda.so", NULL);
    p = (void *)1;
    q = CU_GET_PROC_ADDRESS_SUCCESS;
    CHECK(gpa("cuNoSuchEntryPoint", &p, 13000, 0, &q) == CUDA_ERROR_NOT_FOUND);
    CHECK(p == NULL && q == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);

    /* the legacy cuGetProcAddress (4 arguments) */
    *(void **)&legacy = dlsym(h, "cuGetProcAddress");
    CHECK_IS(legacy, P, "cuGetProcAddress");
    p = NULL;
    CU_OK(legacy("cuEventRecord", &p, 11030, 2));
    CHECK_IS(p, P, "cuEventRecord_ptsz");

    /* the wrappers handed out reach the driver */
    CUresult (*init)(unsigned), (*devget)(CUdevice *, int), (*retain)(CUcontext *, CUdevice);
    CUresult (*setcur)(CUcontext), (*evcreate)(CUevent *, unsigned);
    CUresult (*screate)(CUstream *, unsigned), (*record)(CUevent, CUstream);
    CUresult (*ssync)(CUstream), (*query)(CUevent);
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUevent e;
    *(void **)&init = ask("cuInit", 13000, 0);
    *(void **)&devget = ask("cuDeviceGet", 13000, 0);
    *(void **)&retain = ask("cuDevicePrimaryCtxRetain", 13000, 0);
    *(void **)&setcur = ask("cuCtxSetCurrent", 13000, 0);
    *(void **)&evcreate = ask("cuEventCreate", 13000, 0);
    *(void **)&screate = ask("cuStreamCreate", 13000, 0);
    *(void **)&record = ask("cuEventRecord", 13000, 2);
    *(void **)&ssync = ask("cuStreamSynchronize", 13000, 2);
    *(void **)&query = ask("cuEventQuery", 13000, 0);
    CU_OK(init(0));
    CU_OK(devget(&dev, 0));
    CU_OK(retain(&ctx, dev));
    CU_OK(setcur(ctx));
    CU_OK(evcreate(&e, 0));
    CU_OK(screate(&s, 0));
    CU_OK(record(e, s));
    CU_OK(record(e, NULL)); /* the per-thread default stream */
    CU_OK(ssync(NULL));
    CU_OK(ssync(s));
    CU_OK(query(e));
    puts("cuda_procaddr: the runtime's lookups answered with the preload's wrappers");
    return 0;
}
