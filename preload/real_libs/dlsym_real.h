/* glibc's dlsym (dlsym_real.c): every lookup the preload makes itself. */
#ifndef PROPHET_DLSYM_REAL_H
#define PROPHET_DLSYM_REAL_H

typedef void *(*prophet_dlsym_fn)(void *, const char *);
prophet_dlsym_fn prophet_dlsym_glibc(void);
void *prophet_dlsym_real(void *handle, const char *name);

#endif
