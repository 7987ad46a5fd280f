/* log.hot_path: the cost of prophet_log_call() on the caller's thread, in nanoseconds per call,
 * for calls inside and outside the logged window, from 1 and 4 threads at once. Fails when a call
 * inside the window costs more than LIMIT_NS (default 2000: a loose bound for loaded CI machines;
 * the typical figure is printed).
 * usage: bench_log_call DIR [LIMIT_NS] */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "prophet/log.h"

#define CALLS 40000 /* per thread */
#define BATCH 1024  /* calls per "iteration"; then a pause that lets the writer drain */

static prophet_log_writer_t *w;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

typedef struct job {
    uint64_t iteration;
    uint32_t batch; /* calls between pauses */
    double ns_per_call;
} job_t;

static void *run(void *arg)
{
    job_t *j = arg;
    prophet_log_call_t c = {.iteration = j->iteration,
                            .bytes = 4096,
                            .arrival_us = 1,
                            .ready_us = 2,
                            .launch_us = 3,
                            .complete_us = 4};
    double t0 = now_ns(), slept = 0;
    for (uint32_t i = 0; i < CALLS; i++) {
        c.index = i % j->batch;
        c.iteration = j->iteration + i / j->batch;
        prophet_log_call(w, &c);
        if (i % j->batch ==
            j->batch - 1) { /* let the writer drain, like the gaps of a real iteration */
            double s0 = now_ns();
            usleep(10000);
            slept += now_ns() - s0;
        }
    }
    j->ns_per_call = (now_ns() - t0 - slept) / CALLS;
    return NULL;
}

static double measure(int threads, uint64_t iteration)
{
    pthread_t th[8];
    job_t jobs[8];
    double sum = 0;
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job_t){.iteration = iteration, .batch = BATCH / (uint32_t)threads};
        pthread_create(&th[t], NULL, run, &jobs[t]);
    }
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        sum += jobs[t].ns_per_call;
    }
    return sum / threads;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_log_call DIR [LIMIT_NS]\n");
        return 2;
    }
    double limit = argc > 2 ? atof(argv[2]) : 2000;
    char why[256];
    prophet_log_meta_t meta = {.rank = 0,
                               .nranks = 1,
                               .pid = (int)getpid(),
                               .hostname = "bench",
                               .nccl_version = "2.28.9",
                               .policy = "prophet",
                               .gate = "call"};
    w = prophet_log_open(argv[1], &meta, 0, 1000000, 0, why, sizeof(why));
    if (!w) {
        fprintf(stderr, "bench_log_call: %s\n", why);
        return 1;
    }
    double in1 = measure(1, 0), in4 = measure(4, 100), out1 = measure(1, 2000000);
    prophet_log_close(w);
    char path[4096];
    snprintf(path, sizeof(path), "%s/prophet-rank0.json", argv[1]);
    json_t *doc = json_load_file(path, 0, NULL);
    json_int_t dropped =
        json_integer_value(json_object_get(json_object_get(doc, "counters"), "calls_dropped"));
    json_int_t written =
        json_integer_value(json_object_get(json_object_get(doc, "counters"), "calls_written"));
    printf("prophet_log_call: %.1f ns/call in the window (1 thread), %.1f ns/call (4 threads at "
           "once), %.1f ns/call outside the window; %lld written, %lld dropped\n",
           in1, in4, out1, (long long)written, (long long)dropped);
    json_decref(doc);
    if (written + dropped != 5 * (json_int_t)CALLS) {
        printf("FAIL: written + dropped != %d calls logged in the window\n", 5 * CALLS);
        return 1;
    }
    if (in1 > limit || in4 > limit * 4) {
        printf("FAIL: above the limit of %.0f ns\n", limit);
        return 1;
    }
    return 0;
}
