/* The closed loop as one unit (sched/closed_loop.c), driven on traces: each file in
 * test/sched/loop_traces describes a job (every candidate's iteration time on a quiet host), the
 * host and the network it runs on (noise, constant or bursty load, stalls, extra calls, a time
 * drift, a network that changes), and what the loop must do (the plan kept, the share of
 * iterations spent on trials, the rounds, never a kept plan slower than the one before it). The
 * driver runs the unit as the preload's rank 0 does: a plan agreed at iteration A is in force from
 * A + 2; the agreement's own iteration, a measurement iteration (every 8th under a trial plan,
 * every 32nd under the kept one) and an iteration with an extra call are not samples; an
 * iteration's GPU time reaches the loop two iterations later.
 *
 * Trace lines (# starts a comment):
 *   iters N | seed N | noise SD (relative, per iteration) | first_plan ITER
 *   time CAND US                  a candidate's iteration time from the start
 *   set ITER CAND US              ... from iteration ITER on (a network or a job that changed)
 *   load FROM TO FACTOR           every iteration in [FROM, TO) that much slower
 *   bursty FROM TO ON OFF FACTOR  in [FROM, TO): ON iterations slower, then OFF at speed, ...
 *   stall EVERY FACTOR            every EVERY-th iteration that much slower (one outlier)
 *   extra EVERY                   every EVERY-th iteration carries an extra call of the job
 *   net BPS | net_at ITER BPS   the network's bandwidth the loop is handed (none if never given)
 *   backward US EVERY HOLD LOAD   the profile's backward span (800 us at every sample if never
 *                                 given): a reading learned at every EVERY-th iteration, seen for
 *                                 HOLD iterations, none (0) between; LOAD 1: it slows with the
 *                                 host's load at that iteration (the emulated GPU's compute is CPU
 *                                 time, so a burst of load lengthens the span it reads)
 *   backward_at ITER US           ... from iteration ITER on, a span of US (a job that changed)
 *   backward_noise SD             each reading off by that much (relative), drawn per reading
 *   expect kept CAND[,CAND...]    the plan kept at the end
 *   expect kept_at ITER CAND[,..] the plan kept (in force) at ITER
 *   expect trial_share_max F      iterations under a trial plan other than the kept one / iters
 *   expect rounds_max N | expect rounds_min N
 *   expect full_rounds_max N | expect full_rounds_min N
 *                                 rounds begun with a first pass over every candidate (the first
 *                                 one included; a re-time of the incumbent is not one)
 *   expect agreements_max N       plan broadcasts in the whole run
 *   expect never_slower           no choice kept a plan slower (in truth) than the incumbent by
 *                                 more than PROPHET_TRIAL_TIE */
#include <dirent.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "prophet/sched.h"

#define MAX_EV 64
#define MAX_ITERS 20000

typedef struct {
    uint32_t iter, cand;
    double us;
} set_ev_t;

typedef struct {
    uint32_t from, to, on, off;
    double factor;
} load_ev_t;

typedef struct {
    char name[512];
    uint32_t iters, first_plan, extra_every, stall_every;
    uint64_t seed;
    double noise, stall_factor;
    double base[PROPHET_CAND_COUNT];
    set_ev_t sets[MAX_EV];
    uint32_t n_sets;
    load_ev_t loads[MAX_EV];
    uint32_t n_loads;
    double net, backward, backward_noise;
    uint32_t backward_every, backward_hold, backward_load;
    set_ev_t nets[MAX_EV], backwards[MAX_EV];
    uint32_t n_nets, n_backwards;
    /* expectations */
    uint32_t kept_mask, kept_at_iter[MAX_EV], kept_at_mask[MAX_EV], n_kept_at;
    double trial_share_max;
    int rounds_max, rounds_min, never_slower, agreements_max, full_rounds_max, full_rounds_min;
} trace_t;

static uint32_t cand_of(const char *name)
{
    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++)
        if (strcmp(prophet_cand_name(c), name) == 0)
            return c;
    return PROPHET_CAND_NONE;
}

/* "a,b,c" -> bit mask of candidates; 0 on an unknown name. */
static uint32_t cand_mask(char *list)
{
    uint32_t m = 0;

    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        uint32_t c = cand_of(tok);
        if (c == PROPHET_CAND_NONE)
            return 0;
        m |= 1u << c;
    }
    return m;
}

