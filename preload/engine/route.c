/* Where one intercepted ncclAllReduce goes, and why (route.h): the decisions of schedule.c's
 * prophet_allreduce_in, stage by stage, from the facts it gathers. Pure: no lock, no I/O, no
 * global. Each stage tests its facts in the order the call's path meets them; the first that
 * decides gives the verdict and its reason. */
#include <stddef.h>

#include "engine/route.h"

#define PROPHET_ROUTE_NAME_(id, verdict, name) name,
static const char *const prophet_route_names[PROPHET_WHY_COUNT] = {
    PROPHET_ROUTE_REASONS(PROPHET_ROUTE_NAME_)};
#undef PROPHET_ROUTE_NAME_

#define PROPHET_ROUTE_VERDICT_(id, verdict, name) PROPHET_VERDICT_##verdict,
static const prophet_verdict_t prophet_route_verdicts[PROPHET_WHY_COUNT] = {
    PROPHET_ROUTE_REASONS(PROPHET_ROUTE_VERDICT_)};
#undef PROPHET_ROUTE_VERDICT_

static prophet_route_t prophet_why(prophet_route_why_t why)
{
    return (prophet_route_t){.verdict = prophet_route_verdicts[why], .why = why};
}

/* The comm and the arguments, before anything is done: a sticky error; non-blocking comms and
 * arguments NCCL might reject (their error must come from the call that caused it); inside a user
 * group before the setup (its vote is a host wait: the setup waits for a call outside groups). */
static prophet_route_t prophet_route_entry(const prophet_route_facts_t *f)
{
    if (f->comm_error)
        return prophet_why(PROPHET_WHY_COMM_ERROR);
    if (!f->blocking)
        return prophet_why(PROPHET_WHY_NONBLOCKING);
    if (!f->args_ok)
        return prophet_why(PROPHET_WHY_ARGS);
    if (!f->setup_tried && f->in_group)
        return prophet_why(PROPHET_WHY_GROUP_UNSET);
    return prophet_why(PROPHET_WHY_NONE);
}

/* After the setup: a failed one passes through on every rank (its vote), unless the vote itself
 * could not be taken (the comm stopped with an error). */
static prophet_route_t prophet_route_setup(const prophet_route_facts_t *f)
{
    if (!f->setup_failed)
        return prophet_why(PROPHET_WHY_NONE);
    return prophet_why(f->comm_error ? PROPHET_WHY_SETUP_ERROR : PROPHET_WHY_NO_SETUP);
}

/* After the capture query: capture or not decides whether the call may be held, and a query that
 * failed leaves it unknown on this rank alone (NCCL's own enqueue fails the call then). */
static prophet_route_t prophet_route_capture(const prophet_route_facts_t *f)
{
    if (f->capture_failed)
        return prophet_why(PROPHET_WHY_CAPTURE_QUERY);
    if (f->capturing)
        return prophet_why(PROPHET_WHY_CAPTURE);
    return prophet_why(PROPHET_WHY_NONE);
}

/* After the learner and the iteration start's steps. A comm that passes through, an iteration of
 * one call (a block of one is the call itself) and an agreed passthrough plan outside its
 * measurement iterations send the call straight to NCCL; until calls may be held they are observed
 * (an unsettled comm only in its sampled runs). */
static prophet_route_t prophet_route_iteration(const prophet_route_facts_t *f)
{
    bool placed = f->index_known && f->learner_ok;

    if (f->comm_passthrough)
        return prophet_why(PROPHET_WHY_COMM_PASSTHROUGH);
    if (f->iter_len_one && placed)
        return prophet_why(PROPHET_WHY_ONE_CALL_ITER);
    if (f->plan_direct && f->have_plan && !f->measuring && f->gate_hold && placed)
        return prophet_why(PROPHET_WHY_DIRECT_PLAN);
    if (!f->gate_hold || !placed || !f->holding) {
        if (f->unsettled_skip)
            return prophet_why(PROPHET_WHY_UNSETTLED);
        if (!f->gate_hold)
            return prophet_why(PROPHET_WHY_OBSERVE_GATE);
        return prophet_why(placed ? PROPHET_WHY_SETTLING : PROPHET_WHY_SEARCHING);
    }
    return prophet_why(PROPHET_WHY_HELD);
}

prophet_route_t prophet_route(prophet_route_stage_t stage, const prophet_route_facts_t *f)
{
    switch (stage) {
    case PROPHET_ROUTE_ENTRY:
        return prophet_route_entry(f);
    case PROPHET_ROUTE_SETUP:
        return prophet_route_setup(f);
    case PROPHET_ROUTE_CAPTURE:
        return prophet_route_capture(f);
    case PROPHET_ROUTE_OBSERVED: /* the user's group: it joins that group, untouched */
        return prophet_why(f->in_group ? PROPHET_WHY_USER_GROUP : PROPHET_WHY_NONE);
    case PROPHET_ROUTE_JOINED: /* a call outside the learned iteration: after what is held */
        return prophet_why(f->learner_ok && f->extra ? PROPHET_WHY_EXTRA : PROPHET_WHY_NONE);
    case PROPHET_ROUTE_AGREED: /* the iteration start's agreement failed: the comm stopped */
        return prophet_why(f->iter_start && f->comm_error ? PROPHET_WHY_AGREEMENT_ERROR
                                                          : PROPHET_WHY_NONE);
    case PROPHET_ROUTE_ITERATION:
        return prophet_route_iteration(f);
    }
    return prophet_why(PROPHET_WHY_NONE);
}

bool prophet_route_asks_capture(const prophet_route_facts_t *f)
{
    /* A comm that passes through keeps observing (it takes part in the plan broadcasts) and is
     * never held: whether its stream captures changes nothing. */
    return !f->in_group && !f->comm_passthrough && f->capture_possible;
}

const char *prophet_route_why_name(prophet_route_why_t why)
{
    return (unsigned)why < PROPHET_WHY_COUNT ? prophet_route_names[why] : "?";
}

prophet_verdict_t prophet_route_why_verdict(prophet_route_why_t why)
{
    return (unsigned)why < PROPHET_WHY_COUNT ? prophet_route_verdicts[why] : PROPHET_VERDICT_NEXT;
}

const char *prophet_verdict_name(prophet_verdict_t v)
{
    switch (v) {
    case PROPHET_VERDICT_NEXT:
        return "next";
    case PROPHET_VERDICT_HOLD:
        return "hold";
    case PROPHET_VERDICT_OBSERVE:
        return "observe";
    case PROPHET_VERDICT_PASS:
        return "pass";
    case PROPHET_VERDICT_FAIL:
        return "fail";
    }
    return "?";
}
