/* The names of the routing verdicts and reasons, and each reason's verdict, for the TRACE line
 * and the summary line. The decision itself (pure: no lock, no I/O, no global) is inline in
 * route.h: it runs at every intercepted call. */
#include <stddef.h>

#include "engine/route.h"

#define PROPHET_ROUTE_NAME_(id, verdict, name) name,
static const char *const prophet_route_names[PROPHET_WHY_COUNT] = {
    PROPHET_ROUTE_REASONS(PROPHET_ROUTE_NAME_)};
#undef PROPHET_ROUTE_NAME_

const char *prophet_route_why_name(prophet_route_why_t why)
{
    return (unsigned)why < PROPHET_WHY_COUNT ? prophet_route_names[why] : "?";
}

prophet_verdict_t prophet_route_why_verdict(prophet_route_why_t why)
{
    return prophet_why(why).verdict; /* the one mapping, route.h */
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
