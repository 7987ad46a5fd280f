/* prophet-doctor: a checklist that says why a job's NCCL calls are, or are not, intercepted by
 * libprophet.so. Against a running job it reads /proc/PID/maps and /proc/PID/environ; against a
 * command it runs it under the preload in a dry mode (PROPHET_GATE=observe: every call is
 * observed and passed on at once, nothing held or regrouped) and looks at the process as it
 * exits. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doctor.h"
#include "prophet/bw_plugin.h"
#include "prophet/config.h"
#include "prophet_cli.h"

#define DOCTOR_DRY_ENV "PROPHET_GATE=observe" /* the dry mode: observe, hold nothing */
#define DOCTOR_MAX_ENV 4096
#define PROG "prophet-doctor"

typedef struct doctor {
    int pid;                /* the process looked at */
    int command;            /* 1: we ran it (dry run), 0: --pid */
    int exit_status;        /* the command's wait status */
    char exe[PATH_MAX];     /* its executable */
    char preload[PATH_MAX]; /* libprophet.so beside prophet-doctor */
    char *env[DOCTOR_MAX_ENV];
    int n_env;
    char env_buf[1 << 20];
    unsigned long long cap_eff;
    /* from the dry run's stderr */
    int active, summaries, warns;
    long long calls;
    char warn_lines[8][512];
    int fails;
    const char *argv0; /* the command (command mode) */
} doctor_t;

static doctor_proc_t doctor_proc;
static doctor_t doctor;

static void usage(FILE *f)
{
    fputs("NAME\n"
          "    prophet-doctor - why a job's NCCL calls are or are not intercepted by Prophet\n"
          "\n"
          "SYNOPSIS\n"
          "    prophet-doctor --pid PID\n"
          "    prophet-doctor [--] COMMAND [ARG...]\n"
          "\n"
          "DESCRIPTION\n"
          "    Prints a checklist, one line per item, each PASS, WARN or FAIL, with the fix under\n"
          "    each WARN and FAIL: libprophet.so loaded; the NCCL the job loads (path, version,\n"
          "    interposable or linked statically into another library); whether the preload saw\n"
          "    its calls (a command) or whether the calls reach it (a running process); the CUDA\n"
          "    driver and runtime; the eBPF probe (privileges, bpffs, prophet-bwmon); the\n"
          "    preload's knobs (PROPHET_*) as the preload parses them.\n"
          "\n"
          "OPTIONS\n"
          "    --pid PID   look at a running process (a rank of the job, not its launcher):\n"
          "                /proc/PID/maps and /proc/PID/environ. The intercept line says whether\n"
          "                its NCCL calls reach the preload: libprophet.so preloaded (LD_PRELOAD\n"
          "                or /etc/ld.so.preload) ahead of every other object that defines NCCL's\n"
          "                symbols, and NCCL loaded as a shared library.\n"
          "    COMMAND     run COMMAND under the preload in a dry mode (" DOCTOR_DRY_ENV ",\n"
          "                PROPHET_DEBUG=INFO: every call is observed and passed on at once,\n"
          "                nothing is held or regrouped) and look at the process as it exits.\n"
          "                Use a short run of one rank's program, not a launcher. A command\n"
          "                that never loads NCCL or makes no NCCL call fails.\n"
          "    -h, --help  this text.\n"
          "    --version   print the version and exit.\n"
          "\n"
          "EXIT STATUS\n"
          "    0 no FAIL line; 1 at least one FAIL; 2 usage error or the process cannot be read.\n"
          "\n"
          "SEE ALSO\n"
          "    prophet-run(1)\n",
          f);
}

static void line(const char *verdict, const char *item, const char *fix, const char *fmt, ...)
{
    va_list ap;
    printf("%-4s  %-9s ", verdict, item);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (fix)
        printf("%-4s  %-9s fix: %s\n", "", "", fix);
    if (!strcmp(verdict, "FAIL"))
        doctor.fails++;
}

