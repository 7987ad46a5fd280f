/* The routing verdict of one intercepted ncclAllReduce and its reasons (types only): what
 * engine/route.c decides, what the comm's stats count per reason (comm.h) and what the summary
 * line prints (the pass-through reasons). */
#ifndef PROPHET_ROUTE_REASON_H
#define PROPHET_ROUTE_REASON_H

/* What becomes of the call. NEXT: the stage asked cannot decide yet (the next stage, after the
 * action that comes between, decides). */
typedef enum prophet_verdict {
    PROPHET_VERDICT_NEXT = 0,
    PROPHET_VERDICT_HOLD,    /* joins the comm's held block */
    PROPHET_VERDICT_OBSERVE, /* to NCCL at once, between a ready and an end event of ours */
    PROPHET_VERDICT_PASS,    /* to NCCL at once, untouched (after what the comm holds) */
    PROPHET_VERDICT_FAIL,    /* not issued: the comm's sticky error is returned */
} prophet_verdict_t;

/* Every reason, with its verdict and its name (the summary line's pass_NAME=N, the TRACE line),
 * in the order the stages test them (engine/route.c). */
#define PROPHET_ROUTE_REASONS(X)                                                                   \
    X(NONE, NEXT, "none")                                                                          \
    X(COMM_ERROR, FAIL, "comm_error")             /* the comm has a sticky error */                \
    X(NONBLOCKING, PASS, "nonblocking")           /* a non-blocking communicator */                \
    X(ARGS, PASS, "args")                         /* count 0, unknown type, custom op */           \
    X(GROUP_UNSET, PASS, "group_before_setup")    /* in a user group before the comm's setup */    \
    X(SETUP_ERROR, FAIL, "setup_error")           /* the setup vote could not be taken */          \
    X(NO_SETUP, PASS, "no_setup")                 /* setup failed on a rank, or deferred */        \
    X(CAPTURE_QUERY, FAIL, "capture_query")       /* cuStreamIsCapturing failed */                 \
    X(CAPTURE, PASS, "capture")                   /* the stream is capturing */                    \
    X(USER_GROUP, PASS, "user_group")             /* inside the user's ncclGroupStart/End */       \
    X(EXTRA, PASS, "extra")                       /* outside the learned iteration */              \
    X(AGREEMENT_ERROR, FAIL, "agreement_error")   /* the iteration start's agreement failed */     \
    X(COMM_PASSTHROUGH, PASS, "comm_passthrough") /* the comm passes through (every rank) */       \
    X(ONE_CALL_ITER, PASS, "one_call_iter")       /* an iteration of one call */                   \
    X(DIRECT_PLAN, PASS, "direct_plan")           /* an agreed passthrough plan, not measuring */  \
    X(UNSETTLED, PASS, "unsettled")               /* an unsettled comm outside its samples */      \
    X(OBSERVE_GATE, OBSERVE, "observe_gate")      /* PROPHET_GATE=observe */                       \
    X(SEARCHING, OBSERVE, "searching")            /* the learner has no place for the call */      \
    X(SETTLING, OBSERVE, "settling")              /* iteration known, not yet stable/anchored */   \
    X(HELD, HOLD, "held")                         /* held in the comm's block */

#define PROPHET_ROUTE_ENUM_(id, verdict, name) PROPHET_WHY_##id,
typedef enum prophet_route_why {
    PROPHET_ROUTE_REASONS(PROPHET_ROUTE_ENUM_) PROPHET_WHY_COUNT
} prophet_route_why_t;
#undef PROPHET_ROUTE_ENUM_

typedef struct prophet_route {
    prophet_verdict_t verdict;
    prophet_route_why_t why;
} prophet_route_t;

#endif