/* Parses one trace file: 0, or -1 with a message. */
static int trace_load(const char *path, trace_t *t)
{
    char line[256], a[64], b[128];
    FILE *f = fopen(path, "r");
    int ln = 0;

    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
    t->iters = 1000;
    t->first_plan = 20;
    t->seed = 1;
    t->net = -1;
    t->trial_share_max = -1;
    t->rounds_max = t->rounds_min = t->agreements_max = t->full_rounds_max = t->full_rounds_min =
        -1;
    t->backward = 800;
    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++)
        t->base[c] = -1;
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        char *hash = strchr(line, '#');
        unsigned u1, u2, u3, u4;
        double d1;
        int ok = 1;

        ln++;
        if (hash)
            *hash = 0;
        if (sscanf(line, "%63s", a) != 1)
            continue;
        if (!strcmp(a, "iters"))
            ok = sscanf(line, "%*s %u", &t->iters) == 1 && t->iters <= MAX_ITERS;
        else if (!strcmp(a, "seed"))
            ok = sscanf(line, "%*s %u", &u1) == 1 && (t->seed = u1, 1);
        else if (!strcmp(a, "noise"))
            ok = sscanf(line, "%*s %lf", &t->noise) == 1;
        else if (!strcmp(a, "first_plan"))
            ok = sscanf(line, "%*s %u", &t->first_plan) == 1;
        else if (!strcmp(a, "time"))
            ok = sscanf(line, "%*s %127s %lf", b, &d1) == 2 && cand_of(b) != PROPHET_CAND_NONE &&
                 (t->base[cand_of(b)] = d1, 1);
        else if (!strcmp(a, "set"))
            ok = t->n_sets < MAX_EV && sscanf(line, "%*s %u %127s %lf", &u1, b, &d1) == 3 &&
                 cand_of(b) != PROPHET_CAND_NONE &&
                 (t->sets[t->n_sets++] = (set_ev_t){u1, cand_of(b), d1}, 1);
        else if (!strcmp(a, "load"))
            ok = t->n_loads < MAX_EV && sscanf(line, "%*s %u %u %lf", &u1, &u2, &d1) == 3 &&
                 (t->loads[t->n_loads++] = (load_ev_t){u1, u2, 1, 0, d1}, 1);
        else if (!strcmp(a, "bursty"))
            ok = t->n_loads < MAX_EV &&
                 sscanf(line, "%*s %u %u %u %u %lf", &u1, &u2, &u3, &u4, &d1) == 5 && u3 > 0 &&
                 (t->loads[t->n_loads++] = (load_ev_t){u1, u2, u3, u4, d1}, 1);
        else if (!strcmp(a, "stall"))
            ok = sscanf(line, "%*s %u %lf", &t->stall_every, &t->stall_factor) == 2;
        else if (!strcmp(a, "extra"))
            ok = sscanf(line, "%*s %u", &t->extra_every) == 1;
        else if (!strcmp(a, "net"))
            ok = sscanf(line, "%*s %lf", &t->net) == 1;
        else if (!strcmp(a, "backward"))
            ok = sscanf(line, "%*s %lf %u %u %u", &t->backward, &t->backward_every,
                        &t->backward_hold, &t->backward_load) == 4 &&
                 t->backward > 0 && t->backward_every > 0;
        else if (!strcmp(a, "backward_noise"))
            ok = sscanf(line, "%*s %lf", &t->backward_noise) == 1;
        else if (!strcmp(a, "backward_at"))
            ok = t->n_backwards < MAX_EV && sscanf(line, "%*s %u %lf", &u1, &d1) == 2 && d1 > 0 &&
                 (t->backwards[t->n_backwards++] = (set_ev_t){u1, 0, d1}, 1);
        else if (!strcmp(a, "net_at"))
            ok = t->n_nets < MAX_EV && sscanf(line, "%*s %u %lf", &u1, &d1) == 2 &&
                 (t->nets[t->n_nets++] = (set_ev_t){u1, 0, d1}, 1);
        else if (!strcmp(a, "expect")) {
            char what[64], list[128];
            ok = sscanf(line, "%*s %63s", what) == 1;
            if (ok && !strcmp(what, "kept"))
                ok = sscanf(line, "%*s %*s %127s", list) == 1 && (t->kept_mask = cand_mask(list));
            else if (ok && !strcmp(what, "kept_at"))
                ok = t->n_kept_at < MAX_EV && sscanf(line, "%*s %*s %u %127s", &u1, list) == 2 &&
                     (t->kept_at_iter[t->n_kept_at] = u1,
                      (t->kept_at_mask[t->n_kept_at++] = cand_mask(list)) != 0);
            else if (ok && !strcmp(what, "trial_share_max"))
                ok = sscanf(line, "%*s %*s %lf", &t->trial_share_max) == 1;
            else if (ok && !strcmp(what, "rounds_max"))
                ok = sscanf(line, "%*s %*s %d", &t->rounds_max) == 1;
            else if (ok && !strcmp(what, "rounds_min"))
                ok = sscanf(line, "%*s %*s %d", &t->rounds_min) == 1;
            else if (ok && !strcmp(what, "full_rounds_max"))
                ok = sscanf(line, "%*s %*s %d", &t->full_rounds_max) == 1;
            else if (ok && !strcmp(what, "full_rounds_min"))
                ok = sscanf(line, "%*s %*s %d", &t->full_rounds_min) == 1;
            else if (ok && !strcmp(what, "agreements_max"))
                ok = sscanf(line, "%*s %*s %d", &t->agreements_max) == 1;
            else if (ok && !strcmp(what, "never_slower"))
                t->never_slower = 1;
            else
                ok = 0;
        } else
            ok = 0;
        if (!ok) {
            fprintf(stderr, "%s:%d: bad line: %s", path, ln, line);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    for (uint32_t c = 0; c < PROPHET_CAND_COUNT; c++)
        if (t->base[c] <= 0) {
            fprintf(stderr, "%s: no time for %s\n", path, prophet_cand_name(c));
            return -1;
        }
    return 0;
}

