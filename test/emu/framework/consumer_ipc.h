/* --consumer ipc: a consumer process per rank (prophet-emu run again in its helper mode), which
 * opens the rank's interprocess event and gradient buffers, and for each request waits on the
 * event's latest record in its own stream, copies the gradient out and answers with the values it
 * read; the rank checks them exactly. As PyTorch's CUDA tensor sharing (torch.multiprocessing):
 * an event with CU_EVENT_INTERPROCESS recorded on the current stream, its handle and the tensor's
 * memory handle handed to another process. */
#ifndef EMU_CONSUMER_IPC_H
#define EMU_CONSUMER_IPC_H

#include <cuda.h>
#include <stddef.h>
#include <sys/types.h>

/* argv[1] of the helper mode: prophet-emu EMU_IPC_CHILD_ARG FD */
#define EMU_IPC_CHILD_ARG "--ipc-consumer-child"

struct emu_ipc_peer {
    pid_t pid; /* 0: not started */
    int fd;    /* a stream socket to it, -1: none */
};

/* Starts the consumer process (fork, exec of /proc/self/exe) and hands it the event's handle;
 * the calling thread's context is device `device`'s primary context. 0, or a CUresult/-1 with a
 * line on stderr. */
int emu_ipc_peer_start(struct emu_ipc_peer *p, CUevent ev, int device);

/* One read: the peer waits on the event's latest record, copies `bytes` from the allocation of
 * `mem` (gradient `g`: opened once) and answers; the values land in out. 0 or -1. */
int emu_ipc_peer_read(struct emu_ipc_peer *p, size_t g, const CUipcMemHandle *mem, size_t bytes,
                      void *out);

/* Closes the socket (the peer exits) and reaps it. */
void emu_ipc_peer_stop(struct emu_ipc_peer *p);

/* The helper mode's main: serves requests on the socket `fd_arg` until it closes. */
int emu_ipc_child_main(const char *fd_arg);

#endif
