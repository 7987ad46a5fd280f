/* Where one intercepted ncclAllReduce goes (route.c): hold, observe, pass through or fail, and
 * why, decided from facts that schedule.c gathers. Pure: no lock, no I/O, no global; the same
 * facts give the same verdict. The decision is staged as schedule.c's actions are (the setup, the
 * capture query, the learner, the release points, the iteration start's steps come between);
 * each stage reads only the facts named for it and answers NEXT when it cannot decide. */
#ifndef PROPHET_ROUTE_H
#define PROPHET_ROUTE_H

#include <stdbool.h>

#include "route_reason.h"

typedef enum prophet_route_stage {
    PROPHET_ROUTE_ENTRY,     /* before anything: the comm and the arguments */
    PROPHET_ROUTE_SETUP,     /* after the comm's setup (on its first call) */
    PROPHET_ROUTE_CAPTURE,   /* after the capture query (prophet_route_asks_capture) */
    PROPHET_ROUTE_OBSERVED,  /* after the learner saw the call */
    PROPHET_ROUTE_JOINED,    /* after the release points before the call joins anything */
    PROPHET_ROUTE_AGREED,    /* at an iteration start, after the agreement step */
    PROPHET_ROUTE_ITERATION, /* after the iteration start's steps (agreement, measurement) */
} prophet_route_stage_t;

/* Program-order facts of the call and its comm (equal on every rank, bar the errors of one rank's
 * own calls, which stop the comm). */
typedef struct prophet_route_facts {
    /* ENTRY; comm_error again at SETUP and AGREED */
    bool comm_error;  /* the comm has a sticky error (prophet_comm_error) */
    bool blocking;    /* a blocking communicator */
    bool args_ok;     /* count > 0, a known type and a built-in op */
    bool setup_tried; /* the comm's setup ran (done or failed) */
    bool in_group;    /* inside the thread's ncclGroupStart/End */
    /* SETUP */
    bool setup_failed; /* the setup failed on some rank, or waits for a stream not capturing */
    /* CAPTURE (asked only where prophet_route_asks_capture says so; else both false) */
    bool comm_passthrough; /* the comm passes through on every rank; again at ITERATION */
    bool capture_possible; /* the process began a stream capture once */
    bool capture_failed;   /* cuStreamIsCapturing failed */
    bool capturing;        /* the call's stream is capturing */
    /* JOINED; learner_ok again at ITERATION */
    bool learner_ok; /* the learner's flags are not negative */
    bool extra;      /* the learner's PROPHET_LEARN_EXTRA: a call outside the iteration */
    /* AGREED */
    bool iter_start; /* the learner's PROPHET_LEARN_ITER_START */
    /* ITERATION */
    bool index_known;    /* the learner gave the call its index in the iteration */
    bool iter_len_one;   /* the learned iteration is one call */
    bool plan_direct;    /* the plan in force is passthrough (the closed loop's) */
    bool have_plan;      /* an agreed plan is installed */
    bool measuring;      /* this iteration measures readiness */
    bool gate_hold;      /* PROPHET_GATE=hold */
    bool holding;        /* the iteration is known, anchored and stable: calls may be held */
    bool unsettled_skip; /* an unsettled comm, outside its sampled runs */
} prophet_route_facts_t;

/* The decision itself is here, inline: it runs at every intercepted call, six stages of it, and
 * out of line it cost about 290 instructions a call (callgrind, the observe path). Each stage
 * tests its facts in the order the call's path meets them; the first that decides gives the
 * verdict and its reason (PROPHET_ROUTE_REASONS gives each reason's verdict). */
#define PROPHET_ROUTE_CASE_(id_, verdict_, name_)                                                  \
    case PROPHET_WHY_##id_:                                                                        \
        return (prophet_route_t){.verdict = PROPHET_VERDICT_##verdict_, .why = PROPHET_WHY_##id_};
static inline prophet_route_t prophet_why(prophet_route_why_t why)
{
    switch (why) {
        PROPHET_ROUTE_REASONS(PROPHET_ROUTE_CASE_)
    default:
        break;
    }
    return (prophet_route_t){.verdict = PROPHET_VERDICT_NEXT, .why = PROPHET_WHY_NONE};
}
#undef PROPHET_ROUTE_CASE_

/* The comm and the arguments, before anything is done: a sticky error; non-blocking comms and
 * arguments NCCL might reject (their error must come from the call that caused it); inside a user
 * group before the setup (its vote is a host wait: the setup waits for a call outside groups). */
static inline prophet_route_t prophet_route_entry(const prophet_route_facts_t *f)
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
static inline prophet_route_t prophet_route_setup(const prophet_route_facts_t *f)
{
    if (!f->setup_failed)
        return prophet_why(PROPHET_WHY_NONE);
    return prophet_why(f->comm_error ? PROPHET_WHY_SETUP_ERROR : PROPHET_WHY_NO_SETUP);
}

/* After the capture query: capture or not decides whether the call may be held, and a query that
 * failed leaves it unknown on this rank alone (NCCL's own enqueue fails the call then). */
static inline prophet_route_t prophet_route_capture(const prophet_route_facts_t *f)
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
static inline prophet_route_t prophet_route_iteration(const prophet_route_facts_t *f)
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

/* The verdict of one stage; NEXT with PROPHET_WHY_NONE when it does not decide. */
static inline prophet_route_t prophet_route(prophet_route_stage_t stage,
                                            const prophet_route_facts_t *f)
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

/* Whether the capture state of the call's stream is asked before the CAPTURE stage. */
static inline bool prophet_route_asks_capture(const prophet_route_facts_t *f)
{
    /* A comm that passes through keeps observing (it takes part in the plan broadcasts) and is
     * never held: whether its stream captures changes nothing. */
    return !f->in_group && !f->comm_passthrough && f->capture_possible;
}

/* The reason's name ("capture", "user_group", ...) and its verdict's ("pass", ...). */
const char *prophet_route_why_name(prophet_route_why_t why);
const char *prophet_verdict_name(prophet_verdict_t v);
/* The verdict a reason belongs to (PROPHET_ROUTE_REASONS). */
prophet_verdict_t prophet_route_why_verdict(prophet_route_why_t why);

#endif