/* A candidate's true iteration time at iteration i, before noise and load. */
static double true_us(const trace_t *t, uint32_t cand, uint32_t i)
{
    double us = t->base[cand];

    for (uint32_t k = 0; k < t->n_sets; k++)
        if (t->sets[k].cand == cand && t->sets[k].iter <= i)
            us = t->sets[k].us;
    return us;
}

static double load_factor(const trace_t *t, uint32_t i)
{
    double f = 1;

    for (uint32_t k = 0; k < t->n_loads; k++) {
        const load_ev_t *l = &t->loads[k];
        if (i >= l->from && i < l->to && (i - l->from) % (l->on + l->off) < l->on)
            f *= l->factor;
    }
    if (t->stall_every && i % t->stall_every == t->stall_every - 1)
        f *= t->stall_factor;
    return f;
}

static double net_at(const trace_t *t, uint32_t i)
{
    double p = t->net;

    for (uint32_t k = 0; k < t->n_nets; k++)
        if (t->nets[k].iter <= i)
            p = t->nets[k].us;
    return p;
}

static double gauss(uint64_t *rng)
{
    double u1 = test_uniform(rng), u2 = test_uniform(rng);

    return sqrt(-2 * log(u1 > 1e-12 ? u1 : 1e-12)) * cos(2 * M_PI * u2);
}

/* The profile's backward span the loop is handed at iteration i (0: no reading). */
static double backward_at(const trace_t *t, uint32_t i)
{
    double us = t->backward;
    uint32_t m;

    if (!t->backward_every)
        return us;
    m = i - i % t->backward_every;
    if (i - m >= t->backward_hold)
        return 0;
    for (uint32_t k = 0; k < t->n_backwards; k++)
        if (t->backwards[k].iter <= m)
            us = t->backwards[k].us;
    if (t->backward_noise > 0) { /* one draw per reading, the same at each of its samples */
        uint64_t rng = (t->seed * 1000003u + m) | 1;
        for (int k = 0; k < 8; k++) /* away from the seed's neighbours */
            test_rand(&rng);
        double f = 1 + t->backward_noise * gauss(&rng);
        us *= f > 0.1 ? f : 0.1;
    }
    /* each reading is a new measurement: never the very span of the one before */
    return us * (t->backward_load ? load_factor(t, m) : 1) + (m / t->backward_every) % 2;
}

static prophet_profile_t prof;

