/* preload.cuda_table: every entry of preload/cuda_hook_table.h against the emulated driver. Prints
 * "<symbol> wrapper" when dlsym in the driver's handle answers the preload's wrapper of that symbol
 * and "<symbol> missing" when it answers NULL (cuda_table.sh compares the list with the driver's
 * exports). A wrapper whose symbol the driver lacks, reached anyway (here by a weak reference bound
 * to the preload's export), returns CUDA_ERROR_NOT_FOUND with one WARN line. */
#define _GNU_SOURCE
#include <cuda.h>

#include "cuda_hook_table.h"
#include "cuda_hook_test.h"

/* not in the emulated driver; not linked to libcuda: resolved to the preload's export at run time
 */
#pragma weak cuMemAllocAsync

int main(void)
{
    static const char *const names[] = {
#define NAME(sym, ...) #sym,
        PROPHET_CUDA_HOOKS(NAME)
#undef NAME
    };
    size_t n = sizeof(names) / sizeof(names[0]), wrapped = 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CUdeviceptr d;

    CHECK(h);
    for (size_t i = 0; i < n; i++) {
        void *p = dlsym(h, names[i]);
        if (p)
            CHECK_IS(p, "libprophet.so", names[i]);
        wrapped += p != NULL;
        printf("%s %s\n", names[i], p ? "wrapper" : "missing");
    }
    printf("table: %zu entries, %zu in the driver (wrapped), %zu missing\n", n, wrapped,
           n - wrapped);
    CHECK(cuMemAllocAsync != NULL);
    CHECK(cuMemAllocAsync(&d, 64, NULL) == CUDA_ERROR_NOT_FOUND);
    CHECK(cuMemAllocAsync(&d, 64, NULL) == CUDA_ERROR_NOT_FOUND);
    return 0;
}
