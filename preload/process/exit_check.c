/* The exit check: a process that loaded an NCCL whose calls never reached the preload is told so in
 * one WARN line, with the likely reasons and the fix (prophet-doctor). init.c runs it at exit, only
 * when no NCCL entry point of the preload ran in the process (prophet_mode still UNINIT).
 *
 * A loaded NCCL alone is no evidence: every process that imports a pip PyTorch maps libnccl without
 * calling it (torchrun's agent, data-loader workers), and prophet-emu's parent maps it and forks
 * the ranks that call it. The line is given only when the process's own loaded objects show a path
 * to NCCL that passes the preload by (dl_iterate_phdr, their dynamic symbol tables and their
 * resolved GOT slots; no file is read):
 *   linked  an object that is neither a libnccl* nor this library defines ncclAllReduce or
 *           pncclAllReduce: NCCL linked statically into it (its own calls bind inside it)
 *   bound   an object's GOT slot for a name the preload exports holds an address inside another
 *           object that defines it: bound past the preload (RTLD_DEEPBIND, a libnccl found first)
 *   dlsym   a libnccl* is loaded and no object imports any name the preload exports: it can only
 *           be called through dlsym() on its own handle, which never sees the preload
 * NCCL linked statically with hidden symbols leaves no trace here: prophet-doctor reads the files'
 * symbol tables. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "process/exit_check.h"
#include "process/init.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h"

#define PROPHET_XC_MAX_OBJS 4096

typedef struct prophet_xc_obj {
    const char *name;
    uintptr_t base, lo, hi; /* load bias, lowest and highest address of its PT_LOAD segments */
    const ElfW(Sym) * symtab;
    const char *strtab;
    const uint32_t *gnu_hash, *sysv_hash;
    const ElfW(Rela) * rela, *jmprel;
    size_t rela_n, jmprel_n;
    int defines_nccl; /* ncclAllReduce or pncclAllReduce, exported */
    int is_self;
} prophet_xc_obj_t;

typedef struct prophet_xc {
    int n;
    prophet_xc_obj_t objs[PROPHET_XC_MAX_OBJS];
    const prophet_xc_obj_t *self;
    char exe[512];
} prophet_xc_t;

static prophet_xc_t prophet_xc; /* used once, at exit: no allocation then */

static uint32_t prophet_xc_gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

static uint32_t prophet_xc_sysv_hash(const char *s)
{
    uint32_t h = 0, g;
    for (; *s; s++) {
        h = (h << 4) + (unsigned char)*s;
        g = h & 0xf0000000u;
        if (g)
            h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

/* The object's own exported definition of name, or NULL. */
static const ElfW(Sym) * prophet_xc_lookup(const prophet_xc_obj_t *o, const char *name)
{
    const ElfW(Sym) *s = NULL;

    if (!o->symtab || !o->strtab)
        return NULL;
    if (o->gnu_hash) {
        const uint32_t *gh = o->gnu_hash, nbuckets = gh[0], symoffset = gh[1], nbloom = gh[2];
        const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gh + 4) + nbloom);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t h = prophet_xc_gnu_hash(name), i;
        if (!nbuckets || (i = buckets[h % nbuckets]) < symoffset)
            return NULL;
        for (;; i++) {
            uint32_t h2 = chain[i - symoffset];
            if ((h | 1) == (h2 | 1) && !strcmp(o->strtab + o->symtab[i].st_name, name)) {
                s = &o->symtab[i];
                break;
            }
            if (h2 & 1)
                return NULL;
        }
    } else if (o->sysv_hash) {
        const uint32_t nbucket = o->sysv_hash[0], *bucket = o->sysv_hash + 2;
        const uint32_t *chain = bucket + nbucket;
        if (!nbucket)
            return NULL;
        for (uint32_t i = bucket[prophet_xc_sysv_hash(name) % nbucket]; i; i = chain[i])
            if (!strcmp(o->strtab + o->symtab[i].st_name, name)) {
                s = &o->symtab[i];
                break;
            }
    }
    if (!s || s->st_shndx == SHN_UNDEF || ELF64_ST_BIND(s->st_info) == STB_LOCAL ||
        ELF64_ST_VISIBILITY(s->st_other) != STV_DEFAULT)
        return NULL;
    return s;
}

