/* Fault injection, shared by the emulated driver and the emulated NCCL (which calls emuFaultHit).
 *   EMU_FAULT="<entry>:<n>[:rank=<r>][:rc=<code>][,...]"
 * fails the n-th call (1-based, counted per process) of the entry point named <entry> (the API
 * name without version suffix: cuStreamCreate, cuEventRecord, ncclBroadcast, ...), in the process
 * whose EMU_RANK equals <r> (every process when rank= is absent), returning <code> (default: the
 * library's own, CUDA_ERROR_UNKNOWN or ncclInternalError). Each hit is logged on stderr:
 *   emu-fault: cuStreamCreate call 1 fails with 999 (rank 1)
 * EMU_RANK is set by prophet-emu in each rank's process; both variables are read at each counted
 * call, so a fork before the first call (one process per rank) counts from zero.
 * emuFaultArm(spec) (emu_cuda.h) replaces the list at run time, counting from the call: a test
 * makes "the next cuStreamWriteValue32" fail at the point of the program it chooses. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu_internal.h"

#define EMU_FAULT_MAX 8

struct emu_fault_spec {
    char name[64];
    long nth;
    long rank; /* -1: every rank */
    long code; /* -1: the library's default */
    long calls;
};

static pthread_mutex_t emu_fault_lock = PTHREAD_MUTEX_INITIALIZER;
static struct emu_fault_spec emu_faults[EMU_FAULT_MAX];
static int emu_fault_n = -1; /* -1: not parsed in this process */
static pid_t emu_fault_pid;

/* One "<entry>:<n>[:rank=<r>][:rc=<code>]" into *f; -1 if malformed. */
static int emu_fault_parse_one(char *s, struct emu_fault_spec *f)
{
    char *save = NULL, *tok = strtok_r(s, ":", &save), *end;

    memset(f, 0, sizeof(*f));
    f->rank = f->code = -1;
    if (!tok || strlen(tok) >= sizeof(f->name))
        return -1;
    strcpy(f->name, tok);
    if (!(tok = strtok_r(NULL, ":", &save)))
        return -1;
    f->nth = strtol(tok, &end, 10);
    if (*end || f->nth < 1)
        return -1;
    while ((tok = strtok_r(NULL, ":", &save)) != NULL) {
        long *dst = strncmp(tok, "rank=", 5) == 0 ? &f->rank
                    : strncmp(tok, "rc=", 3) == 0 ? &f->code
                                                  : NULL;
        if (!dst)
            return -1;
        *dst = strtol(strchr(tok, '=') + 1, &end, 10);
        if (*end || *dst < 0)
            return -1;
    }
    return 0;
}

/* emuFaultArm's list (replaces EMU_FAULT's from then on); set while one is armed. */
static char emu_fault_armed[512];
static atomic_int emu_fault_armed_set;

static void emu_fault_parse(void)
{
    const char *env = emu_fault_armed_set ? emu_fault_armed : getenv("EMU_FAULT");
    char buf[512], *save = NULL, *item;

    emu_fault_n = 0;
    emu_fault_pid = getpid();
    if (!env || !*env)
        return;
    snprintf(buf, sizeof(buf), "%s", env);
    for (item = strtok_r(buf, ",", &save); item && emu_fault_n < EMU_FAULT_MAX;
         item = strtok_r(NULL, ",", &save)) {
        char one[256];
        snprintf(one, sizeof(one), "%s", item);
        if (emu_fault_parse_one(one, &emu_faults[emu_fault_n]) == 0)
            emu_fault_n++;
        else
            fprintf(stderr,
                    "emu-fault: ignoring EMU_FAULT item '%s' (want entry:n[:rank=r][:rc=code])\n",
                    item);
    }
}

static long emu_fault_rank(void)
{
    const char *s = getenv("EMU_RANK");
    return s && *s ? strtol(s, NULL, 10) : -1;
}

static void (*emu_fault_hook)(const char *name, void *arg);
static void *emu_fault_hook_arg;

void emuFaultSetHook(void (*fn)(const char *name, void *arg), void *arg)
{
    pthread_mutex_lock(&emu_fault_lock);
    emu_fault_hook = fn;
    emu_fault_hook_arg = arg;
    pthread_mutex_unlock(&emu_fault_lock);
}

void emuFaultArm(const char *spec)
{
    pthread_mutex_lock(&emu_fault_lock);
    snprintf(emu_fault_armed, sizeof(emu_fault_armed), "%s", spec ? spec : "");
    atomic_store(&emu_fault_armed_set, 1);
    emu_fault_parse(); /* counts start now */
    pthread_mutex_unlock(&emu_fault_lock);
}

int emuFaultHit(const char *name, int *code)
{
    void (*hook)(const char *, void *) = NULL;
    void *hook_arg = NULL;
    int hit = 0;

    if (!atomic_load(&emu_fault_armed_set) && !getenv("EMU_FAULT"))
        return 0;
    pthread_mutex_lock(&emu_fault_lock);
    if (emu_fault_n < 0 || emu_fault_pid != getpid())
        emu_fault_parse();
    for (int i = 0; i < emu_fault_n; i++) { /* every item counts: a:1,a:2 fails calls 1 and 2 */
        struct emu_fault_spec *f = &emu_faults[i];
        if (strcmp(f->name, name) != 0 || (f->rank >= 0 && f->rank != emu_fault_rank()))
            continue;
        if (++f->calls != f->nth || hit)
            continue;
        hit = 1;
        if (f->code >= 0)
            *code = (int)f->code;
        fprintf(stderr, "emu-fault: %s call %ld fails with %d (rank %ld)\n", name, f->calls, *code,
                emu_fault_rank());
        hook = emu_fault_hook;
        hook_arg = emu_fault_hook_arg;
    }
    pthread_mutex_unlock(&emu_fault_lock);
    if (hook)
        hook(name, hook_arg);
    return hit;
}
