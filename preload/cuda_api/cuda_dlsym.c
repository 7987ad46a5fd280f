/* The exported dlsym (an entry point, like interpose_*.c). A job reaches the CUDA driver's entry
 * points through dlsym too: the CUDA runtime dlopens libcuda.so.1 and dlsyms cuGetProcAddress_v2,
 * NCCL dlsyms cuGetProcAddress. For a wrapped name (cuda_hook_table.h, cuGetProcAddress
 * included) the answer is the preload's wrapper (cuda_hooks.c) when the driver has the symbol,
 * NULL when it has not; every other name goes to glibc's dlsym unchanged.
 *
 * RTLD_NEXT is relative to the object that *called* dlsym: glibc reads it from the return
 * address. So dlsym is an x86-64 trampoline that keeps the caller's return address: it asks
 * prophet_dlsym_pick, and for a name that is not wrapped jumps (not calls) into glibc's dlsym
 * with the caller's arguments and return address intact.
 *
 * Sanitizer runtimes (libasan, libtsan) bind their own start-up dlsym calls to this one and make
 * them before they are initialised: this file, cuda_hook_names.c and dlsym_real.c are built without
 * sanitizer instrumentation, and the path for a name that is not wrapped uses no TLS, lock, malloc
 * or libc string function. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

#include "holding/holding.h"
#include "cuda_api/cuda_hook_names.h"
#include "cuda_api/cuda_hooks.h"
#include "real_libs/dlsym_real.h"
#include "symbol_export.h"

#if !defined(__x86_64__)
#error "cuda_dlsym.c: the dlsym trampoline is written for x86-64"
#endif

/* Returns where to jump (glibc's dlsym) or NULL with the final answer in *answer. */
__attribute__((used)) void *prophet_dlsym_pick(void *handle, const char *name, void **answer);

/* Whether name contains "BeginCapture" (no libc string function: see above). */
static int prophet_dlsym_names_capture(const char *name)
{
    static const char w[] = "BeginCapture";

    for (const char *p = name; p && *p; p++) {
        size_t k = 0;
        while (w[k] && p[k] == w[k])
            k++;
        if (!w[k])
            return 1;
    }
    return 0;
}

void *prophet_dlsym_pick(void *handle, const char *name, void **answer)
{
    int i = prophet_cuhook_find(name);

    if (i < 0) {
        if (prophet_dlsym_names_capture(name))
            prophet_capture_begun(); /* a capture entry point the wrappers do not know */
        return (void *)prophet_dlsym_glibc();
    }
    *answer = prophet_cuhook_dlsym(i, prophet_dlsym_real(handle, name));
    return NULL;
}

/* Entry: rsp = 8 mod 16. Saves rdi, rsi and an answer slot (40 bytes: aligned for the call). */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        ".p2align 4\n"
        "dlsym:\n"
        ".cfi_startproc\n"
        "    endbr64\n"
        "    pushq %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    pushq %rsi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    subq $24, %rsp\n"
        ".cfi_adjust_cfa_offset 24\n"
        "    movq %rsp, %rdx\n"
        "    call prophet_dlsym_pick\n"
        "    movq 24(%rsp), %rsi\n"
        "    movq 32(%rsp), %rdi\n"
        "    testq %rax, %rax\n"
        "    jz 1f\n"
        "    addq $40, %rsp\n"
        ".cfi_adjust_cfa_offset -40\n"
        "    jmp *%rax\n"
        "1:\n"
        ".cfi_adjust_cfa_offset 40\n"
        "    movq (%rsp), %rax\n"
        "    addq $40, %rsp\n"
        ".cfi_adjust_cfa_offset -40\n"
        "    ret\n"
        ".cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
