/* prophet-doctor's view of a process: the files in /proc/PID/maps and, for each ELF among them, the
 * symbols that matter (NCCL's and the CUDA runtime's entry points), its DT_NEEDED and DT_FLAGS. */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor.h"

const char *doctor_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int doctor_in_file(size_t size, Elf64_Off off, Elf64_Xword len)
{
    return off <= size && len <= size - off;
}

/* Walks one symbol table (SHT_SYMTAB or SHT_DYNSYM) for the names prophet-doctor looks for. */
static void doctor_elf_symbols(doctor_obj_t *o, const unsigned char *m, size_t size,
                               const Elf64_Shdr *sh, const Elf64_Shdr *strsh)
{
    const Elf64_Sym *sym = (const Elf64_Sym *)(m + sh->sh_offset);
    size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
    const char *str = (const char *)(m + strsh->sh_offset);

    for (size_t i = 0; i < n; i++) {
        if (sym[i].st_shndx == SHN_UNDEF || sym[i].st_name >= strsh->sh_size)
            continue;
        const char *name = str + sym[i].st_name;
        if (!memchr(name, 0, strsh->sh_size - sym[i].st_name))
            continue;
        if (!strcmp(name, "ncclAllReduce") || !strcmp(name, "pncclAllReduce")) {
            o->defines_nccl = 1;
            if (sh->sh_type == SHT_DYNSYM && ELF64_ST_BIND(sym[i].st_info) != STB_LOCAL &&
                ELF64_ST_VISIBILITY(sym[i].st_other) == STV_DEFAULT)
                o->exports_nccl = 1;
        } else if (!strcmp(name, "cudaLaunchKernel")) {
            o->defines_cudart = 1;
        }
    }
    (void)size;
}

/* DT_NEEDED and the flags that make a library bind its own calls to itself. */
static void doctor_elf_dynamic(doctor_obj_t *o, const unsigned char *m, const Elf64_Shdr *sh,
                               const Elf64_Shdr *strsh)
{
    const Elf64_Dyn *d = (const Elf64_Dyn *)(m + sh->sh_offset);
    size_t n = sh->sh_size / sizeof(Elf64_Dyn);
    const char *str = (const char *)(m + strsh->sh_offset);

    for (size_t i = 0; i < n && d[i].d_tag != DT_NULL; i++) {
        if (d[i].d_tag == DT_SYMBOLIC ||
            (d[i].d_tag == DT_FLAGS && (d[i].d_un.d_val & DF_SYMBOLIC)))
            o->symbolic = 1;
        if (d[i].d_tag == DT_NEEDED && d[i].d_un.d_val < strsh->sh_size &&
            o->n_needed < DOCTOR_MAX_NEEDED)
            snprintf(o->needed[o->n_needed++], sizeof(o->needed[0]), "%.127s",
                     str + d[i].d_un.d_val);
    }
}

int doctor_elf_inspect(doctor_obj_t *o)
{
    int fd = open(o->path, O_RDONLY | O_CLOEXEC), rc = -1;
    struct stat st;
    unsigned char *m = MAP_FAILED;

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(Elf64_Ehdr))
        goto out;
    m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        goto out;
    size_t size = (size_t)st.st_size;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !doctor_in_file(size, eh->e_shoff, (Elf64_Xword)eh->e_shnum * sizeof(Elf64_Shdr)))
        goto out;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(m + eh->e_shoff);
    o->is_elf = 1;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM &&
            sh[i].sh_type != SHT_DYNAMIC)
            continue;
        if (sh[i].sh_link >= eh->e_shnum || !doctor_in_file(size, sh[i].sh_offset, sh[i].sh_size))
            continue;
        const Elf64_Shdr *strsh = &sh[sh[i].sh_link];
        if (strsh->sh_type != SHT_STRTAB || !doctor_in_file(size, strsh->sh_offset, strsh->sh_size))
            continue;
        if (sh[i].sh_type == SHT_DYNAMIC)
            doctor_elf_dynamic(o, m, &sh[i], strsh);
        else
            doctor_elf_symbols(o, m, size, &sh[i], strsh);
    }
    rc = 0;
out:
    if (m != MAP_FAILED)
        munmap(m, (size_t)st.st_size);
    close(fd);
    return rc;
}

int doctor_maps_read(int pid, doctor_proc_t *p)
{
    char path[64], line[2048];
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    f = fopen(path, "re");
    if (!f)
        return -1;
    p->n_objs = 0;
    while (fgets(line, sizeof(line), f)) {
        char *file = strchr(line, '/');
        int seen = 0;
        if (!file)
            continue;
        file[strcspn(file, "\n")] = 0;
        char *del = strstr(file, " (deleted)");
        if (del)
            *del = 0;
        for (int i = 0; i < p->n_objs && !seen; i++)
            seen = !strcmp(p->objs[i].path, file);
        if (seen || p->n_objs == DOCTOR_MAX_OBJS)
            continue;
        doctor_obj_t *o = &p->objs[p->n_objs++];
        memset(o, 0, sizeof(*o));
        snprintf(o->path, sizeof(o->path), "%s", file);
        doctor_elf_inspect(o);
    }
    fclose(f);
    return 0;
}
