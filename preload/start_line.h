/* The start line (start_line.c): what is active, said once by rank 0 at its first communicator. */
#ifndef PROPHET_START_LINE_H
#define PROPHET_START_LINE_H

#include <stddef.h>

/* NCCL_VERSION_CODE as NCCL writes it: 22809 -> "2.28.9", 2708 -> "2.7.8"; returns buf. */
const char *prophet_nccl_version_text(int code, char *buf, size_t len);

/* A communicator of rank `rank` was created: the first one of rank 0 in the process writes the
 * INFO line "prophet VERSION started: NCCL 2.28.9, gate ..., ...". Thread-safe. */
void prophet_start_line(int rank);

#endif
