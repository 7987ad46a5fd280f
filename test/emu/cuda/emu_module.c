/* Emulated modules and kernels: cuModuleLoadData (an emuModuleImage, see emu_cuda.h, or PTX text:
 * "A trap" below), cuModuleGetFunction, cuModuleUnload, cuLaunchKernel (parameters copied at
 * launch, the kernel's host function run on the stream's thread). */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_cuda.h"
#include "emu_internal.h"

#define EMU_MOD_LIVE 0x6d6f64756c65ull /* a loaded module */
#define EMU_FUNC_LIVE 0x66756e6374ull  /* a function of a loaded module */

struct CUfunc_st {
    uint64_t live;
    const struct emuKernelDef *def;
};

struct CUmod_st {
    uint64_t live;
    size_t n;
    struct CUfunc_st *funcs;
    struct CUmod_st *next; /* every module ever loaded */
};

/* Modules are never freed: an unloaded one stays as a dead handle, so that a stale CUmodule or
 * CUfunction gets CUDA_ERROR_INVALID_HANDLE (as from a real driver) instead of a use after free,
 * and a module loaded for the process's life (the emulated NCCL's) is not a leak. */
static struct CUmod_st *emu_modules;
static pthread_mutex_t emu_modules_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- A trap -------------------------------------------------------------------------------
 * PTX text (a NUL-terminated image that starts with PTX directives and has a `.version`) is taken
 * too, as a real driver JIT-compiles it: each `.entry NAME(...) { ... }` becomes a kernel without
 * parameters. An entry whose body holds the instruction `trap;` models what a trap does to a real
 * GPU (measured on an H100, driver 580: docs/completion-holding.md, "A dropped call"): the context
 * takes the sticky error CUDA_ERROR_LAUNCH_FAILED, the work queued behind the kernel (on its stream
 * and every other) never runs, and every later call but cuCtxGetCurrent returns the error at once
 * (waits included: nothing hangs). Other entries do nothing. Here the error is the process's
 * (one context per process in these tests). */
static void emu_ptx_trap(void **params)
{
    (void)params;
    fprintf(stderr,
            "emu-cuda: a kernel trapped: the context's sticky error is %d "
            "(CUDA_ERROR_LAUNCH_FAILED)\n",
            (int)CUDA_ERROR_LAUNCH_FAILED);
    emu_sticky_set(CUDA_ERROR_LAUNCH_FAILED);
}

static void emu_ptx_nop(void **params)
{
    (void)params;
}

static int emu_is_ptx(const char *text)
{
    while (*text && isspace((unsigned char)*text))
        text++;
    return (*text == '.' || (text[0] == '/' && text[1] == '/')) && strstr(text, ".version") &&
           strstr(text, ".entry");
}

/* The entries of PTX text as kernel definitions (names and array owned by the module: never
 * freed, like every module here). NULL when out of memory or malformed. */
static struct emuKernelDef *emu_ptx_entries(const char *text, size_t *n)
{
    struct emuKernelDef *defs = NULL;
    size_t count = 0;

    for (const char *p = strstr(text, ".entry"); p; p = strstr(p, ".entry")) {
        const char *name, *body, *end;
        int depth = 0, trap = 0;
        p += 6;
        while (isspace((unsigned char)*p))
            p++;
        name = p;
        while (isalnum((unsigned char)*p) || *p == '_' || *p == '$')
            p++;
        if (p == name || !(body = strchr(p, '{')))
            goto bad;
        for (end = body; *end; end++) {
            depth += *end == '{' ? 1 : *end == '}' ? -1 : 0;
            if (depth == 0)
                break;
            if (!strncmp(end, "trap;", 5) && (end == body || !isalnum((unsigned char)end[-1])))
                trap = 1;
        }
        if (!*end)
            goto bad;
        struct emuKernelDef *nd = realloc(defs, (count + 1) * sizeof(*defs));
        char *nm = strndup(name, (size_t)(p - name));
        if (!nd || !nm) {
            free(nm);
            defs = nd ? nd : defs;
            goto bad;
        }
        defs = nd;
        defs[count++] = (struct emuKernelDef){.name = nm, .fn = trap ? emu_ptx_trap : emu_ptx_nop};
        p = end;
    }
    *n = count;
    return defs;
bad:
    for (size_t i = 0; i < count; i++)
        free((char *)defs[i].name);
    free(defs);
    return NULL;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    CUresult rc = emu_check_init();
    const struct emuModuleImage *img = image;
    struct emuModuleImage ptx_img;

