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

/* The verdict of one stage; NEXT with PROPHET_WHY_NONE when it does not decide. */
prophet_route_t prophet_route(prophet_route_stage_t stage, const prophet_route_facts_t *f);
/* Whether the capture state of the call's stream is asked before the CAPTURE stage. */
bool prophet_route_asks_capture(const prophet_route_facts_t *f);
/* The reason's name ("capture", "user_group", ...) and its verdict's ("pass", ...). */
const char *prophet_route_why_name(prophet_route_why_t why);
const char *prophet_verdict_name(prophet_verdict_t v);
/* The verdict a reason belongs to (PROPHET_ROUTE_REASONS). */
prophet_verdict_t prophet_route_why_verdict(prophet_route_why_t why);

#endif
