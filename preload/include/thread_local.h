/* Thread-local state of the preload on the per-call path (the re-entry depth, the group depth,
 * the last communicator found). libprophet.so is loaded at process start (LD_PRELOAD), so its
 * thread-locals can live in the static TLS block: the initial-exec model reads them with one
 * %fs-relative load instead of a call to __tls_get_addr per access (a few bytes in all: a later
 * dlopen of the library still finds room in glibc's static TLS surplus). */
#ifndef PROPHET_THREAD_LOCAL_H
#define PROPHET_THREAD_LOCAL_H

#define PROPHET_TLS _Thread_local __attribute__((tls_model("initial-exec")))

#endif
