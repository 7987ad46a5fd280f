/* The exported CUDA driver wrappers (cuda_hooks.c). */
#ifndef PROPHET_CUDA_HOOKS_H
#define PROPHET_CUDA_HOOKS_H

/* What the exported dlsym answers for entry i (cuda_hook_names.h), given glibc's answer `found`. */
void *prophet_cuhook_dlsym(int i, void *found);

#endif
