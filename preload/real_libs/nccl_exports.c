/* The real NCCL's entry points that the preload does not know (nccl_exports.h). Every exported
 * nccl* function of the library, read from its file's dynamic symbol table, is either interposed
 * by the preload (exported by libprophet.so) or on the list of entry points reviewed as harmless
 * below (they enqueue no work on a stream); any other one is unknown. */
#define _GNU_SOURCE
#include "real_libs/nccl_exports.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "real_libs/dlsym_real.h"

/* NCCL 2.28's entry points that enqueue no work on a stream (communicator queries, memory and
 * buffer registration, the device API's set-up, error strings): reviewed, not interposed. */
static const char *const prophet_nccl_reviewed[] = {"ncclCommCount",
                                                    "ncclCommCuDevice",
                                                    "ncclCommDeregister",
                                                    "ncclCommRegister",
                                                    "ncclCommUserRank",
                                                    "ncclCommWindowDeregister",
                                                    "ncclCommWindowRegister",
                                                    "ncclDevCommCreate",
                                                    "ncclDevCommDestroy",
                                                    "ncclGetErrorString",
                                                    "ncclGetLastError",
                                                    "ncclGetUniqueId",
                                                    "ncclGetVersion",
                                                    "ncclGinBarrierCreateRequirement",
                                                    "ncclLLA2ACalcSlots",
                                                    "ncclLLA2ACreateRequirement",
                                                    "ncclLsaBarrierCreateRequirement",
                                                    "ncclMemAlloc",
                                                    "ncclMemFree",
                                                    "ncclRedOpCreatePreMulSum",
                                                    "ncclResetDebugInit",
                                                    "ncclResetDebugInitInternal",
                                                    "ncclTeamLsa",
                                                    "ncclTeamRail",
                                                    "ncclTeamRankToLsa",
                                                    "ncclTeamRankToWorld",
                                                    "ncclTeamWorld"};

static int prophet_nccl_is_reviewed(const char *name)
{
    for (size_t i = 0; i < sizeof(prophet_nccl_reviewed) / sizeof(prophet_nccl_reviewed[0]); i++)
        if (!strcmp(name, prophet_nccl_reviewed[i]))
            return 1;
    return 0;
}

/* 1 when libprophet.so itself exports `name` (it interposes that entry point). */
static int prophet_nccl_is_interposed(void *self, const void *self_base, const char *name)
{
    Dl_info di;
    void *p = self ? prophet_dlsym_real(self, name) : NULL;

    return p && dladdr(p, &di) && di.dli_fbase == self_base;
}

static void prophet_nccl_note(char *names, size_t len, const char *name)
{
    size_t used = strlen(names);

    if (used + strlen(name) + 3 < len)
        snprintf(names + used, len - used, "%s%s", used ? ", " : "", name);
}

/* Walks the SHT_DYNSYM of the mapped file m (size bytes). */
static int prophet_nccl_scan(const unsigned char *m, size_t size, void *self, const void *self_base,
                             char *names, size_t len)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m;
    const Elf64_Shdr *sh;
    int unknown = 0;

    if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff > size || (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > size - eh->e_shoff)
        return -1;
    sh = (const Elf64_Shdr *)(m + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *str;
        const Elf64_Sym *sym;
        size_t n;
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
            continue;
        str = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset ||
            str->sh_offset > size || str->sh_size > size - str->sh_offset ||
            sh[i].sh_entsize != sizeof(Elf64_Sym))
            return -1;
        sym = (const Elf64_Sym *)(m + sh[i].sh_offset);
        n = sh[i].sh_size / sizeof(Elf64_Sym);
        for (size_t k = 0; k < n; k++) {
            const char *name = (const char *)(m + str->sh_offset) + sym[k].st_name;
            if (sym[k].st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC ||
                sym[k].st_name >= str->sh_size || !memchr(name, 0, str->sh_size - sym[k].st_name) ||
                strncmp(name, "nccl", 4))
                continue;
            if (prophet_nccl_is_reviewed(name) || prophet_nccl_is_interposed(self, self_base, name))
                continue;
            unknown++;
            prophet_nccl_note(names, len, name);
        }
    }
    return unknown;
}

int prophet_nccl_unknown_exports(const void *nccl_fn, char *names, size_t len)
{
    Dl_info nccl, me;
    struct stat st;
    void *self = NULL, *m = MAP_FAILED;
    int fd = -1, rc = -1;

    if (len)
        names[0] = 0;
    if (!nccl_fn || !dladdr(nccl_fn, &nccl) || !nccl.dli_fname ||
        !dladdr((const void *)prophet_nccl_unknown_exports, &me) || !me.dli_fname)
        return -1;
    self = dlopen(me.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if ((fd = open(nccl.dli_fname, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0 ||
        st.st_size <= 0)
        goto out;
    m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        goto out;
    rc = prophet_nccl_scan(m, (size_t)st.st_size, self, me.dli_fbase, names, len);
out:
    if (m != MAP_FAILED)
        munmap(m, (size_t)st.st_size);
    if (fd >= 0)
        close(fd);
    if (self)
        dlclose(self);
    return rc;
}
