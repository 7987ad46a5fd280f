/* The routing verdict of an intercepted ncclAllReduce (preload/engine/route.c), on a table of
 * cases: each row is a stage and its facts, and the verdict and reason they must give. Every
 * reason is reached by at least one row; the rows that mix facts check which one wins (the order
 * of the checks). Links preload/engine/route.c alone. */
#include <stdio.h>
#include <string.h>

#include "engine/route.h"

typedef struct route_case {
    const char *what;
    prophet_route_stage_t stage;
    prophet_route_facts_t f;
    prophet_verdict_t verdict;
    prophet_route_why_t why;
} route_case_t;

#define NEXT PROPHET_VERDICT_NEXT, PROPHET_WHY_NONE
#define PASS(w) PROPHET_VERDICT_PASS, PROPHET_WHY_##w
#define FAIL(w) PROPHET_VERDICT_FAIL, PROPHET_WHY_##w
#define OBSERVE(w) PROPHET_VERDICT_OBSERVE, PROPHET_WHY_##w
#define HOLD PROPHET_VERDICT_HOLD, PROPHET_WHY_HELD
/* a blocking comm, schedulable arguments, set up, outside groups */
#define OK .blocking = 1, .args_ok = 1, .setup_tried = 1
/* a call the learner placed in a held iteration of the default gate */
#define HELD_ITER .gate_hold = 1, .index_known = 1, .learner_ok = 1, .holding = 1

static const route_case_t cases[] = {
    /* ENTRY: the comm and the arguments */
    {"sticky error first", PROPHET_ROUTE_ENTRY, {.comm_error = 1, .args_ok = 0}, FAIL(COMM_ERROR)},
    {"non-blocking before odd arguments", PROPHET_ROUTE_ENTRY, {.args_ok = 0}, PASS(NONBLOCKING)},
    {"count 0 or a custom op", PROPHET_ROUTE_ENTRY, {.blocking = 1, .in_group = 1}, PASS(ARGS)},
    {"in a group before the setup",
     PROPHET_ROUTE_ENTRY,
     {.blocking = 1, .args_ok = 1, .in_group = 1},
     PASS(GROUP_UNSET)},
    {"in a group after the setup", PROPHET_ROUTE_ENTRY, {OK, .in_group = 1}, NEXT},
    {"first call outside groups", PROPHET_ROUTE_ENTRY, {.blocking = 1, .args_ok = 1}, NEXT},
    /* SETUP */
    {"setup failed on a rank", PROPHET_ROUTE_SETUP, {OK, .setup_failed = 1}, PASS(NO_SETUP)},
    {"setup vote not taken",
     PROPHET_ROUTE_SETUP,
     {OK, .setup_failed = 1, .comm_error = 1},
     FAIL(SETUP_ERROR)},
    {"setup done", PROPHET_ROUTE_SETUP, {OK}, NEXT},
    /* CAPTURE */
    {"capture query failed",
     PROPHET_ROUTE_CAPTURE,
     {OK, .capture_failed = 1, .capturing = 1},
     FAIL(CAPTURE_QUERY)},
    {"stream capturing", PROPHET_ROUTE_CAPTURE, {OK, .capturing = 1}, PASS(CAPTURE)},
    {"stream not capturing", PROPHET_ROUTE_CAPTURE, {OK, .capture_possible = 1}, NEXT},
    /* OBSERVED: the learner saw the call */
    {"inside a user group",
     PROPHET_ROUTE_OBSERVED,
     {OK, .in_group = 1, .extra = 1, .learner_ok = 1},
     PASS(USER_GROUP)},
    {"outside groups", PROPHET_ROUTE_OBSERVED, {OK, .extra = 1, .learner_ok = 1}, NEXT},
    /* JOINED: after the release points */
    {"an extra call", PROPHET_ROUTE_JOINED, {OK, .learner_ok = 1, .extra = 1}, PASS(EXTRA)},
    {"extra flag of a negative result", PROPHET_ROUTE_JOINED, {OK, .extra = 1}, NEXT},
    {"a call of the iteration", PROPHET_ROUTE_JOINED, {OK, .learner_ok = 1}, NEXT},
    /* AGREED: at an iteration start */
    {"agreement failed",
     PROPHET_ROUTE_AGREED,
     {OK, .iter_start = 1, .comm_error = 1},
     FAIL(AGREEMENT_ERROR)},
    {"error outside an iteration start", PROPHET_ROUTE_AGREED, {OK, .comm_error = 1}, NEXT},
    {"agreement done", PROPHET_ROUTE_AGREED, {OK, .iter_start = 1}, NEXT},
    /* ITERATION */
    {"held", PROPHET_ROUTE_ITERATION, {OK, HELD_ITER}, HOLD},
    {"comm passes through before one-call iterations",
     PROPHET_ROUTE_ITERATION,
     {OK, HELD_ITER, .comm_passthrough = 1, .iter_len_one = 1},
     PASS(COMM_PASSTHROUGH)},
    {"one-call iteration before a direct plan",
     PROPHET_ROUTE_ITERATION,
     {OK, HELD_ITER, .iter_len_one = 1, .plan_direct = 1, .have_plan = 1},
     PASS(ONE_CALL_ITER)},
    {"one-call iteration, call not placed",
     PROPHET_ROUTE_ITERATION,
     {OK, .gate_hold = 1, .learner_ok = 1, .holding = 1, .iter_len_one = 1},
     OBSERVE(SEARCHING)},
    {"one-call iteration, learner negative",
     PROPHET_ROUTE_ITERATION,
     {OK, .gate_hold = 1, .index_known = 1, .holding = 1, .iter_len_one = 1},
     OBSERVE(SEARCHING)},
    {"direct plan",
     PROPHET_ROUTE_ITERATION,
     {OK, HELD_ITER, .plan_direct = 1, .have_plan = 1},
     PASS(DIRECT_PLAN)},
    {"direct plan, measuring",
     PROPHET_ROUTE_ITERATION,
     {OK, HELD_ITER, .plan_direct = 1, .have_plan = 1, .measuring = 1},
     HOLD},
    {"direct loop, no plan agreed",
     PROPHET_ROUTE_ITERATION,
     {OK, HELD_ITER, .plan_direct = 1},
     HOLD},
    {"direct plan, observe gate",
     PROPHET_ROUTE_ITERATION,
     {OK, .index_known = 1, .learner_ok = 1, .holding = 1, .plan_direct = 1, .have_plan = 1},
     OBSERVE(OBSERVE_GATE)},
    {"observe gate before an unplaced call", PROPHET_ROUTE_ITERATION, {OK}, OBSERVE(OBSERVE_GATE)},
    {"not yet stable",
     PROPHET_ROUTE_ITERATION,
     {OK, .gate_hold = 1, .index_known = 1, .learner_ok = 1},
     OBSERVE(SETTLING)},
    {"unsettled outside its samples",
     PROPHET_ROUTE_ITERATION,
     {OK, .gate_hold = 1, .index_known = 1, .learner_ok = 1, .unsettled_skip = 1},
     PASS(UNSETTLED)},
    {"unsettled, learner searching",
     PROPHET_ROUTE_ITERATION,
     {OK, .gate_hold = 1, .unsettled_skip = 1},
     PASS(UNSETTLED)},
    {"unsettled skip never stops a held call",
     PROPHET_ROUTE_ITERATION,
     {OK, HELD_ITER, .unsettled_skip = 1},
     HOLD},
};