    if (rc)
        return rc;
    if (!module || !img)
        return CUDA_ERROR_INVALID_VALUE;
    if (img->magic != EMU_MODULE_MAGIC && emu_is_ptx(image)) {
        ptx_img = (struct emuModuleImage){.magic = EMU_MODULE_MAGIC};
        if (!(ptx_img.kernels = emu_ptx_entries(image, &ptx_img.nkernels)))
            return CUDA_ERROR_INVALID_PTX;
        img = &ptx_img;
    }
    if (img->magic != EMU_MODULE_MAGIC || (img->nkernels && !img->kernels))
        return CUDA_ERROR_INVALID_IMAGE;
    struct CUmod_st *m = calloc(1, sizeof(*m));
    struct CUfunc_st *f = calloc(img->nkernels ? img->nkernels : 1, sizeof(*f));
    if (!m || !f) {
        free(m);
        free(f);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < img->nkernels; i++) {
        if (!img->kernels[i].name || !img->kernels[i].fn ||
            img->kernels[i].nparams > EMU_KERNEL_MAX_PARAMS) {
            free(m);
            free(f);
            return CUDA_ERROR_INVALID_IMAGE;
        }
        f[i] = (struct CUfunc_st){.live = EMU_FUNC_LIVE, .def = &img->kernels[i]};
    }
    pthread_mutex_lock(&emu_modules_lock);
    *m = (struct CUmod_st){
        .live = EMU_MOD_LIVE, .n = img->nkernels, .funcs = f, .next = emu_modules};
    emu_modules = m;
    pthread_mutex_unlock(&emu_modules_lock);
    *module = m;
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CUresult rc = emu_check_init();

    if (rc)
        return rc;
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hmod || hmod->live != EMU_MOD_LIVE)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < hmod->n; i++)
        if (!strcmp(hmod->funcs[i].def->name, name)) {
            *hfunc = &hmod->funcs[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

/* Queued launches of the module's functions must have run before (as on a real GPU, unloading a
 * module that is in use is undefined). */
CUresult cuModuleUnload(CUmodule hmod)
{
    CUresult rc = emu_check_init();

    if (rc)
        return rc;
    if (!hmod || hmod->live != EMU_MOD_LIVE)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < hmod->n; i++)
        hmod->funcs[i].live = 0;
    hmod->live = 0;
    return CUDA_SUCCESS;
}

/* One block: nparams pointers, then each value at an 8-byte aligned offset. */
static void **copy_params(const struct emuKernelDef *d, void **kernelParams)
{
    size_t off = d->nparams * sizeof(void *), total = off;

    for (unsigned i = 0; i < d->nparams; i++)
        total += (d->param_size[i] + 7) & ~(size_t)7;
    void **block = malloc(total ? total : 1);
    if (!block)
        return NULL;
    for (unsigned i = 0; i < d->nparams; i++) {
        block[i] = (char *)block + off;
        memcpy(block[i], kernelParams[i], d->param_size[i]);
        off += (d->param_size[i] + 7) & ~(size_t)7;
    }
    return block;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra)
{
    CUresult rc = emu_check_init();

    (void)sharedMemBytes;
    if (rc)
        return rc;
    if (!f || f->live != EMU_FUNC_LIVE)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ || extra ||
        (f->def->nparams && !kernelParams))
        return CUDA_ERROR_INVALID_VALUE;
    struct emu_op *op = emu_op_new(EMU_OP_LAUNCH);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.launch.fn = f->def->fn;
    op->u.launch.params = copy_params(f->def, kernelParams);
    if (!op->u.launch.params) {
        emu_op_free(op);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return emu_submit_to(hStream, op, 0);
}

/* cuLaunchKernelEx: cuLaunchKernel with the configuration's grid, block, shared memory and
 * stream; of the attributes, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT and
 * CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT record their event on the stream right after the
 * kernel (a real driver fires them when the kernel's blocks trigger or have all begun: never before
 * the stream's work ahead of the kernel); the others are accepted and ignored. */
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra)
{
    CUresult rc;

    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    rc = cuLaunchKernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                        config->blockDimY, config->blockDimZ, config->sharedMemBytes,
                        config->hStream, kernelParams, extra);
    for (unsigned i = 0; rc == CUDA_SUCCESS && i < config->numAttrs; i++) {
        const CUlaunchAttribute *a = &config->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT)
            rc = cuEventRecord(a->value.programmaticEvent.event, config->hStream);
        else if (a->id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT)
            rc = cuEventRecord(a->value.launchCompletionEvent.event, config->hStream);
    }
    return rc;
}