static const char *doctor_getenv(const char *name, void *ctx)
{
    size_t n = strlen(name);
    (void)ctx;
    for (int i = doctor.n_env - 1; i >= 0; i--)
        if (!strncmp(doctor.env[i], name, n) && doctor.env[i][n] == '=')
            return doctor.env[i] + n + 1;
    return NULL;
}

/* NUL-separated VAR=VALUE records (a /proc/PID/environ) into doctor.env. */
static int doctor_env_read(int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t len = read(fd, doctor.env_buf, sizeof(doctor.env_buf) - 1), off = 0;
    close(fd);
    if (len < 0)
        return -1;
    doctor.env_buf[len] = 0;
    doctor.n_env = 0;
    while (off < len && doctor.n_env < DOCTOR_MAX_ENV) {
        doctor.env[doctor.n_env++] = doctor.env_buf + off;
        off += (ssize_t)strlen(doctor.env_buf + off) + 1;
    }
    return 0;
}

static void doctor_caps_read(int pid)
{
    char path[64], l[256];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(l, sizeof(l), f))
        if (sscanf(l, "CapEff: %llx", &doctor.cap_eff) == 1)
            break;
    fclose(f);
}

static void doctor_snapshot(int pid)
{
    char path[64];
    ssize_t n;
    snprintf(path, sizeof(path), "/proc/%d/exe", pid);
    n = readlink(path, doctor.exe, sizeof(doctor.exe) - 1);
    doctor.exe[n > 0 ? n : 0] = 0;
    doctor_maps_read(pid, &doctor_proc);
    doctor_env_read(pid);
    doctor_caps_read(pid);
}

/* libprophet.so beside this program: ../lib of the build or install tree. */
static void doctor_find_preload(void)
{
    char self[PATH_MAX];
    const char *rel[] = {"../lib/libprophet.so", "../lib64/libprophet.so"};
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return;
    self[n] = 0;
    *strrchr(self, '/') = 0;
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof(p), "%s/%s", self, rel[i]);
        if (realpath(p, doctor.preload))
            return;
    }
    doctor.preload[0] = 0;
}

/* A preload line's level word: after "prophet: ", the sender (HOST:PID, then [RANK] when known)
 * when there is one. */
static const char *doctor_level(const char *l)
{
    const char *p = l + 9, *sp = strchr(p, ' '), *colon = strchr(p, ':');

    if (sp && colon && colon < sp) {
        p = sp + 1;
        if (*p == '[' && (sp = strchr(p, ' ')))
            p = sp + 1;
    }
    return p;
}

/* The dry run's stderr: the preload's lines are evidence, the rest is passed on. */
static void doctor_scan_stderr(FILE *f)
{
    char l[4096];
    rewind(f);
    while (fgets(l, sizeof(l), f)) {
        const char *c, *lv;
        if (strncmp(l, "prophet: ", 9) != 0) {
            fputs(l, stderr);
            continue;
        }
        lv = doctor_level(l);
        if (!strncmp(lv, "INFO active:", 12))
            doctor.active++;
        if (!strncmp(lv, "INFO summary comm", 17) && (c = strstr(lv, " calls="))) {
            doctor.summaries++;
            doctor.calls += atoll(c + 7);
        }
        if (!strncmp(lv, "WARN", 4) && doctor.warns < 8) {
            l[strcspn(l, "\n")] = 0;
            snprintf(doctor.warn_lines[doctor.warns++], sizeof(doctor.warn_lines[0]), "%.500s", l);
        }
    }
}

/* Runs argv with the preload in the dry mode, traced only to stop it at its exit, when every
 * library it loaded is still mapped. */
