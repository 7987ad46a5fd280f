/* TCP payload bytes per process and per host, counted where sendmsg()/recvmsg() return.
 *
 * Two flavours of the same probe; the loader picks one at run time:
 *  - raw_tp/sock_{send,recv}_length: raw tracepoints attached by name (no tracefs needed, no
 *    perf-buffer record built). family and protocol are read from the socket with CO-RE.
 *  - tp/sock/sock_{send,recv}_length: classic tracepoints, their fields read from the record;
 *    used when raw tracepoints cannot be attached.
 * Both run in the context of the calling thread, so bpf_get_current_pid_tgid() names the process
 * that moved the bytes. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "prophet_bw.h"

char LICENSE[] SEC("license") = "GPL";

/* Only the fields the probe reads; CO-RE finds their offsets in the running kernel's BTF. */
struct sock_common {
    unsigned short skc_family;
} __attribute__((preserve_access_index));

struct sock {
    struct sock_common __sk_common;
    unsigned short sk_protocol;
} __attribute__((preserve_access_index));

/* The record of sock:sock_send_length / sock:sock_recv_length (see the tracepoint's format). */
struct prophet_sock_length_record {
    unsigned long long common; /* type, flags, preempt count, pid */
    void *sk;
    unsigned short family;
    unsigned short protocol;
    int ret;
    int flags;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
    __uint(max_entries, PROPHET_BW_MAX_PROCS);
    __type(key, __u32); /* tgid */
    __type(value, struct prophet_bw_counts);
} prophet_proc SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct prophet_bw_counts);
} prophet_host SEC(".maps");

/* Set before load (0: count every process). A probe that a rank loads for itself counts only its
 * own process: with N ranks on a host, N probes run on every socket call of every rank, and each
 * but one returns here, before reading the socket or touching a map (Horovod at 8 ranks on 2
 * cores: the programs' share of all CPU samples fell from 1.9% to 0.9%, docs/benchmarks.md). */
const volatile __u32 prophet_only_tgid = 0;

static __always_inline int prophet_wanted(void)
{
    return !prophet_only_tgid || (__u32)(bpf_get_current_pid_tgid() >> 32) == prophet_only_tgid;
}

static __always_inline void prophet_add(struct prophet_bw_counts *c, int is_tx, long len)
{
    /* Per-CPU values: no other CPU writes this slot, and the program is not re-entered on
     * one CPU for these tracepoints, so a plain add is exact. */
    if (is_tx) {
        c->tx_bytes += len;
        c->tx_calls += 1;
    } else {
        c->rx_bytes += len;
        c->rx_calls += 1;
    }
}

static __always_inline int prophet_count(unsigned family, unsigned protocol, int ret, int flags,
                                         int is_tx)
{
    if (ret <= 0 || (flags & PROPHET_BW_MSG_PEEK))
        return 0;
    if (protocol != PROPHET_BW_IPPROTO_TCP)
        return 0;
    if (family != PROPHET_BW_AF_INET && family != PROPHET_BW_AF_INET6)
        return 0;

    __u32 zero = 0;
    struct prophet_bw_counts *host = bpf_map_lookup_elem(&prophet_host, &zero);
    if (host)
        prophet_add(host, is_tx, ret);

    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    struct prophet_bw_counts *proc = bpf_map_lookup_elem(&prophet_proc, &tgid);
    if (!proc) {
        struct prophet_bw_counts init = {};
        bpf_map_update_elem(&prophet_proc, &tgid, &init, BPF_NOEXIST);
        proc = bpf_map_lookup_elem(&prophet_proc, &tgid);
        if (!proc)
            return 0;
    }
    prophet_add(proc, is_tx, ret);
    return 0;
}

static __always_inline int prophet_count_sk(struct sock *sk, int ret, int flags, int is_tx)
{
    if (ret <= 0 || !sk || !prophet_wanted())
        return 0;
    unsigned family = BPF_CORE_READ(sk, __sk_common.skc_family);
    unsigned protocol = BPF_CORE_READ(sk, sk_protocol);
    return prophet_count(family, protocol, ret, flags, is_tx);
}

SEC("raw_tp/sock_send_length")
int BPF_PROG(prophet_raw_send, struct sock *sk, int ret, int flags)
{
    return prophet_count_sk(sk, ret, flags, 1);
}

SEC("raw_tp/sock_recv_length")
int BPF_PROG(prophet_raw_recv, struct sock *sk, int ret, int flags)
{
    return prophet_count_sk(sk, ret, flags, 0);
}

SEC("tp/sock/sock_send_length")
int prophet_tp_send(struct prophet_sock_length_record *rec)
{
    if (!prophet_wanted())
        return 0;
    return prophet_count(rec->family, rec->protocol, rec->ret, rec->flags, 1);
}

SEC("tp/sock/sock_recv_length")
int prophet_tp_recv(struct prophet_sock_length_record *rec)
{
    if (!prophet_wanted())
        return 0;
    return prophet_count(rec->family, rec->protocol, rec->ret, rec->flags, 0);
}
