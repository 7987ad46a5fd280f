/* Release engine: block mapping and closing calls follow the plan; no plan = every call its own
 * block; calls past the plan are their own blocks; an invalid plan is refused and the old kept. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "prophet/sched.h"

int main(void)
{
    static prophet_plan_t p;
    prophet_engine_t *e = prophet_engine_new();
    uint32_t i;

    CHECK(e);
    for (i = 0; i < 10; i++) {
        CHECK(prophet_engine_closes_block(e, i) == 1);
        CHECK(prophet_engine_block_of(e, i) == i);
    }
    memset(&p, 0, sizeof(p));
    p.n_calls = 10;
    p.n_blocks = 3;
    p.block_first[0] = 0;
    p.block_first[1] = 4;
    p.block_first[2] = 5;
    CHECK(prophet_engine_set_plan(e, &p) == 0);
    {
        const uint32_t block[10] = {0, 0, 0, 0, 1, 2, 2, 2, 2, 2};
        const int closes[10] = {0, 0, 0, 1, 1, 0, 0, 0, 0, 1};

        for (i = 0; i < 10; i++) {
            CHECK(prophet_engine_block_of(e, i) == block[i]);
            CHECK(prophet_engine_closes_block(e, i) == closes[i]);
        }
    }
    CHECK(prophet_engine_block_of(e, 10) == 3 && prophet_engine_closes_block(e, 10) == 1);
    CHECK(prophet_engine_block_of(e, 12) == 5 && prophet_engine_closes_block(e, 12) == 1);
    /* pure: asking again, in any order, gives the same answers */
    CHECK(prophet_engine_block_of(e, 2) == 0 && prophet_engine_closes_block(e, 3) == 1);

    p.block_first[2] = 4; /* not ascending */
    CHECK(prophet_engine_set_plan(e, &p) == -EINVAL);
    CHECK(prophet_engine_block_of(e, 6) == 2); /* the old plan still applies */
    p.block_first[2] = 10;                     /* past n_calls */
    CHECK(prophet_engine_set_plan(e, &p) == -EINVAL);
    p.block_first[0] = 1;
    CHECK(prophet_engine_set_plan(e, &p) == -EINVAL);

    CHECK(prophet_engine_set_plan(e, NULL) == 0);
    CHECK(prophet_engine_block_of(e, 6) == 6 && prophet_engine_closes_block(e, 2) == 1);
    prophet_engine_free(e);
    printf("engine: ok\n");
    return 0;
}
