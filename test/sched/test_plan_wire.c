/* Plan wire form: round trip; every single-byte corruption, truncation and random garbage is
 * rejected with -EINVAL; signature hash is stable and sensitive. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "prophet/sched.h"

int main(void)
{
    static prophet_plan_t a, b;
    static uint8_t buf[PROPHET_PLAN_WIRE_BYTES], bad[PROPHET_PLAN_WIRE_BYTES];
    prophet_call_sig_t sig[3] = {{1, 10, 7, 0, 40}, {1, 20, 7, 0, 80}, {2, 5, 7, 0, 20}};
    uint64_t rng = 99, h;
    uint32_t i;

    memset(&a, 0, sizeof(a));
    a.version = 7;
    a.policy = PROPHET_POLICY_OPTIMAL;
    a.n_calls = PROPHET_MAX_CALLS;
    for (i = 0; i < 1000; i++)
        a.block_first[i] = i * 4;
    a.n_blocks = 1000;
    a.predicted_iteration_us = 123456.789;
    a.sig_hash = 0xdeadbeefcafef00dull;
    CHECK(prophet_plan_pack(&a, buf, sizeof(buf)) == PROPHET_PLAN_WIRE_BYTES);
    CHECK(prophet_plan_unpack(&b, buf, sizeof(buf)) == 0);
    CHECK(b.version == 7 && b.policy == a.policy && b.n_calls == a.n_calls &&
          b.n_blocks == a.n_blocks && b.predicted_iteration_us == a.predicted_iteration_us &&
          b.sig_hash == a.sig_hash);
    CHECK(memcmp(a.block_first, b.block_first, sizeof(uint32_t) * a.n_blocks) == 0);

    /* every byte flipped, one at a time */
    for (i = 0; i < PROPHET_PLAN_WIRE_BYTES; i++) {
        memcpy(bad, buf, sizeof(buf));
        bad[i] ^= (uint8_t)(1 + test_rand(&rng) % 255);
        CHECKF(prophet_plan_unpack(&b, bad, sizeof(bad)) == -EINVAL, "flip at byte %u", i);
    }
    /* truncated, random garbage, zeros */
    CHECK(prophet_plan_unpack(&b, buf, sizeof(buf) - 1) == -EINVAL);
    for (int t = 0; t < 100; t++) {
        for (i = 0; i < sizeof(bad); i++)
            bad[i] = (uint8_t)test_rand(&rng);
        CHECK(prophet_plan_unpack(&b, bad, sizeof(bad)) == -EINVAL);
    }
    memset(bad, 0, sizeof(bad));
    CHECK(prophet_plan_unpack(&b, bad, sizeof(bad)) == -EINVAL);
    CHECK(prophet_plan_unpack(NULL, buf, sizeof(buf)) == -EINVAL);

    /* pack refuses what it could not describe */
    CHECK(prophet_plan_pack(&a, buf, sizeof(buf) - 1) == -EINVAL);
    a.n_blocks = a.n_calls + 1;
    CHECK(prophet_plan_pack(&a, buf, sizeof(buf)) == -EINVAL);
    a.n_blocks = 1000;
    a.policy = PROPHET_POLICY_COUNT;
    CHECK(prophet_plan_pack(&a, buf, sizeof(buf)) == -EINVAL);
    /* a well-packed but structurally wrong plan (blocks not ascending) is refused on unpack */
    a.policy = PROPHET_POLICY_PROPHET;
    a.block_first[5] = a.block_first[4];
    CHECK(prophet_plan_pack(&a, buf, sizeof(buf)) == PROPHET_PLAN_WIRE_BYTES);
    CHECK(prophet_plan_unpack(&b, buf, sizeof(buf)) == -EINVAL);
    a.block_first[5] = 20;
    a.block_first[0] = 1;
    CHECK(prophet_plan_pack(&a, buf, sizeof(buf)) == PROPHET_PLAN_WIRE_BYTES);
    CHECK(prophet_plan_unpack(&b, buf, sizeof(buf)) == -EINVAL);

    /* signature hash */
    h = prophet_sig_hash(sig, 3);
    CHECK(h == prophet_sig_hash(sig, 3));
    CHECK(h != prophet_sig_hash(sig, 2));
    sig[2].bytes++;
    CHECK(h != prophet_sig_hash(sig, 3));
    sig[2].bytes--;
    sig[0].comm_id = 2;
    CHECK(h != prophet_sig_hash(sig, 3));
    printf("plan_wire: ok\n");
    return 0;
}