/* asks_capture: only outside groups, on a comm that schedules, once a capture may exist */
static const struct {
    prophet_route_facts_t f;
    bool want;
} asks[] = {
    {{.capture_possible = 1}, 1},
    {{.capture_possible = 0}, 0},
    {{.capture_possible = 1, .in_group = 1}, 0},
    {{.capture_possible = 1, .comm_passthrough = 1}, 0},
};

int main(void)
{
    int bad = 0, seen[PROPHET_WHY_COUNT] = {0};
    size_t n = sizeof(cases) / sizeof(cases[0]);

    for (size_t i = 0; i < n; i++) {
        const route_case_t *t = &cases[i];
        prophet_route_t r = prophet_route(t->stage, &t->f);
        if (r.verdict != t->verdict || r.why != t->why) {
            fprintf(stderr, "FAIL: %s: %s (%s), want %s (%s)\n", t->what,
                    prophet_verdict_name(r.verdict), prophet_route_why_name(r.why),
                    prophet_verdict_name(t->verdict), prophet_route_why_name(t->why));
            bad = 1;
        }
        if (prophet_route_why_verdict(r.why) != r.verdict) {
            fprintf(stderr, "FAIL: %s: reason %s belongs to %s, given with %s\n", t->what,
                    prophet_route_why_name(r.why),
                    prophet_verdict_name(prophet_route_why_verdict(r.why)),
                    prophet_verdict_name(r.verdict));
            bad = 1;
        }
        seen[r.why]++;
    }
    for (int w = 0; w < PROPHET_WHY_COUNT; w++) {
        const char *name = prophet_route_why_name(w);
        if (!seen[w]) {
            fprintf(stderr, "FAIL: no case reaches reason %s\n", name);
            bad = 1;
        }
        for (int v = 0; v < w; v++)
            if (strcmp(name, prophet_route_why_name(v)) == 0) {
                fprintf(stderr, "FAIL: reasons %d and %d are both named %s\n", v, w, name);
                bad = 1;
            }
    }
    for (size_t i = 0; i < sizeof(asks) / sizeof(asks[0]); i++)
        if (prophet_route_asks_capture(&asks[i].f) != asks[i].want) {
            fprintf(stderr, "FAIL: asks_capture case %zu: want %d\n", i, asks[i].want);
            bad = 1;
        }
    if (!bad)
        printf("PASS: %zu cases, %d reasons reached\n", n, PROPHET_WHY_COUNT);
    return bad;
}
