/* The exit check (exit_check.c), run by init.c at exit when no NCCL call reached the preload. */
#ifndef PROPHET_EXIT_CHECK_H
#define PROPHET_EXIT_CHECK_H

#include <stddef.h>

/* 1 when the loaded objects show an NCCL whose calls pass the preload by; why says which. */
int prophet_exit_check_scan(char *why, size_t len);
/* The one WARN line: NCCL loaded, none of its calls seen, the likely reasons, prophet-doctor. */
void prophet_exit_check_warn(const char *why);

#endif
