/* The start line (start_line.c): what is active, said once by rank 0 at its first communicator. */
#ifndef PROPHET_START_LINE_H
#define PROPHET_START_LINE_H

/* A communicator of rank `rank` was created: the first one of rank 0 in the process writes the
 * INFO line "prophet VERSION started: NCCL 2.28.9, gate ..., ...". Thread-safe. */
void prophet_start_line(int rank);

#endif
