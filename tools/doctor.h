/* prophet-doctor: what a process loads (from /proc/PID/maps) and what those ELF files define. */
#ifndef PROPHET_DOCTOR_H
#define PROPHET_DOCTOR_H

#include <stddef.h>

#define DOCTOR_MAX_OBJS 1024
#define DOCTOR_MAX_NEEDED 64

typedef struct doctor_obj {
    char path[1024];
    int is_elf;
    int defines_nccl;   /* ncclAllReduce or pncclAllReduce defined here */
    int exports_nccl;   /* ... and exported with default visibility in .dynsym */
    int defines_cudart; /* cudaLaunchKernel defined here: a CUDA runtime */
    int symbolic;       /* DT_SYMBOLIC / DF_SYMBOLIC: its own calls bind inside it */
    int n_needed;
    char needed[DOCTOR_MAX_NEEDED][128]; /* DT_NEEDED sonames */
} doctor_obj_t;

typedef struct doctor_proc {
    int n_objs;
    doctor_obj_t objs[DOCTOR_MAX_OBJS];
} doctor_proc_t;

/* Reads the ELF at o->path: symbols, DT_NEEDED, DT_FLAGS. 0 ok, -1 not a readable 64-bit ELF. */
int doctor_elf_inspect(doctor_obj_t *o);

/* Fills p with the distinct files mapped into pid (the executable and every loaded object). */
int doctor_maps_read(int pid, doctor_proc_t *p);

/* The last path component. */
const char *doctor_base(const char *path);

#endif