/* A d_ptr of the dynamic section: relocated in place by glibc on most targets, not on all. */
static const void *prophet_xc_ptr(const prophet_xc_obj_t *o, ElfW(Addr) p)
{
    return (const void *)(p < o->lo && o->base ? p + o->base : p);
}

static void prophet_xc_dynamic(prophet_xc_obj_t *o, const ElfW(Dyn) * d)
{
    ElfW(Addr) rela = 0, jmprel = 0;
    size_t relasz = 0, pltrelsz = 0;
    int pltrel_rela = 0;

    for (; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB:
            o->symtab = prophet_xc_ptr(o, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            o->strtab = prophet_xc_ptr(o, d->d_un.d_ptr);
            break;
        case DT_GNU_HASH:
            o->gnu_hash = prophet_xc_ptr(o, d->d_un.d_ptr);
            break;
        case DT_HASH:
            o->sysv_hash = prophet_xc_ptr(o, d->d_un.d_ptr);
            break;
        case DT_RELA:
            rela = d->d_un.d_ptr;
            break;
        case DT_RELASZ:
            relasz = d->d_un.d_val;
            break;
        case DT_JMPREL:
            jmprel = d->d_un.d_ptr;
            break;
        case DT_PLTRELSZ:
            pltrelsz = d->d_un.d_val;
            break;
        case DT_PLTREL:
            pltrel_rela = d->d_un.d_val == DT_RELA;
            break;
        default:
            break;
        }
    }
    if (rela && relasz) {
        o->rela = prophet_xc_ptr(o, rela);
        o->rela_n = relasz / sizeof(ElfW(Rela));
    }
    if (jmprel && pltrelsz && pltrel_rela) {
        o->jmprel = prophet_xc_ptr(o, jmprel);
        o->jmprel_n = pltrelsz / sizeof(ElfW(Rela));
    }
}

static int prophet_xc_collect(struct dl_phdr_info *info, size_t size, void *ctx)
{
    prophet_xc_t *x = ctx;
    const ElfW(Dyn) *dyn = NULL;
    (void)size;

    if (x->n == PROPHET_XC_MAX_OBJS || !strncmp(info->dlpi_name, "linux-", 6))
        return 0;
    prophet_xc_obj_t *o = &x->objs[x->n];
    memset(o, 0, sizeof(*o));
    o->base = info->dlpi_addr;
    o->lo = UINTPTR_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD) {
            uintptr_t a = info->dlpi_addr + p->p_vaddr;
            if (a < o->lo)
                o->lo = a;
            if (a + p->p_memsz > o->hi)
                o->hi = a + p->p_memsz;
        } else if (p->p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + p->p_vaddr);
        }
    }
    if (!dyn || o->lo >= o->hi)
        return 0;
    o->name = info->dlpi_name[0] ? info->dlpi_name : x->exe; /* "" is the executable */
    prophet_xc_dynamic(o, dyn);
    o->is_self = (uintptr_t)&prophet_xc_collect >= o->lo && (uintptr_t)&prophet_xc_collect < o->hi;
    o->defines_nccl = !o->is_self && (prophet_xc_lookup(o, "ncclAllReduce") ||
                                      prophet_xc_lookup(o, "pncclAllReduce"));
    if (o->is_self)
        x->self = o;
    x->n++;
    return 0;
}

static const prophet_xc_obj_t *prophet_xc_owner(const prophet_xc_t *x, uintptr_t addr)
{
    for (int i = 0; i < x->n; i++)
        if (addr >= x->objs[i].lo && addr < x->objs[i].hi)
            return &x->objs[i];
    return NULL;
}

static int prophet_xc_is_libnccl(const prophet_xc_obj_t *o)
{
    const char *b = strrchr(o->name, '/');
    return !strncmp(b ? b + 1 : o->name, "libnccl", 7);
}

