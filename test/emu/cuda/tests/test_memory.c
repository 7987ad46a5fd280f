/* Memory: allocation registry, pointer attributes, copies and memsets in stream order. */
#include <stdint.h>
#include <string.h>

#include "emu_test.h"

int main(void)
{
    CUcontext ctx = test_setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d1, d2;
    OK(cuMemAlloc(&d1, 1000));
    OK(cuMemAlloc(&d2, 1000));
    CHECK(d1 % 256 == 0 && d2 % 256 == 0);

    unsigned mt = 0;
    OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d1));
    CHECK(mt == CU_MEMORYTYPE_DEVICE);
    OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d1 + 999));
    CHECK(mt == CU_MEMORYTYPE_DEVICE);
    CUcontext pc = NULL;
    OK(cuPointerGetAttribute(&pc, CU_POINTER_ATTRIBUTE_CONTEXT, d1 + 10));
    CHECK(pc == ctx);
    CUdeviceptr base = 0;
    size_t size = 0;
    OK(cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d1 + 10));
    OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d1 + 10));
    CHECK(base == d1 && size == 1000);
    OK(cuMemGetAddressRange(&base, &size, d2 + 5));
    CHECK(base == d2 && size == 1000);

    void *h;
    OK(cuMemHostAlloc(&h, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    CUdeviceptr hd;
    OK(cuMemHostGetDevicePointer(&hd, h, 0));
    CHECK(hd == (CUdeviceptr)(uintptr_t)h);
    CHECK_CU(cuMemHostGetDevicePointer(&hd, h, 1), CUDA_ERROR_INVALID_VALUE);
    OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, hd + 100));
    CHECK(mt == CU_MEMORYTYPE_HOST);
    unsigned fl = 0;
    OK(cuMemHostGetFlags(&fl, h));
    CHECK(fl == (CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));

    /* HtoD, DtoD, DtoH in order on one stream */
    unsigned char src[1000], dst[1000];
    for (int i = 0; i < 1000; i++)
        src[i] = (unsigned char)(i * 7);
    memset(dst, 0, sizeof(dst));
    OK(cuMemcpyHtoDAsync(d1, src, 1000, s));
    OK(cuMemcpyDtoDAsync(d2, d1, 1000, s));
    OK(cuMemcpyDtoHAsync(dst, d2, 1000, s));
    OK(cuStreamSynchronize(s));
    CHECK(memcmp(src, dst, 1000) == 0);

    /* memsets */
    uint32_t w[250];
    OK(cuMemsetD32Async(d1, 0xdeadbeefu, 250, s));
    OK(cuMemcpyDtoHAsync(w, d1, sizeof(w), s));
    OK(cuStreamSynchronize(s));
    for (int i = 0; i < 250; i++)
        CHECK(w[i] == 0xdeadbeefu);
    OK(cuMemsetD8Async(d1, 0x5a, 1000, NULL));
    OK(cuMemcpyDtoH(dst, d1, 1000)); /* synchronous, legacy stream */
    for (int i = 0; i < 1000; i++)
        CHECK(dst[i] == 0x5a);
    OK(cuMemcpyHtoD(d2, src, 1000));
    OK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)h, d2, 1000, s));
    OK(cuStreamSynchronize(s));
    CHECK(memcmp(h, src, 1000) == 0);
    CHECK_CU(cuMemsetD32Async(d1 + 2, 0, 1, s), CUDA_ERROR_INVALID_VALUE);

    /* registered host memory */
    static uint32_t reg[64];
    OK(cuMemHostRegister(reg, sizeof(reg), 0));
    OK(cuStreamWriteValue32(s, (CUdeviceptr)(uintptr_t)&reg[3], 77, 0));
    OK(cuStreamSynchronize(s));
    CHECK(reg[3] == 77);
    OK(cuMemHostUnregister(reg));
    CHECK_CU(cuMemHostUnregister(reg), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);

    size_t fr = 0, tot = 0;
    OK(cuMemGetInfo(&fr, &tot));
    CHECK(tot > 0 && fr <= tot);

    OK(cuMemFree(d1));
    OK(cuMemFree(d2));
    OK(cuMemFreeHost(h));
    CHECK_CU(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d1),
             CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamDestroy(s));
    printf("PASS\n");
    return 0;
}
