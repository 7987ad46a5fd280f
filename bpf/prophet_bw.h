/* Definitions shared by the BPF probe (prophet_bw.bpf.c) and its user-space readers. */
#ifndef PROPHET_BW_SHARED_H
#define PROPHET_BW_SHARED_H

#ifndef __bpf__
#include <stdint.h>
typedef uint64_t prophet_u64;
#else
typedef unsigned long long prophet_u64;
#endif

/* Value of both maps: cumulative TCP payload bytes and calls on one CPU. */
struct prophet_bw_counts {
    prophet_u64 tx_bytes; /* sendmsg() returns > 0 */
    prophet_u64 rx_bytes; /* recvmsg() returns > 0, MSG_PEEK excluded */
    prophet_u64 tx_calls;
    prophet_u64 rx_calls;
};

/* Processes tracked at once (LRU: the least recently active tgid is evicted when full). */
#define PROPHET_BW_MAX_PROCS 16384

/* Map names (<= 15 characters: the kernel's limit) and the file names they are pinned under. */
#define PROPHET_BW_MAP_PROC "prophet_proc"
#define PROPHET_BW_MAP_HOST "prophet_host"

#define PROPHET_BW_AF_INET 2
#define PROPHET_BW_AF_INET6 10
#define PROPHET_BW_IPPROTO_TCP 6
#define PROPHET_BW_MSG_PEEK 2

#endif