static int doctor_run(char **argv)
{
    char pre[2 * PATH_MAX + 16];
    const char *old = getenv("LD_PRELOAD");
    FILE *err = tmpfile();
    int st;

    if (!err)
        return -1;
    if (old && *old && !strstr(old, doctor.preload))
        snprintf(pre, sizeof(pre), "%s:%s", old, doctor.preload);
    else
        snprintf(pre, sizeof(pre), "%s", doctor.preload);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fileno(err), 2);
        setenv("LD_PRELOAD", pre, 1);
        putenv(DOCTOR_DRY_ENV);
        setenv("PROPHET_DEBUG", "INFO", 1);
        unsetenv("PROPHET_DEBUG_FILE"); /* its lines are read from stderr */
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        execvp(argv[0], argv);
        fprintf(stderr, "prophet-doctor: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    doctor.pid = pid;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    if (WIFEXITED(st)) { /* exec failed */
        doctor.exit_status = st;
        doctor_scan_stderr(err);
        fclose(err);
        return -1;
    }
    ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL));
    ptrace(PTRACE_CONT, pid, NULL, NULL);
    for (;;) {
        if (waitpid(pid, &st, 0) != pid)
            return -1;
        if (WIFEXITED(st) || WIFSIGNALED(st))
            break;
        int sig = WSTOPSIG(st);
        if (sig == SIGTRAP && (st >> 16) == PTRACE_EVENT_EXIT) {
            doctor_snapshot(pid);
            sig = 0;
        } else if (sig == SIGTRAP) {
            sig = 0;
        }
        ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
    }
    doctor.exit_status = st;
    doctor_scan_stderr(err);
    fclose(err);
    return 0;
}

static int doctor_is(const doctor_obj_t *o, const char *prefix)
{
    return !strncmp(doctor_base(o->path), prefix, strlen(prefix));
}

/* Is a library with this file name needed by some loaded object (not dlopen()ed)? */
static int doctor_needed(const doctor_obj_t *lib)
{
    const char *base = doctor_base(lib->path);
    for (int i = 0; i < doctor_proc.n_objs; i++)
        for (int j = 0; j < doctor_proc.objs[i].n_needed; j++) {
            const char *n = doctor_proc.objs[i].needed[j];
            if (!strncmp(base, n, strlen(n)))
                return 1;
        }
    return 0;
}