/* Does a slot's relocation type hold the symbol's address once resolved? */
static int prophet_xc_slot_type(unsigned type)
{
#if defined(__x86_64__)
    return type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT || type == R_X86_64_64;
#elif defined(__aarch64__)
    return type == R_AARCH64_JUMP_SLOT || type == R_AARCH64_GLOB_DAT || type == R_AARCH64_ABS64;
#else
    (void)type;
    return 0;
#endif
}

/* o's relocations against names the preload exports: *imports set when there is one; returns 1
 * (and says where in why) when a resolved slot points into another object that defines it. */
static int prophet_xc_bound(const prophet_xc_t *x, const prophet_xc_obj_t *o, const ElfW(Rela) * r,
                            size_t n, int *imports, char *why, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        size_t si = ELF64_R_SYM(r[i].r_info);
        if (!si)
            continue;
        const ElfW(Sym) *s = &o->symtab[si];
        const char *name = o->strtab + s->st_name;
        if (s->st_shndx != SHN_UNDEF || (strncmp(name, "nccl", 4) && strncmp(name, "pnccl", 5)) ||
            !prophet_xc_lookup(x->self, name))
            continue;
        *imports = 1;
        if (!prophet_xc_slot_type((unsigned)ELF64_R_TYPE(r[i].r_info)))
            continue;
        const prophet_xc_obj_t *to =
            prophet_xc_owner(x, *(const uintptr_t *)(o->base + r[i].r_offset));
        if (to && to != o && !to->is_self && prophet_xc_lookup(to, name)) {
            snprintf(why, len, "%s binds %s to %s, past the preload", o->name, name, to->name);
            return 1;
        }
    }
    return 0;
}

/* Fills why with the evidence; 1 when there is some. */
static int prophet_xc_evidence(prophet_xc_t *x, char *why, size_t len)
{
    const prophet_xc_obj_t *libnccl = NULL;
    int imports = 0;

    for (int i = 0; i < x->n; i++) {
        const prophet_xc_obj_t *o = &x->objs[i];
        if (!o->defines_nccl)
            continue;
        if (!prophet_xc_is_libnccl(o)) {
            snprintf(why, len, "NCCL is linked into %s", o->name);
            return 1;
        }
        if (!libnccl)
            libnccl = o;
    }
    if (!libnccl)
        return 0;
    for (int i = 0; i < x->n; i++) {
        const prophet_xc_obj_t *o = &x->objs[i];
        if (o->is_self || o->defines_nccl || !o->symtab || !o->strtab)
            continue;
        if (prophet_xc_bound(x, o, o->jmprel, o->jmprel_n, &imports, why, len) ||
            prophet_xc_bound(x, o, o->rela, o->rela_n, &imports, why, len))
            return 1;
    }
    if (imports)
        return 0;
    snprintf(why, len,
             "%s is loaded and nothing links against it: calls through dlsym() on its handle",
             libnccl->name);
    return 1;
}

int prophet_exit_check_scan(char *why, size_t len)
{
    prophet_xc_t *x = &prophet_xc;
    ssize_t n = readlink("/proc/self/exe", x->exe, sizeof(x->exe) - 1);

    x->exe[n > 0 ? n : 0] = 0;
    if (!x->exe[0])
        snprintf(x->exe, sizeof(x->exe), "the executable");
    x->n = 0;
    x->self = NULL;
    dl_iterate_phdr(prophet_xc_collect, x);
    if (!x->self)
        return 0;
    return prophet_xc_evidence(x, why, len);
}

void prophet_exit_check_warn(const char *why)
{
    prophet_msg(
        PROPHET_LOG_WARN,
        "NCCL was loaded but none of its calls reached the preload (%.320s); likely NCCL is "
        "linked statically into another library, loaded with RTLD_DEEPBIND or called "
        "through dlsym(), or a different libnccl than the one interposed; run "
        "prophet-doctor -- COMMAND (or --pid PID) for the checklist",
        why);
}
