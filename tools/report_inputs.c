/* prophet-report's arguments: a DIR stands for the prophet-rank<R>.json logs in it; Chrome traces
 * (*.trace.json, written next to the logs with PROPHET_TRACE=1) are set aside; a DIR without a log
 * is a problem of its own. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int push(char ***v, size_t *n, const char *s)
{
    char *copy = strdup(s);
    char **nv = copy ? realloc(*v, (*n + 1) * sizeof(**v)) : NULL;
    if (!nv) {
        free(copy);
        return -1;
    }
    *v = nv;
    nv[(*n)++] = copy;
    return 0;
}

void rep_inputs_problem(rep_inputs_t *in, const char *path, const char *error)
{
    fprintf(stderr, "prophet-report: %s: %s\n", path, error);
    rep_problem_t *v = realloc(in->problems, (in->n_problems + 1) * sizeof(*v));
    if (!v)
        return;
    in->problems = v;
    v[in->n_problems].path = strdup(path);
    v[in->n_problems].error = strdup(error);
    in->n_problems++;
}

/* A log's name: prophet-rank<digits>.json; *r its rank. */
static int log_name(const char *name, long *r)
{
    char *end;
    if (strncmp(name, "prophet-rank", 12) != 0 || !(name[12] >= '0' && name[12] <= '9'))
        return 0;
    *r = strtol(name + 12, &end, 10);
    return strcmp(end, ".json") == 0;
}

typedef struct entry {
    long rank;
    char *path;
} entry_t;

static int cmp_entry(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    return x->rank < y->rank ? -1 : (x->rank > y->rank);
}

static int expand_dir(const char *dir, rep_inputs_t *in)
{
    DIR *d = opendir(dir);
    entry_t *e = NULL;
    size_t n = 0;
    int rc = 0, traces = 0;
    if (!d) {
        char why[128];
        snprintf(why, sizeof(why), "cannot read the directory: %s", strerror(errno));
        rep_inputs_problem(in, dir, why);
        return 0;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        long r;
        char path[4096];
        if (ends_with(de->d_name, ".trace.json")) {
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            if (push(&in->traces, &in->n_traces, path))
                rc = -1;
            traces++;
            continue;
        }
        if (!log_name(de->d_name, &r))
            continue;
        if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
            continue;
        entry_t *v = realloc(e, (n + 1) * sizeof(*v));
        if (!v) {
            rc = -1;
            break;
        }
        e = v;
        e[n].rank = r;
        e[n++].path = strdup(path);
    }
    closedir(d);
    qsort(e, n, sizeof(*e), cmp_entry);
    for (size_t i = 0; i < n; i++) {
        if (!e[i].path || push(&in->logs, &in->n_logs, e[i].path))
            rc = -1;
        free(e[i].path);
    }
    free(e);
    if (!rc && n == 0)
        rep_inputs_problem(in, dir,
                           traces ? "no prophet-rank<R>.json log in the directory (only traces)"
                                  : "no prophet-rank<R>.json log in the directory");
    return rc;
}

int rep_inputs_expand(char *const *args, size_t n, rep_inputs_t *in)
{
    memset(in, 0, sizeof(*in));
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        int rc;
        if (stat(args[i], &st) == 0 && S_ISDIR(st.st_mode))
            rc = expand_dir(args[i], in);
        else if (ends_with(args[i], ".trace.json"))
            rc = push(&in->traces, &in->n_traces, args[i]);
        else
            rc = push(&in->logs, &in->n_logs, args[i]);
        if (rc)
            return -1;
    }
    return 0;
}

void rep_inputs_free(rep_inputs_t *in)
{
    for (size_t i = 0; i < in->n_logs; i++)
        free(in->logs[i]);
    for (size_t i = 0; i < in->n_traces; i++)
        free(in->traces[i]);
    for (size_t i = 0; i < in->n_problems; i++) {
        free(in->problems[i].path);
        free(in->problems[i].error);
    }
    free(in->logs);
    free(in->traces);
    free(in->problems);
    memset(in, 0, sizeof(*in));
}
