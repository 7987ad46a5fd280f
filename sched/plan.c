/* Plan wire form and signature hash.
 *
 * Wire form (PROPHET_PLAN_WIRE_BYTES, little-endian, fixed size so that every rank broadcasts the
 * same count):
 *   0  u32 magic "PRPL"        4  u16 wire version (2)   6  u16 reserved (0)
 *   8  u32 plan version       12  u32 policy           16  u32 n_calls     20  u32 n_blocks
 *   24 u64 predicted_iteration_us (IEEE-754 bits)      32  u64 sig_hash
 *   40 u64 checksum: FNV-1a 64 taken a little-endian u64 word at a time (prophet_hash_word) over
 *      the whole buffer with this field zeroed
 *   48 u8 trial phase  49 u8 candidate  50 u8 judged candidate  51 u8 judged samples
 *   52 u16 trial round  54 u16 next_in  56 u32 judged median us  60 u32 chosen figure us
 *   64 u32 block_first[PROPHET_MAX_CALLS] (entries past n_blocks are zero)
 * unpack rejects anything else with -EINVAL: wrong size, magic, version, checksum, counts, or
 * block starts that are not a partition (first 0, strictly ascending, below n_calls). */
#include <errno.h>
#include <string.h>

#include "sched_internal.h"

#define PLAN_MAGIC 0x4c505250u /* "PRPL" little-endian */
#define PLAN_WIRE_VERSION 2    /* 2: the checksum hashes words, not bytes */
#define OFF_CHECKSUM 40
#define OFF_BLOCKS 64
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

_Static_assert(OFF_BLOCKS + 4 * PROPHET_MAX_CALLS == PROPHET_PLAN_WIRE_BYTES, "wire layout");
_Static_assert(PROPHET_PLAN_WIRE_BYTES % 8 == 0 && OFF_CHECKSUM % 8 == 0, "checksum words");

/* One step of FNV-1a over a 64-bit word instead of a byte: 1/8 of the dependent multiplies (a
 * byte-wise checksum of the 16 KiB wire form, run at every agreement, was about 66,000
 * instructions by callgrind). For any fixed word the step is a bijection of h (xor, then an odd
 * multiplier), so a change of one word always changes the result. */
static uint64_t prophet_hash_word(uint64_t h, uint64_t w)
{
    return (h ^ w) * FNV_PRIME;
}

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;

    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t wire_checksum(const uint8_t *b)
{
    uint64_t h = FNV_OFFSET;

    for (size_t off = 0; off < PROPHET_PLAN_WIRE_BYTES; off += 8)
        h = prophet_hash_word(h, off == OFF_CHECKSUM ? 0 : get_u64(b + off));
    return h;
}

int prophet_plan_pack(const prophet_plan_t *plan, void *buf, size_t len)
{
    uint8_t *b = buf;
    uint64_t bits;
    uint32_t i;

    if (!plan || !buf || len < PROPHET_PLAN_WIRE_BYTES || plan->n_calls > PROPHET_MAX_CALLS ||
        plan->n_blocks > plan->n_calls || (unsigned)plan->policy >= PROPHET_POLICY_COUNT ||
        plan->trial.phase > PROPHET_TRIAL_CHOSEN || plan->trial.candidate > 255 ||
        plan->trial.judged > 255 || plan->trial.round > 65535 || plan->trial.next_in > 65535)
        return -EINVAL;
    memset(b, 0, PROPHET_PLAN_WIRE_BYTES);
    put_u32(b, PLAN_MAGIC);
    put_u16(b + 4, PLAN_WIRE_VERSION);
    put_u32(b + 8, plan->version);
    put_u32(b + 12, (uint32_t)plan->policy);
    put_u32(b + 16, plan->n_calls);
    put_u32(b + 20, plan->n_blocks);
    memcpy(&bits, &plan->predicted_iteration_us, sizeof(bits));
    put_u64(b + 24, bits);
    put_u64(b + 32, plan->sig_hash);
    b[48] = (uint8_t)plan->trial.phase;
    b[49] = (uint8_t)plan->trial.candidate;
    b[50] = (uint8_t)plan->trial.judged;
    b[51] = (uint8_t)(plan->trial.judged_samples > 255 ? 255 : plan->trial.judged_samples);
    put_u16(b + 52, (uint16_t)plan->trial.round);
    put_u16(b + 54, (uint16_t)plan->trial.next_in);
    put_u32(b + 56, plan->trial.judged_us);
    put_u32(b + 60, plan->trial.chosen_us);
    for (i = 0; i < plan->n_blocks; i++)
        put_u32(b + OFF_BLOCKS + 4 * i, plan->block_first[i]);
    put_u64(b + OFF_CHECKSUM, wire_checksum(b));
    return PROPHET_PLAN_WIRE_BYTES;
}

int prophet_plan_unpack(prophet_plan_t *plan, const void *buf, size_t len)
{
    const uint8_t *b = buf;
    uint32_t n_calls, n_blocks, policy, i, prev = 0;
    uint64_t bits;

    if (!plan || !buf || len < PROPHET_PLAN_WIRE_BYTES)
        return -EINVAL;
    if (get_u32(b) != PLAN_MAGIC || get_u16(b + 4) != PLAN_WIRE_VERSION || get_u16(b + 6) != 0 ||
        get_u64(b + OFF_CHECKSUM) != wire_checksum(b))
        return -EINVAL;
    policy = get_u32(b + 12);
    n_calls = get_u32(b + 16);
    n_blocks = get_u32(b + 20);
    if (policy >= PROPHET_POLICY_COUNT || n_calls == 0 || n_calls > PROPHET_MAX_CALLS ||
        n_blocks == 0 || n_blocks > n_calls || b[48] > PROPHET_TRIAL_CHOSEN)
        return -EINVAL;
    for (i = 0; i < n_blocks; i++) {
        uint32_t f = get_u32(b + OFF_BLOCKS + 4 * i);

        if ((i == 0 && f != 0) || (i > 0 && f <= prev) || f >= n_calls)
            return -EINVAL;
        prev = f;
    }
    plan->version = get_u32(b + 8);
    plan->policy = (prophet_policy_t)policy;
    plan->n_calls = n_calls;
    plan->n_blocks = n_blocks;
    bits = get_u64(b + 24);
    memcpy(&plan->predicted_iteration_us, &bits, sizeof(bits));
    plan->sig_hash = get_u64(b + 32);
    plan->trial = (prophet_plan_trial_t){.phase = b[48],
                                         .candidate = b[49],
                                         .judged = b[50],
                                         .judged_samples = b[51],
                                         .round = get_u16(b + 52),
                                         .next_in = get_u16(b + 54),
                                         .judged_us = get_u32(b + 56),
                                         .chosen_us = get_u32(b + 60)};
    for (i = 0; i < n_blocks; i++)
        plan->block_first[i] = get_u32(b + OFF_BLOCKS + 4 * i);
    return 0;
}

uint64_t prophet_sig_hash(const prophet_call_sig_t *sig, uint32_t n)
{
    uint64_t h = prophet_hash_word(FNV_OFFSET, n);
    uint32_t i;

    for (i = 0; sig && i < n; i++) {
        h = prophet_hash_word(h, sig[i].comm_id);
        h = prophet_hash_word(h, sig[i].count);
        h = prophet_hash_word(h, (uint64_t)(uint32_t)sig[i].dtype | (uint64_t)(uint32_t)sig[i].op
                                                                        << 32);
        h = prophet_hash_word(h, sig[i].bytes);
    }
    return h;
}
