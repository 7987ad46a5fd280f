/* log.writer: writes a synthetic job through the real prophet_log_* API from several threads, then
 * reads the log back and checks every record: the window, the content of each call (derived from
 * its iteration and index), that calls written + calls dropped = calls logged in the window, and
 * that the trace parses, each iteration's bytes_before (the job's step: the calls observed in
 * program order) and the trace's iteration spans named by step and its plan marker. The schema
 * check is done by validate_log.py on the same file.
 * usage: test_log_writer DIR [calls-per-iteration] */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prophet/log.h"

#define THREADS 4
#define ITERS 14
#define WIN_BEGIN 2
#define WIN_END 12
#define T0 1000000000ll

static uint32_t n_calls = 48;
static prophet_log_writer_t *writer;

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* The synthetic schedule: 4 calls per block, a 10 ms iteration, 100 us per call on the network. */
static prophet_log_call_t make_call(uint64_t it, uint32_t i)
{
    int64_t base = T0 + (int64_t)it * 10000;
    uint32_t block = i / 4;
    int64_t ready = base + 100 + 80 * (int64_t)i;
    int64_t launch = base + 100 + 80 * (int64_t)(block * 4 + 3) + 20;
    return (prophet_log_call_t){.iteration = it,
                                .index = i,
                                .comm_id = i % 2 ? 1 : 0,
                                .bytes = 4096ull * (i + 1),
                                .block = block,
                                .arrival_us = ready - 5,
                                .ready_us = ready,
                                .release_us = launch - 3,
                                .launch_us = launch,
                                .complete_us = launch + 300,
                                .deferred = 1};
}

static void *producer(void *arg)
{
    uint32_t t = (uint32_t)(uintptr_t)arg;
    for (uint64_t it = 0; it < ITERS; it++) {
        for (uint32_t i = t; i < n_calls; i += THREADS) {
            prophet_log_call_t c = make_call(it, i);
            prophet_log_call(writer, &c);
        }
        usleep(2000);
    }
    return NULL;
}

static uint64_t iteration_bytes(void)
{
    uint64_t b = 0;
    for (uint32_t i = 0; i < n_calls; i++)
        b += make_call(0, i).bytes;
    return b;
}

/* Program order (one thread, as the comm's calls are): every call observed, iteration starts. */
static void observe_all(void)
{
    for (uint64_t it = 0; it < ITERS; it++)
        for (uint32_t i = 0; i < n_calls; i++)
            prophet_log_observed(writer, it, make_call(it, i).bytes, i == 0);
}

static void log_cold(void)
{
    prophet_profile_t *p = calloc(1, sizeof(*p));
    prophet_plan_t *plan = calloc(1, sizeof(*plan));
    if (!p || !plan)
        exit(2);
    p->n_calls = n_calls;
    for (uint32_t i = 0; i < n_calls; i++) {
        prophet_log_call_t c = make_call(0, i);
        p->sig[i] = (prophet_call_sig_t){c.comm_id, c.bytes / 4, 7, 0, c.bytes};
        p->ready_us[i] = (double)(c.ready_us - T0);
        p->spread_us[i] = 3.5;
        p->priority[i] = n_calls - 1 - i;
    }
    p->n_steps = 2;
    p->steps[0] = (prophet_step_t){0, n_calls / 2 - 1, p->ready_us[n_calls / 2 - 1], 500};
    p->steps[1] = (prophet_step_t){n_calls / 2, n_calls - 1, p->ready_us[n_calls - 1], 0};
    p->iteration_us = 10000;
    p->forward_us = 2000;
    p->iterations_seen = 5;
    prophet_log_profile(writer, 5, p);
    prophet_net_t net = {.alpha_us = 20, .bandwidth_Bps = 1.25e9, .source = PROPHET_NET_DEFAULT};
    prophet_log_net(writer, T0, &net, -1);
    net.source = PROPHET_NET_FITTED;
    net.bandwidth_Bps = 1.1e9;
    prophet_log_net(writer, T0 + 50000, &net, 9.9e8);
    plan->version = 1;
    plan->policy = PROPHET_POLICY_PROPHET;
    plan->n_calls = n_calls;
    plan->n_blocks = n_calls / 4;
    for (uint32_t b = 0; b < plan->n_blocks; b++)
        plan->block_first[b] = 4 * b;
    plan->predicted_iteration_us = 9000;
    plan->sig_hash = 0xfeedface12345678ull;
    prophet_log_plan(writer, 7, plan);
    free(p);
    free(plan);
}

