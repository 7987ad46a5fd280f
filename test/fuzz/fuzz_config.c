/* Fuzz target: the PROPHET_* parser. The input is a list of NAME=VALUE lines, given to the parser
 * as its environment; every knob is looked up by name. Invariants checked: the parser never
 * crashes, returns a count >= 0, and every field it returns is within its documented range. */
#include "prophet/config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct fuzz_env {
    char *text; /* lines, each terminated by NUL instead of newline */
    size_t size;
} fuzz_env_t;

static const char *fuzz_lookup(const char *name, void *ctx)
{
    fuzz_env_t *env = ctx;
    size_t nl = strlen(name);
    for (size_t off = 0; off < env->size;) {
        char *line = env->text + off;
        size_t len = strlen(line);
        if (len > nl && !strncmp(line, name, nl) && line[nl] == '=')
            return line + nl + 1;
        off += len + 1;
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_env_t env;
    prophet_config_t cfg;
    char errs[512];
    int n;

    env.text = malloc(size + 1);
    if (!env.text)
        return 0;
    memcpy(env.text, data, size);
    env.text[size] = '\0';
    env.size = size;
    for (size_t i = 0; i < size; i++) /* one value per line */
        if (env.text[i] == '\n')
            env.text[i] = '\0';
    n = prophet_config_parse(&cfg, fuzz_lookup, &env, errs, sizeof(errs));
    if (n < 0 || cfg.stall_ms < 1 || cfg.stall_ms > 60000 || cfg.learn_iters < 2 ||
        cfg.learn_iters > 1000 || cfg.replan_iters < 1 || cfg.log_iter_end <= cfg.log_iter_begin ||
        cfg.bandwidth_Bps < 0 || cfg.fusion_bytes < 1 || cfg.bucket_bytes < 1 ||
        (unsigned)cfg.policy >= PROPHET_POLICY_COUNT ||
        memchr(cfg.log_dir, 0, sizeof(cfg.log_dir)) == NULL)
        abort();
    free(env.text);
    return 0;
}
