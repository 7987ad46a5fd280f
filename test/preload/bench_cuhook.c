/* prophet-bench-cuhook: nanoseconds one wrapped CUDA driver call costs on the fast path (nothing
 * held: one relaxed atomic load, then the driver) against the same driver function called
 * directly, in one process run under LD_PRELOAD=libprophet.so (the program re-executes itself
 * under the preload when it is not). The program is linked to libcuda.so.1 (the emulated driver);
 * the call is cuStreamQuery / cuEventQuery on an idle stream / unrecorded event. The driver's own
 * function is found in its ELF symbol table (the preload answers every lookup of a wrapped name
 * with its wrapper). Blocks of CALLS calls alternate direct / wrapper, ROUNDS times; the best block
 * of each is printed with the difference. Exits 1 if cuEventQuery is not the preload's wrapper or
 * the wrapper adds more than BOUND_NS per call (a generous bound: a few ns are expected).
 * Usage: prophet-bench-cuhook [--calls N] [--rounds R] [--preload PATH] */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BOUND_NS 100.0

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The address of `name` in the object that defines `anchor` (read from its file's .dynsym). */
static void *elf_symbol(const void *anchor, const char *name)
{
    Dl_info info;
    FILE *f;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh = NULL;
    char *str = NULL;
    Elf64_Sym *sym = NULL;
    void *found = NULL;

    if (!dladdr(anchor, &info) || !(f = fopen(info.dli_fname, "rb")))
        return NULL;
    if (fread(&eh, sizeof(eh), 1, f) != 1 || !(sh = calloc(eh.e_shnum, sizeof(*sh))) ||
        fseek(f, (long)eh.e_shoff, SEEK_SET) || fread(sh, sizeof(*sh), eh.e_shnum, f) != eh.e_shnum)
        goto out;
    for (int i = 0; i < eh.e_shnum && !found; i++) {
        if (sh[i].sh_type != SHT_DYNSYM)
            continue;
        Elf64_Shdr *ss = &sh[sh[i].sh_link];
        size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
        str = malloc(ss->sh_size);
        sym = malloc(sh[i].sh_size);
        if (!str || !sym || fseek(f, (long)ss->sh_offset, SEEK_SET) ||
            fread(str, 1, ss->sh_size, f) != ss->sh_size ||
            fseek(f, (long)sh[i].sh_offset, SEEK_SET) || fread(sym, sizeof(*sym), n, f) != n)
            goto out;
        for (size_t k = 0; k < n; k++)
            if (sym[k].st_value && !strcmp(str + sym[k].st_name, name))
                found = (char *)info.dli_fbase + sym[k].st_value;
    }
out:
    free(str);
    free(sym);
    free(sh);
    fclose(f);
    return found;
}

static double per_call(CUresult (*fn)(CUevent), CUevent e, long calls)
{
    int64_t t0 = now_ns();

    for (long i = 0; i < calls; i++)
        if (fn(e) != CUDA_SUCCESS)
            return -1;
    return (double)(now_ns() - t0) / (double)calls;
}

int main(int argc, char **argv)
{
    long calls = 20000;
    int rounds = 300;
    const char *preload = NULL;
    CUdevice dev;
    CUcontext ctx;
    CUevent e;
    CUresult (*direct)(CUevent), (*wrapper)(CUevent) = cuEventQuery;
    double best_d = 1e30, best_w = 1e30;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--calls") && i + 1 < argc)
            calls = atol(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--preload") && i + 1 < argc)
            preload = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--calls N] [--rounds R] [--preload PATH]\n", argv[0]);
            return 2;
        }
    }
    if (preload && !getenv("PROPHET_BENCH_CUHOOK_CHILD")) { /* run again under the preload */
        setenv("LD_PRELOAD", preload, 1);
        setenv("PROPHET_BENCH_CUHOOK_CHILD", "1", 1);
        execv("/proc/self/exe", argv);
        perror("execv");
        return 1;
    }
    *(void **)&direct = elf_symbol((void *)&cuInit, "cuEventQuery");
    if (!direct || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuEventCreate(&e, CU_EVENT_DISABLE_TIMING)) {
        fprintf(stderr, "prophet-bench-cuhook: setup failed\n");
        return 1;
    }
    if ((void *)direct == (void *)wrapper) {
        fprintf(stderr, "prophet-bench-cuhook: cuEventQuery is not wrapped (run with --preload)\n");
        return 1;
    }
    per_call(wrapper, e, calls / 10); /* warm-up: the wrapper resolves the driver's function */
    for (int r = 0; r < rounds; r++) {
        double d = per_call(direct, e, calls), w = per_call(wrapper, e, calls);
        if (d < 0 || w < 0)
            return 1;
        best_d = d < best_d ? d : best_d;
        best_w = w < best_w ? w : best_w;
    }
    printf("cuEventQuery (emulated driver), best of %d blocks of %ld calls: direct %.2f ns, "
           "through the wrapper %.2f ns: %+.2f ns per call\n",
           rounds, calls, best_d, best_w, best_w - best_d);
    return best_w - best_d > BOUND_NS ? 1 : 0;
}