/* NCCL's version: from the file name (libnccl.so.2.18.3), else ncclGetVersion() in a child. */
static void doctor_nccl_version(const doctor_obj_t *lib, const char *cuda, char *out, size_t len)
{
    char real[PATH_MAX];
    const char *v;
    int fds[2], code = 0;

    snprintf(out, len, "unknown");
    if (realpath(lib->path, real) && (v = strstr(doctor_base(real), ".so.")) &&
        strchr(v + 4, '.')) {
        snprintf(out, len, "%s", v + 4);
        return;
    }
    if (pipe(fds) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        if (cuda)
            dlopen(cuda, RTLD_NOW | RTLD_GLOBAL);
        void *h = dlopen(lib->path, RTLD_NOW | RTLD_LOCAL);
        int (*get)(int *) = h ? (int (*)(int *))dlsym(h, "ncclGetVersion") : NULL;
        if (get && get(&code) == 0 && write(fds[1], &code, sizeof(code)) < 0)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    if (pid > 0 && read(fds[0], &code, sizeof(code)) == (ssize_t)sizeof(code) && code > 0)
        snprintf(out, len, "%d.%d.%d (code %d)", code >= 10000 ? code / 10000 : code / 1000,
                 code >= 10000 ? code / 100 % 100 : code / 100 % 10,
                 code >= 10000 ? code % 100 : code % 100, code);
    close(fds[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

static const doctor_obj_t *doctor_find(const char *prefix, int nth)
{
    for (int i = 0; i < doctor_proc.n_objs; i++)
        if (doctor_proc.objs[i].is_elf && doctor_is(&doctor_proc.objs[i], prefix) && nth-- == 0)
            return &doctor_proc.objs[i];
    return NULL;
}

static void check_preload(void)
{
    const doctor_obj_t *p = doctor_find("libprophet.so", 0);
    if (p)
        line("PASS", "preload", NULL, "%s is loaded", p->path);
    else
        line("FAIL", "preload", "start the job with prophet-run (prophet-run COMMAND...)",
             "libprophet.so is not loaded into pid %d (LD_PRELOAD=%s)", doctor.pid,
             doctor_getenv("LD_PRELOAD", NULL) ? doctor_getenv("LD_PRELOAD", NULL) : "");
}

/* The NCCLs in the process and whether calls to them can reach the preload. */
static int check_nccl(void)
{
    const doctor_obj_t *cuda = doctor_find("libcuda.so", 0);
    int found = 0;
    for (int i = 0; i < doctor_proc.n_objs; i++) {
        const doctor_obj_t *o = &doctor_proc.objs[i];
        if (!o->is_elf || !o->defines_nccl || doctor_is(o, "libprophet"))
            continue;
        found++;
        if (doctor_is(o, "libnccl")) {
            char ver[64];
            doctor_nccl_version(o, cuda ? cuda->path : NULL, ver, sizeof(ver));
            if (doctor_needed(o))
                line("PASS", "nccl", NULL, "%s, version %s: a shared library, interposable",
                     o->path, ver);
            else
                line("WARN", "nccl",
                     "if the calls below are 0, the framework calls NCCL through dlsym() on its "
                     "own handle: make it link libnccl (or dlopen it RTLD_GLOBAL and call the "
                     "global names)",
                     "%s, version %s: loaded with dlopen() (no loaded object needs it); calls made "
                     "through dlsym() on a RTLD_LOCAL handle bypass the preload",
                     o->path, ver);
        } else if (!strcmp(o->path, doctor.exe) || !o->exports_nccl || o->symbolic) {
            line("FAIL", "nccl",
                 "use a build of the framework that loads NCCL as a shared library (libnccl.so.2, "
                 "e.g. PyTorch's pip wheels with nvidia-nccl), or rebuild it against the system "
                 "libnccl (USE_SYSTEM_NCCL=1)",
                 "NCCL is linked statically into %s: its calls bind inside it and never reach "
                 "the preload",
                 o->path);
        } else {
            line("WARN", "nccl",
                 "if the calls below are 0, use a build that loads NCCL as a shared library",
                 "NCCL is linked into %s and exported: calls from other libraries can be "
                 "intercepted, its own internal calls cannot",
                 o->path);
        }
    }
    if (!found && doctor.command)
        line("FAIL", "nccl",
             "run one rank's training program (e.g. python train.py with a short run), not a "
             "launcher; if it does use NCCL, it is linked statically with its symbols hidden "
             "(conda PyTorch): use a build that loads libnccl.so.2",
             "the command never loaded NCCL: %s mapped no libnccl.so and no library that "
             "defines ncclAllReduce",
             doctor.argv0);
    else if (!found)
        line("WARN", "nccl",
             "look at a rank once it has made its first NCCL call (--pid PID of a worker, not the "
             "launcher); if the job does use NCCL, it is linked statically with its symbols hidden "
             "(conda PyTorch): use a build that loads libnccl.so.2",
             "no NCCL is loaded in pid %d (yet)", doctor.pid);
    return found;
}

/* Command mode: did the preload see the calls? */
static void check_calls(int nccl)
{
    if (!doctor.command)
        return;
    if (doctor.calls > 0)
        line("PASS", "calls", NULL, "the preload intercepted %lld NCCL calls in the dry run",
             doctor.calls);
    else if (nccl)
        line("FAIL", "calls", "see the nccl lines above",
             "NCCL was loaded but the preload saw none of its collective calls");
    else
        line("FAIL", "calls", "see the nccl line above",
             "the command made no NCCL call: the preload saw nothing of %s to intercept",
             doctor.argv0);
    for (int i = 0; i < doctor.warns; i++)
        line("WARN", "preload", NULL, "said: %s", doctor.warn_lines[i]);
}

/* One entry of LD_PRELOAD (or /etc/ld.so.preload) as a loaded object: by path, else by name. */
static const doctor_obj_t *doctor_find_loaded(const char *entry)
{
    char want[PATH_MAX], real[PATH_MAX];
    int by_path = strchr(entry, '/') && realpath(entry, want);
    for (int i = 0; i < doctor_proc.n_objs; i++) {
        const doctor_obj_t *o = &doctor_proc.objs[i];
        if (by_path ? realpath(o->path, real) && !strcmp(real, want)
                    : !strcmp(doctor_base(o->path), entry))
            return o;
    }
    return NULL;
}

/* What the dynamic linker preloads into the process, in its order: LD_PRELOAD's entries, then
 * /etc/ld.so.preload's. Returns the 1-based position of libprophet.so (PRE) among those of its
 * source (*FROM: "LD_PRELOAD" or "/etc/ld.so.preload"), 0 when it is not preloaded; *BEFORE: the
 * first object preloaded ahead of it that exports NCCL's symbols, or NULL. */
static int doctor_preload_position(const doctor_obj_t *pre, const char **from,
                                   const doctor_obj_t **before)
{
    const char *env = doctor_getenv("LD_PRELOAD", NULL);
    char list[2][8192], *save = NULL;
    FILE *f = fopen("/etc/ld.so.preload", "re");
    size_t n = f ? fread(list[1], 1, sizeof(list[1]) - 1, f) : 0;

    if (f)
        fclose(f);
    list[1][n] = 0;
    snprintf(list[0], sizeof(list[0]), "%s", env ? env : "");
    *before = NULL;
    for (int src = 0; src < 2; src++) {
        int pos = 0;
        *from = src ? "/etc/ld.so.preload" : "LD_PRELOAD";
        for (char *t = strtok_r(list[src], ": \t\n", &save); t;
             t = strtok_r(NULL, ": \t\n", &save)) {
            const doctor_obj_t *o = doctor_find_loaded(t);
            pos++;
            if (o == pre)
                return pos;
            if (o && o->is_elf && o->exports_nccl && !*before)
                *before = o;
        }
    }
    return 0;
}

/* --pid: do the running process's NCCL calls reach the preload? The dynamic linker binds a call
 * to the first object in its global scope that defines the symbol: the executable, then the
 * preloaded objects in order, then the libraries in load order. */
static void check_intercept(void)
{
    const doctor_obj_t *pre = doctor_find("libprophet.so", 0), *lib = NULL, *hidden = NULL;
    const doctor_obj_t *before = NULL;
    const char *from = NULL;
    char errs[1024];
    prophet_config_t cfg;

    if (doctor.command)
        return;
    if (!pre) {
        line("FAIL", "intercept", NULL, "no: libprophet.so is not loaded into pid %d", doctor.pid);
        return;
    }
    int at = doctor_preload_position(pre, &from, &before);
    for (int i = 0; i < doctor_proc.n_objs; i++) {
        const doctor_obj_t *o = &doctor_proc.objs[i];
        if (!o->is_elf || !o->defines_nccl || o == pre)
            continue;
        if (doctor_is(o, "libnccl") && !lib)
            lib = o;
        else if (!doctor_is(o, "libnccl") && !hidden)
            hidden = o;
    }
    prophet_config_parse(&cfg, doctor_getenv, NULL, errs, sizeof(errs));
    if (!at)
        line("FAIL", "intercept", "preload it: start the job with prophet-run COMMAND...",
             "no: %s is loaded but not preloaded (in neither LD_PRELOAD nor /etc/ld.so.preload: "
             "dlopen()ed?), so NCCL's own symbols come first and calls bypass it",
             pre->path);
    else if (before)
        line("FAIL", "intercept", "put libprophet.so first in LD_PRELOAD",
             "no: %s is preloaded ahead of libprophet.so (%s entry %d) and defines NCCL's "
             "symbols: calls bind to it",
             before->path, from, at);
    else if (!lib && hidden)
        line("FAIL", "intercept", "see the nccl line above",
             "no: NCCL is linked into %s, whose own calls never reach the preload", hidden->path);
    else if (!lib)
        line("WARN", "intercept", NULL,
             "not yet: libprophet.so is preloaded (%s entry %d), but no NCCL is loaded in pid %d "
             "yet",
             from, at, doctor.pid);
    else if (cfg.disable)
        line("WARN", "intercept", "unset PROPHET_DISABLE",
             "yes, and passed on untouched: PROPHET_DISABLE=1 in pid %d's environment", doctor.pid);
    else if (!doctor_needed(lib))
        line("WARN", "intercept", "see the nccl line above",
             "by name only: libprophet.so is preloaded (%s entry %d); %s was loaded with dlopen(), "
             "so calls made through dlsym() on that handle bypass it",
             from, at, lib->path);
    else
        line("PASS", "intercept", NULL,
             "yes: libprophet.so is preloaded (%s entry %d), so its NCCL symbols come before "
             "those of %s",
             from, at, lib->path);
}

static void check_cuda(const prophet_config_t *cfg)
{
    const doctor_obj_t *drv = doctor_find("libcuda.so", 0), *drv2 = doctor_find("libcuda.so", 1);
    const doctor_obj_t *rt = NULL;
    for (int i = 0; i < doctor_proc.n_objs && !rt; i++)
        if (doctor_proc.objs[i].defines_cudart)
            rt = &doctor_proc.objs[i];
    if (!drv) {
        line("WARN", "cuda", "look at a rank once it has initialised CUDA",
             "no CUDA driver (libcuda.so.1) is loaded in pid %d (yet)", doctor.pid);
        return;
    }
    const char *rtdesc = !rt                          ? "none loaded"
                         : doctor_is(rt, "libcudart") ? "shared"
                                                      : "linked into";
    if (drv2)
        line("WARN", "cuda", "make one driver visible (LD_LIBRARY_PATH, container runtime)",
             "two CUDA drivers are loaded: %s and %s", drv->path, drv2->path);
    else if (cfg->cuda_lib[0] == '/' && strcmp(cfg->cuda_lib, drv->path) != 0)
        line("FAIL", "cuda", "unset PROPHET_CUDA_LIB or point it at the job's driver",
             "PROPHET_CUDA_LIB=%s is not the job's driver %s: the preload's stream gates would "
             "not reach the job's streams",
             cfg->cuda_lib, drv->path);
    else
        line("PASS", "cuda", NULL, "driver %s (the one the preload uses); runtime: %s%s%s",
             drv->path, rtdesc, rt ? " " : "", rt ? rt->path : "");
}

/* Does the eBPF plugin at PATH load and export an interface version the preload knows
 * (include/prophet/bw_plugin.h)? One that does not load counts as known: the preload then says
 * why it did not load. */
static int doctor_bw_plugin_known(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int known;

    if (!h)
        return 1;
    known = dlsym(h, PROPHET_BW_PLUGIN_V1_SYMBOL) != NULL;
    dlclose(h);
    return known;
}

static void check_bpf(const prophet_config_t *cfg)
{
    const unsigned long long sys_admin = 1ull << 21, perfmon = 1ull << 38, bpf = 1ull << 39;
    char fix[1024], l[1024], mnt[512] = "";
    if (cfg->bwmon == PROPHET_BWMON_OFF) {
        line("PASS", "ebpf", NULL, "PROPHET_BWMON=off: bandwidth fitted from NCCL operations");
        return;
    }
    int priv =
        (doctor.cap_eff & sys_admin) || ((doctor.cap_eff & bpf) && (doctor.cap_eff & perfmon));
    if (priv)
        line("PASS", "ebpf", NULL,
             "privileged (CAP_BPF or CAP_SYS_ADMIN): the in-process probe can load");
    else
        line("WARN", "ebpf",
             "run `sudo prophet-bwmon --daemon` on the host (readers need no privilege)",
             "no CAP_BPF/CAP_SYS_ADMIN: the in-process probe cannot load");
    FILE *m = fopen("/proc/mounts", "re");
    while (m && fgets(l, sizeof(l), m)) {
        char dev[256], dir[512], type[64];
        if (sscanf(l, "%255s %511s %63s", dev, dir, type) == 3 && !strcmp(type, "bpf")) {
            snprintf(mnt, sizeof(mnt), "%s", dir);
            break;
        }
    }
    if (m)
        fclose(m);
    if (mnt[0])
        line("PASS", "ebpf", NULL, "bpffs mounted at %s", mnt);
    else
        line("WARN", "ebpf", "mount -t bpf bpf /sys/fs/bpf (as root; in a container: mount it in)",
             "no bpffs mounted: prophet-bwmon cannot pin its maps");
    struct stat st;
    char map[600];
    snprintf(map, sizeof(map), "%s/prophet_proc", cfg->bwmon_pin); /* the daemon's pin */
    if (stat(map, &st) == 0) {
        line("PASS", "ebpf", NULL, "prophet-bwmon's pinned maps at %s", cfg->bwmon_pin);
    } else {
        snprintf(fix, sizeof(fix), "sudo prophet-bwmon --daemon --pin %s", cfg->bwmon_pin);
        line(priv ? "PASS" : "WARN", "ebpf", priv ? NULL : fix,
             "no prophet-bwmon running (nothing pinned at PROPHET_BWMON_PIN=%s)%s", cfg->bwmon_pin,
             priv ? "; not needed: the probe loads in-process" : "");
    }
    if (doctor.preload[0]) {
        char plugin[PATH_MAX + 32];
        snprintf(plugin, sizeof(plugin), "%.*s/libprophet_bw.so",
                 (int)(strrchr(doctor.preload, '/') - doctor.preload), doctor.preload);
        void *h = dlopen("libbpf.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (access(plugin, R_OK) != 0)
            line("WARN", "ebpf", "install the eBPF plugin beside libprophet.so (cmake --install)",
                 "no %s: the preload reports \"no eBPF support\"", plugin);
        else if (!h)
            line("WARN", "ebpf", "install libbpf (apt-get install libbpf1)",
                 "libbpf.so.1 cannot be loaded: the plugin %s cannot load", plugin);
        else if (!doctor_bw_plugin_known(plugin))
            line("WARN", "ebpf", "install libprophet_bw.so of the same release as libprophet.so",
                 "the plugin %s exports no interface version the preload knows (%s): the "
                 "preload will not use it",
                 plugin, PROPHET_BW_PLUGIN_V1_SYMBOL);
        else
            line("PASS", "ebpf", NULL, "plugin %s and libbpf.so.1 load", plugin);
        if (h)
            dlclose(h);
    }
}

static void check_knobs(prophet_config_t *cfg)
{
    char errs[2048] = "";
    int bad = prophet_config_parse(cfg, doctor_getenv, NULL, errs, sizeof(errs));
    for (char *l = strtok(errs, "\n"); bad && l; l = strtok(NULL, "\n"))
        line("FAIL", "knobs", "correct or unset the variable", "%s",
             strncmp(l, "prophet: WARN ", 14) ? l : l + 14);
    static const char *const debug[] = {PROPHET_VALUES_debug(PROPHET_ENUM_NAME)};
    static const char *const bwmon[] = {PROPHET_VALUES_bwmon(PROPHET_ENUM_NAME)};
    char bw[64] = "fitted";
    if (cfg->bandwidth_Bps > 0)
        snprintf(bw, sizeof(bw), "%.0f B/s", cfg->bandwidth_Bps);
    line(cfg->disable ? "WARN" : "PASS", "knobs", cfg->disable ? "unset PROPHET_DISABLE" : NULL,
         "DISABLE=%d DEBUG=%s POLICY=%s GATE=%s LEARN_ITERS=%u REPLAN_ITERS=%u STALL_MS=%u "
         "BANDWIDTH=%s BWMON=%s LOG=%s",
         cfg->disable, debug[cfg->debug & 3],
         cfg->policy_set ? prophet_policy_name(cfg->policy) : "(best measured)",
         prophet_gate_name(cfg->gate), cfg->learn_iters, cfg->replan_iters, cfg->stall_ms, bw,
         bwmon[cfg->bwmon & 3], cfg->log_dir[0] ? cfg->log_dir : "(none)");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"pid", required_argument, 0, 'p'},
                                         {"help", no_argument, 0, 'h'},
                                         {"version", no_argument, 0, 'V'},
                                         {0, 0, 0, 0}};
    int c;
    long pid = 0;
    prophet_config_t cfg;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:p:h", opts, NULL)) != -1) {
        if (c == 'p') {
            if (prophet_cli_long_value(PROG, "--pid", optarg, 1, INT_MAX, "a process id", &pid))
                return PROPHET_CLI_EXIT_USAGE;
        } else if (c == 'h') {
            usage(stdout);
            return 0;
        } else if (c == 'V') {
            prophet_cli_version(PROG);
            return 0;
        } else {
            return prophet_cli_getopt_error(PROG, c, argv, opts);
        }
    }
    if (pid > 0 && optind < argc)
        return prophet_cli_usage_error(PROG, "give either --pid PID or a COMMAND, not both");
    if (pid == 0 && optind >= argc)
        return prophet_cli_usage_error(PROG, "give --pid PID or a COMMAND to run");
    doctor_find_preload();
    if (pid > 0) {
        doctor.pid = (int)pid;
        if (doctor_maps_read(doctor.pid, &doctor_proc) != 0) {
            fprintf(stderr, "prophet-doctor: pid %d: %s\n", doctor.pid,
                    errno == ENOENT ? "no such process" : strerror(errno));
            return 2;
        }
        doctor_snapshot(doctor.pid);
        printf("prophet-doctor: pid %d (%s)\n", doctor.pid, doctor.exe);
    } else {
        doctor.command = 1;
        doctor.argv0 = argv[optind];
        if (!doctor.preload[0]) {
            fprintf(stderr, "prophet-doctor: libprophet.so not found beside %s\n", argv[0]);
            return 2;
        }
        if (doctor_run(argv + optind) != 0 || !doctor_proc.n_objs) {
            fprintf(stderr, "prophet-doctor: could not run and look at %s\n", argv[optind]);
            return 2;
        }
        /* the knobs as the job gets them, not the dry mode's */
        doctor.n_env = 0;
        for (char **e = environ; *e && doctor.n_env < DOCTOR_MAX_ENV; e++)
            doctor.env[doctor.n_env++] = *e;
        printf("prophet-doctor: %s (dry run, pid %d, %s %d)\n", argv[optind], doctor.pid,
               WIFEXITED(doctor.exit_status) ? "exit status" : "signal",
               WIFEXITED(doctor.exit_status) ? WEXITSTATUS(doctor.exit_status)
                                             : WTERMSIG(doctor.exit_status));
    }
    check_preload();
    int nccl = check_nccl();
    check_calls(nccl);
    check_intercept();
    check_knobs(&cfg);
    check_cuda(&cfg);
    check_bpf(&cfg);
    printf("prophet-doctor: %s\n", doctor.fails ? "FAIL" : "no failure");
    return doctor.fails ? 1 : 0;
}
