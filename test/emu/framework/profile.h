/* A prophet-profile/1 file: the gradients of a model in backward order. */
#ifndef EMU_PROFILE_H
#define EMU_PROFILE_H

#include <stddef.h>
#include <stdint.h>

struct emu_tensor {
    char *name;
    uint64_t elements; /* fp32 elements, as in the file */
    int priority;      /* 0 = first layer, most urgent; parameter order */
    double ready_us;   /* time from backward start until the gradient is ready */
};

struct emu_profile {
    char *model;
    double forward_us;
    double backward_us;
    int batch_size;
    size_t n;
    struct emu_tensor *t; /* backward order */
};

/* Loads and validates FILE. On error prints one line on stderr and returns -1. */
int emu_profile_load(const char *path, struct emu_profile *p);
void emu_profile_free(struct emu_profile *p);

#endif