/* Runs the unit on trace t: 0 when every expectation holds. */
static int trace_run(const trace_t *t)
{
    static struct {
        uint32_t cand;
        double us;
        int clean;
    } rec[MAX_ITERS];
    prophet_planner_opts_t po = {
        .fusion_bytes = 64u << 20, .cycle_us = 1000, .bucket_bytes = 25u << 20, .ranks = 4};
    prophet_net_t net = {.alpha_us = 100, .bandwidth_Bps = 1.25e8, .source = PROPHET_NET_FIXED};
    prophet_closed_loop_t *l = prophet_closed_loop_new();
    prophet_plan_t *plan = malloc(sizeof(*plan));
    uint32_t agree = t->first_plan, in_force = PROPHET_CAND_NONE, next = PROPHET_CAND_NONE;
    uint32_t phase = PROPHET_TRIAL_OFF, next_phase = PROPHET_TRIAL_OFF, last_phase = 0;
    /* before any choice the job runs passthrough (as while the preload learned): the incumbent
     * the trial share counts against, as the preload's trial_iters= does */
    uint32_t kept = PROPHET_CAND_PASSTHROUGH, switch_at = 0, trial_iters = 0, iters_on = 0;
    int rounds = 0, agreements = 0, full_rounds = 0;
    uint32_t kept_at[MAX_EV];
    uint64_t rng = t->seed;
    int fails = 0, rebased = 0, restarts = 0;

    CHECK(l && plan);
    for (uint32_t k = 0; k < MAX_EV; k++)
        kept_at[k] = PROPHET_CAND_NONE;
    for (uint32_t i = 0; i < t->iters; i++) {
        int restart;
        if (i >= 2 && rec[i - 2].clean)
            prophet_closed_loop_sample(l, rec[i - 2].cand, rec[i - 2].us, net_at(t, i - 2),
                                       backward_at(t, i));
        const char *why = prophet_closed_loop_drift(l, &restart);
        if (why) {
            printf("  %s: iteration %u: %s drifted (%s)\n", t->name, i, why,
                   restart ? "trials again" : "rebased");
            restarts += restart;
            rebased += !restart;
        }
        if (i == agree) {
            prophet_loop_events_t ev;
            CHECKF(prophet_closed_loop_plan(l, &po, &prof, &net, plan, &ev) == 0,
                   "%s: no plan at iteration %u", t->name, i);
            agreements++;
            full_rounds += ev.round_begun && !ev.retime;
            next = plan->trial.candidate;
            next_phase = plan->trial.phase;
            switch_at = i + 2;
            agree = i + plan->trial.next_in;
            if (next_phase == PROPHET_TRIAL_CHOSEN && last_phase == PROPHET_TRIAL_RUNNING) {
                uint32_t inc = prophet_closed_loop_trials(l)->kept.before;
                rounds++;
                printf("  %s: iteration %u: round %u kept %s (%u us)%s%s\n", t->name, i,
                       plan->trial.round, prophet_cand_name(next), plan->trial.chosen_us,
                       inc < PROPHET_CAND_COUNT ? "; incumbent " : "",
                       inc < PROPHET_CAND_COUNT ? prophet_cand_name(inc) : "");
                if (t->never_slower && inc < PROPHET_CAND_COUNT &&
                    true_us(t, next, i) > true_us(t, inc, i) * (1 + PROPHET_TRIAL_TIE)) {
                    printf("FAIL: %s: round %u kept %s (%.0f us in truth), slower than the "
                           "incumbent %s (%.0f us)\n",
                           t->name, plan->trial.round, prophet_cand_name(next), true_us(t, next, i),
                           prophet_cand_name(inc), true_us(t, inc, i));
                    fails++;
                }
            }
            last_phase = next_phase;
        }
        if (i == switch_at) {
            in_force = next;
            phase = next_phase;
            if (phase == PROPHET_TRIAL_CHOSEN)
                kept = in_force;
        }
        for (uint32_t k = 0; k < t->n_kept_at; k++)
            if (t->kept_at_iter[k] == i)
                kept_at[k] = phase == PROPHET_TRIAL_CHOSEN ? in_force : PROPHET_CAND_NONE;
        rec[i].cand = in_force;
        rec[i].us = 0;
        rec[i].clean = 0;
        if (in_force == PROPHET_CAND_NONE)
            continue;
        iters_on++;
        trial_iters += phase == PROPHET_TRIAL_RUNNING && in_force != kept;
        double f = 1 + t->noise * gauss(&rng);
        rec[i].us = true_us(t, in_force, i) * load_factor(t, i) * (f > 0.1 ? f : 0.1);
        rec[i].clean = i != switch_at - 2 && i % (phase == PROPHET_TRIAL_CHOSEN ? 32 : 8) != 0 &&
                       !(t->extra_every && i % t->extra_every == 0);
    }
    double share = iters_on ? (double)trial_iters / t->iters : 0;
    printf("  %s: kept %s at the end, %d round(s) (%d full), %d restart(s), %d rebase(s), "
           "%d agreement(s), trial share %.1f%%\n",
           t->name, prophet_cand_name(kept), rounds, full_rounds, restarts, rebased, agreements,
           100 * share);
    if ((t->full_rounds_max >= 0 && full_rounds > t->full_rounds_max) ||
        (t->full_rounds_min >= 0 && full_rounds < t->full_rounds_min)) {
        printf("FAIL: %s: %d full round(s) (bounds %d..%d)\n", t->name, full_rounds,
               t->full_rounds_min, t->full_rounds_max);
        fails++;
    }
    if (t->agreements_max >= 0 && agreements > t->agreements_max) {
        printf("FAIL: %s: %d agreements > %d\n", t->name, agreements, t->agreements_max);
        fails++;
    }
    if (t->kept_mask && !(kept < PROPHET_CAND_COUNT && (t->kept_mask & (1u << kept)))) {
        printf("FAIL: %s: kept %s at the end\n", t->name, prophet_cand_name(kept));
        fails++;
    }
    for (uint32_t k = 0; k < t->n_kept_at; k++)
        if (!(kept_at[k] < PROPHET_CAND_COUNT && (t->kept_at_mask[k] & (1u << kept_at[k])))) {
            printf("FAIL: %s: at iteration %u %s was in force (kept: %s)\n", t->name,
                   t->kept_at_iter[k], prophet_cand_name(kept_at[k]),
                   kept_at[k] < PROPHET_CAND_COUNT ? "yes" : "a trial or nothing");
            fails++;
        }
    if (t->trial_share_max >= 0 && share > t->trial_share_max) {
        printf("FAIL: %s: trial share %.1f%% > %.1f%%\n", t->name, 100 * share,
               100 * t->trial_share_max);
        fails++;
    }
    if ((t->rounds_max >= 0 && rounds > t->rounds_max) ||
        (t->rounds_min >= 0 && rounds < t->rounds_min)) {
        printf("FAIL: %s: %d round(s) chosen (bounds %d..%d)\n", t->name, rounds, t->rounds_min,
               t->rounds_max);
        fails++;
    }
    free(plan);
    prophet_closed_loop_free(l);
    return fails;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Loads and runs the trace in file PATH, printed as NAME: its failures. */
static int run_trace_file(const char *path, const char *name)
{
    static trace_t t;

    CHECKF(trace_load(path, &t) == 0, "%s: not a trace", path);
    printf("%s\n", name);
    return trace_run(&t);
}

/* usage: test_sched_closed_loop [PROFILES_DIR [TRACE_FILE | TRACE_DIR]]: one trace file, or every
 * *.trace of a directory in name order (default: LOOP_TRACES). ctest runs one file per test. */
int main(int argc, char **argv)
{
    char path[512], *names[128];
    const char *dir = argc > 2 ? argv[2] : LOOP_TRACES;
    uint32_t n = 0;
    struct dirent *e;
    struct stat st;
    DIR *d;
    int fails = 0;

    snprintf(path, sizeof(path), "%s/resnet50.json", argc > 1 ? argv[1] : "profiles");
    {
        FILE *f = fopen(path, "rb");
        static char text[1 << 20];
        char err[256];
        size_t len;
        CHECKF(f != NULL, "%s: cannot open", path);
        len = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        CHECKF(prophet_profile_from_json(text, len, &prof, err, sizeof(err)) == 0, "%s: %s", path,
               err);
    }
    CHECKF(stat(dir, &st) == 0, "%s: cannot open", dir);
    if (S_ISREG(st.st_mode)) {
        const char *slash = strrchr(dir, '/');
        fails = run_trace_file(dir, slash ? slash + 1 : dir);
        printf("1 trace(s), %d failure(s)\n", fails);
        return fails ? 1 : 0;
    }
    d = opendir(dir);
    CHECKF(d != NULL, "%s: cannot open", dir);
    while ((e = readdir(d)) && n < 128)
        if (strstr(e->d_name, ".trace"))
            names[n++] = strdup(e->d_name);
    closedir(d);
    CHECKF(n > 0, "%s: no .trace files", dir);
    qsort(names, n, sizeof(names[0]), by_name);
    for (uint32_t k = 0; k < n; k++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
        fails += run_trace_file(path, names[k]);
        free(names[k]);
    }
    printf("%u trace(s), %d failure(s)\n", n, fails);
    return fails ? 1 : 0;
}
