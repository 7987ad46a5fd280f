/* The real NCCL (nccl_symbols.c): its entry points, resolved lazily and once. A leaf: it calls
 * only process_config.h and log_line.h. */
#ifndef PROPHET_NCCL_SYMBOLS_H
#define PROPHET_NCCL_SYMBOLS_H

#include <stddef.h>

#include <nccl.h>

typedef struct prophet_nccl_api {
    __typeof__(&ncclGetVersion) GetVersion;
    __typeof__(&ncclGetErrorString) GetErrorString;
    __typeof__(&ncclCommUserRank) CommUserRank;
    __typeof__(&ncclCommCount) CommCount;
    __typeof__(&ncclAllReduce) AllReduce;
    __typeof__(&ncclBroadcast) Broadcast;
    __typeof__(&ncclBcast) Bcast;
    __typeof__(&ncclReduce) Reduce;
    __typeof__(&ncclAllGather) AllGather;
    __typeof__(&ncclReduceScatter) ReduceScatter;
    __typeof__(&ncclAlltoAll) AlltoAll;
    __typeof__(&ncclGather) Gather;
    __typeof__(&ncclScatter) Scatter;
    __typeof__(&ncclSend) Send;
    __typeof__(&ncclRecv) Recv;
    __typeof__(&ncclGroupStart) GroupStart;
    __typeof__(&ncclGroupEnd) GroupEnd;
    __typeof__(&ncclGroupSimulateEnd) GroupSimulateEnd;
    __typeof__(&ncclCommInitRank) CommInitRank;
    __typeof__(&ncclCommInitRankConfig) CommInitRankConfig;
    __typeof__(&ncclCommInitAll) CommInitAll;
    __typeof__(&ncclCommInitRankScalable) CommInitRankScalable;
    __typeof__(&ncclCommSplit) CommSplit;
    __typeof__(&ncclCommShrink) CommShrink;
    __typeof__(&ncclCommDestroy) CommDestroy;
    __typeof__(&ncclCommAbort) CommAbort;
    __typeof__(&ncclCommFinalize) CommFinalize;
    __typeof__(&ncclCommRevoke) CommRevoke;
    __typeof__(&ncclCommGetAsyncError) CommGetAsyncError;
    __typeof__(&ncclRedOpDestroy) RedOpDestroy;
} prophet_nccl_api_t;

extern prophet_nccl_api_t prophet_nccl;
/* Resolves the real NCCL once (thread-safe). 0 when at least the symbols were found. */
int prophet_nccl_resolve(void);
/* NCCL_VERSION_CODE of the real library (0 if unknown); 1 when its major version is supported. */
int prophet_nccl_version(void);
/* NCCL_VERSION_CODE as NCCL writes it: 22809 -> "2.28.9", 2708 -> "2.7.8"; returns buf. */
const char *prophet_nccl_version_text(int code, char *buf, size_t len);
int prophet_nccl_supported(void);
/* The newest NCCL release whose entry points were reviewed (every one that enqueues work is
 * interposed: preload/prophet.map; the others are listed in nccl_exports.c). A newer one is named
 * once (process/init.c); one that exports an entry point not reviewed is passed through. */
#define PROPHET_NCCL_REVIEWED_MAJOR 2
#define PROPHET_NCCL_REVIEWED_MINOR 28
/* 1 when NCCL is newer than the releases reviewed. */
int prophet_nccl_newer_than_reviewed(void);
/* ncclGetErrorString's text of rc, or "unknown NCCL error" without the real NCCL. */
const char *prophet_nccl_errstr(ncclResult_t rc);
/* Called by a wrapper whose real symbol is missing: one WARN and ncclInternalError. */
ncclResult_t prophet_nccl_missing(const char *name);

#endif
