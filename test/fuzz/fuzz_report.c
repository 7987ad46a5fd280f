/* Fuzz target: prophet-report's log reader (tools/report_load.c) and the summary, advice and job
 * summary built from what it accepts. Invariants: never crashes; a rejected log leaves a one-line
 * error. */
#define _GNU_SOURCE
#include "../../tools/report.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    rep_log_t log;
    int fd = memfd_create("prophet-fuzz-log", 0);

    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    for (int allow = 0; allow <= 1; allow++) {
        memset(&log, 0, sizeof(log));
        err[0] = '\0';
        if (rep_load(path, allow, &log, err, sizeof(err)) != 0) {
            if (err[0] == '\0' || strchr(err, '\n'))
                abort(); /* a rejection must say why, in one line */
            continue;
        }
        rep_summary_t sum;
        if (rep_summarize(&log, &sum) == 0) {
            rep_advice_t adv;
            rep_log_t *one = &log;
            rep_job_t job;
            rep_advise(&log, &sum, &adv);
            if (rep_job_build(&one, &sum, 1, &job) == 0)
                rep_job_free(&job);
        }
        rep_free(&log);
    }
    close(fd);
    return 0;
}
