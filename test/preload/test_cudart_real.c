/* preload.cudart_real: the toolkit's REAL libcudart.so.13 (argv[1]) initialises against the
 * emulated libcuda.so.1. It dlopens the driver, dlsyms cuGetProcAddress_v2, asks it for
 * "cuGetProcAddress" and then asks per entry point and flavour; it stops at what the emulator
 * lacks (its error code is printed, not checked). cudart_real.sh reads the preload's TRACE lines
 * to show every lookup of a wrapped name was answered with the preload's wrapper. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    int (*count)(int *), (*rt_free)(void *), n = -1;

    if (!h) {
        fprintf(stderr, "cudart_real: dlopen %s: %s\n", argc > 1 ? argv[1] : "?", dlerror());
        return 1;
    }
    *(void **)&count = dlsym(h, "cudaGetDeviceCount");
    *(void **)&rt_free = dlsym(h, "cudaFree");
    if (!count || !rt_free)
        return 1;
    printf("cudaGetDeviceCount: %d (n=%d)\n", count(&n), n);
    printf("cudaFree(NULL): %d\n", rt_free(NULL));
    return 0;
}