static void check_log(const char *path, uint64_t *calls_seen)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    CHECK(doc, "%s does not parse: %s (line %d)", path, je.text, je.line);
    if (!doc)
        return;
    CHECK(!strcmp(json_string_value(json_object_get(doc, "format")), PROPHET_LOG_FORMAT), "format");
    CHECK(json_is_true(json_object_get(doc, "complete")), "complete flag");
    json_t *recs = json_object_get(doc, "records"), *r;
    size_t i;
    int kinds[4] = {0};
    json_array_foreach(recs, i, r)
    {
        const char *kind = json_string_value(json_object_get(r, "kind"));
        if (!strcmp(kind, "profile"))
            kinds[0]++;
        else if (!strcmp(kind, "net"))
            kinds[1]++;
        else if (!strcmp(kind, "plan"))
            kinds[2]++;
        else if (!strcmp(kind, "iteration")) {
            kinds[3]++;
            uint64_t it = (uint64_t)json_integer_value(json_object_get(r, "iteration"));
            CHECK(it >= WIN_BEGIN && it < WIN_END, "iteration %llu outside the window",
                  (unsigned long long)it);
            json_t *before = json_object_get(r, "bytes_before");
            CHECK(json_is_integer(before) &&
                      (uint64_t)json_integer_value(before) == it * iteration_bytes(),
                  "iteration %llu: bytes_before %lld, want %llu", (unsigned long long)it,
                  before ? (long long)json_integer_value(before) : -1LL,
                  (unsigned long long)(it * iteration_bytes()));
            size_t j;
            json_t *c;
            json_array_foreach(json_object_get(r, "calls"), j, c)
            {
                uint32_t idx = (uint32_t)json_integer_value(json_object_get(c, "index"));
                prophet_log_call_t want = make_call(it, idx);
#define FIELD(k) json_integer_value(json_object_get(c, #k))
                CHECK(FIELD(bytes) == (json_int_t)want.bytes &&
                          FIELD(comm_id) == (json_int_t)want.comm_id &&
                          FIELD(block) == (json_int_t)want.block &&
                          FIELD(arrival_us) == want.arrival_us &&
                          FIELD(ready_us) == want.ready_us && FIELD(launch_us) == want.launch_us &&
                          FIELD(release_us) == want.release_us &&
                          FIELD(complete_us) == want.complete_us && FIELD(deferred) == 1,
                      "iteration %llu call %u: fields differ from what was logged",
                      (unsigned long long)it, idx);
                (*calls_seen)++;
            }
        }
    }
    CHECK(kinds[0] == 1 && kinds[1] == 2 && kinds[2] == 1, "cold records %d %d %d", kinds[0],
          kinds[1], kinds[2]);
    CHECK(kinds[3] >= WIN_END - WIN_BEGIN, "%d iteration records", kinds[3]);
    json_t *ctr = json_object_get(doc, "counters");
    uint64_t written = (uint64_t)json_integer_value(json_object_get(ctr, "calls_written"));
    uint64_t dropped = (uint64_t)json_integer_value(json_object_get(ctr, "calls_dropped"));
    CHECK(written == *calls_seen, "counters.calls_written %llu, records hold %llu",
          (unsigned long long)written, (unsigned long long)*calls_seen);
    CHECK(written + dropped == (uint64_t)(WIN_END - WIN_BEGIN) * n_calls,
          "written %llu + dropped %llu != %u logged in the window", (unsigned long long)written,
          (unsigned long long)dropped, (WIN_END - WIN_BEGIN) * n_calls);
    json_decref(doc);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_log_writer DIR [calls-per-iteration]\n");
        return 2;
    }
    if (argc > 2)
        n_calls = (uint32_t)atoi(argv[2]);
    if (n_calls < 8 || n_calls > PROPHET_MAX_CALLS || n_calls % 4) {
        fprintf(stderr, "calls-per-iteration: a multiple of 4 in [8, 4096]\n");
        return 2;
    }
    char why[256];
    prophet_log_meta_t meta = {.rank = 0,
                               .nranks = 2,
                               .pid = (int)getpid(),
                               .hostname = "test<host>&\"q\"",
                               .nccl_version = "2.28.9",
                               .policy = "prophet",
                               .gate = "block"};
    CHECK(prophet_log_open("/nonexistent/dir", &meta, 0, 1, 0, why, sizeof(why)) == NULL &&
              strstr(why, "/nonexistent/dir"),
          "open of a bad directory: '%s'", why);
    writer = prophet_log_open(argv[1], &meta, WIN_BEGIN, WIN_END, 1, why, sizeof(why));
    if (!writer) {
        fprintf(stderr, "FAIL prophet_log_open: %s\n", why);
        return 1;
    }
    log_cold();
    observe_all();
    pthread_t th[THREADS];
    for (uintptr_t t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, producer, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    prophet_log_close(writer);
    prophet_log_close(NULL);

    char path[4096];
    uint64_t seen = 0;
    snprintf(path, sizeof(path), "%s/prophet-rank0.json", argv[1]);
    check_log(path, &seen);
    snprintf(path, sizeof(path), "%s/prophet-rank0.trace.json", argv[1]);
    json_error_t je;
    json_t *tr = json_load_file(path, 0, &je);
    CHECK(tr && json_is_array(json_object_get(tr, "traceEvents")), "trace %s: %s", path,
          tr ? "no traceEvents" : je.text);
    /* the iteration spans are named by the job's step, the plan has its marker */
    size_t k;
    json_t *ev;
    int spans = 0, markers = 0;
    json_array_foreach(tr ? json_object_get(tr, "traceEvents") : NULL, k, ev)
    {
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        json_t *args = json_object_get(ev, "args");
        if (cat && !strcmp(cat, "iteration")) {
            char want[64];
            snprintf(want, sizeof(want), "step %lld",
                     (long long)json_integer_value(json_object_get(args, "iteration")));
            CHECK(!strcmp(json_string_value(json_object_get(ev, "name")), want),
                  "trace: span %s, want %s", json_string_value(json_object_get(ev, "name")), want);
            spans++;
        }
        if (cat && !strcmp(cat, "plan")) {
            CHECK(!strcmp(json_string_value(json_object_get(args, "mark")), "fixed") &&
                      json_integer_value(json_object_get(args, "from_iteration")) == 7,
                  "trace: plan marker %s", json_string_value(json_object_get(ev, "name")));
            markers++;
        }
    }
    CHECK(spans >= WIN_END - WIN_BEGIN && markers == 1,
          "trace: %d iteration spans, %d plan markers", spans, markers);
    json_decref(tr);
    if (failures) {
        fprintf(stderr, "log.writer: %d failures\n", failures);
        return 1;
    }
    printf("log.writer: ok (%llu calls written from %d threads)\n", (unsigned long long)seen,
           THREADS);
    return 0;
}
