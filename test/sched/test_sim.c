/* Simulator: hand-computed iteration times for both wait modes, the ring bandwidth, and the
 * prophet-profile/1 reader (good files, the repository's profiles, and refused inputs). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "prophet/sched.h"

static prophet_profile_t prof;
static prophet_plan_t plan;

static int load_file(const char *path)
{
    static char text[1 << 20];
    char err[200] = "";
    FILE *f = fopen(path, "rb");
    size_t n;

    if (!f)
        return -1;
    n = fread(text, 1, sizeof(text), f);
    fclose(f);
    CHECKF(prophet_profile_from_json(text, n, &prof, err, sizeof(err)) == 0, "%s: %s", path, err);
    return 0;
}

static int load_text(const char *text, char *err, size_t errlen)
{
    return prophet_profile_from_json(text, strlen(text), &prof, err, errlen);
}

int main(int argc, char **argv)
{
    prophet_net_t net = {.alpha_us = 10, .bandwidth_Bps = 1e6, .source = PROPHET_NET_FIXED};
    prophet_sim_opts_t so = {.ranks = 2, .wait_per_layer = 0};
    prophet_sim_result_t r;
    char err[200];
    const char *names[] = {"bert_base", "mobilenet_v2", "resnet50", "vgg16"};

    /* 1. Three gradients of 100, 200, 300 bytes (1 byte = 1 us), ready at 0, 50, 400;
     *    forward 1000, backward 450. Passthrough: [0,110] [110,320] [400,710] -> 710 + 1000. */
    CHECK(load_text("{\"format\":\"prophet-profile/1\",\"forward_us\":1000,\"backward_us\":450,"
                    "\"tensors\":[{\"bytes\":100,\"ready_us\":0},{\"bytes\":200,\"ready_us\":50},"
                    "{\"bytes\":300,\"ready_us\":400}]}",
                    err, sizeof(err)) == 0);
    CHECK(prof.n_calls == 3 && prof.priority[0] == 2 && prof.priority[2] == 0);
    CHECK(prof.backward_us == 450 && prof.forward_us == 1000);
    memset(&plan, 0, sizeof(plan));
    plan.n_calls = 3;
    plan.n_blocks = 3;
    plan.block_first[1] = 1;
    plan.block_first[2] = 2;
    CHECK(prophet_sim_run(&so, &prof, &net, &plan, &r) == 0);
    CHECK(fabs(r.iteration_us - 1710) < 1e-9 && fabs(r.comm_busy_us - 630) < 1e-9 &&
          r.n_blocks == 3);
    /* one block: starts at 400, lasts 610 -> 1010 + 1000 */
    plan.n_blocks = 1;
    CHECK(prophet_sim_run(&so, &prof, &net, &plan, &r) == 0);
    CHECK(fabs(r.iteration_us - 2010) < 1e-9);
    /* per-layer wait with priority 0 last: the same as waiting for all */
    plan.n_blocks = 3;
    so.wait_per_layer = 1;
    CHECK(prophet_sim_run(&so, &prof, &net, &plan, &r) == 0);
    CHECK(fabs(r.iteration_us - 1710) < 1e-9);
    /* per-layer with the urgent gradient first: forward shares 0/400, 50/400, 350/400 of 1000;
     * gradient 0 (priority 0) ends at 110, so its slice (0 us) runs at max(450, 110); then
     * priority 1 = call 1 (ends 320) runs 450..575; priority 2 = call 2 (ends 710) 710..1585 */
    CHECK(load_text("{\"format\":\"prophet-profile/1\",\"forward_us\":1000,\"backward_us\":450,"
                    "\"tensors\":[{\"bytes\":100,\"ready_us\":0,\"priority\":0},"
                    "{\"bytes\":200,\"ready_us\":50,\"priority\":1},"
                    "{\"bytes\":300,\"ready_us\":400,\"priority\":2}]}",
                    err, sizeof(err)) == 0);
    CHECK(prophet_sim_run(&so, &prof, &net, &plan, &r) == 0);
    CHECKF(fabs(r.iteration_us - (710 + 1000.0 * 350 / 400)) < 1e-6, "per-layer %f",
           r.iteration_us);
    so.wait_per_layer = 0;
    CHECK(prophet_sim_run(&so, &prof, &net, &plan, &r) == 0);
    CHECK(fabs(r.iteration_us - 1710) < 1e-9);
    /* a plan for another profile is refused */
    plan.n_calls = 4;
    CHECK(prophet_sim_run(&so, &prof, &net, &plan, &r) == -EINVAL);

    /* 2. Ring all-reduce: 2 (N-1)/N of the payload crosses each link. */
    CHECK(fabs(prophet_ring_algbw(1.25e9, 8) - 1.25e9 * 8 / 14) < 1e-3);
    CHECK(prophet_ring_algbw(1.25e9, 2) == 1.25e9);
    CHECK(prophet_ring_algbw(1.25e9, 1) == 1.25e9);

    /* 3. The repository's profiles load, ready times ascending, steps cover all calls. */
    for (int i = 0; argc > 1 && i < 4; i++) {
        char path[1024];

        snprintf(path, sizeof(path), "%s/%s.json", argv[1], names[i]);
        CHECKF(load_file(path) == 0, "cannot open %s", path);
        CHECK(prof.n_calls > 10 && prof.forward_us > 0 && prof.backward_us > 0);
        CHECK(prof.n_steps >= 1 && prof.steps[0].first == 0 &&
              prof.steps[prof.n_steps - 1].last == prof.n_calls - 1);
    }

    /* 4. Refused inputs, each with a reason. */
    {
        const char *bad[] = {
            "not json",
            "{\"format\":\"prophet-profile/2\",\"forward_us\":1,\"tensors\":[{\"bytes\":1,"
            "\"ready_us\":0}]}",
            "{\"format\":\"prophet-profile/1\",\"forward_us\":1,\"tensors\":[]}",
            "{\"format\":\"prophet-profile/1\",\"forward_us\":1,\"tensors\":[{\"bytes\":0,"
            "\"ready_us\":0}]}",
            "{\"format\":\"prophet-profile/1\",\"forward_us\":1,\"tensors\":[{\"bytes\":4}]}",
            "{\"format\":\"prophet-profile/1\",\"tensors\":[{\"bytes\":4,\"ready_us\":1}]}",
            "{\"format\":\"prophet-profile/1\",\"forward_us\":1,\"tensors\":[{\"bytes\":4,"
            "\"ready_us\":1,\"priority\":0},{\"bytes\":4,\"ready_us\":2,\"priority\":0}]}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            err[0] = 0;
            CHECKF(load_text(bad[i], err, sizeof(err)) == -EINVAL, "bad input %zu accepted", i);
            CHECK(err[0] != 0 && strchr(err, '\n') == NULL);
        }
    }
    printf("sim: ok\n");
    return 0;
}
