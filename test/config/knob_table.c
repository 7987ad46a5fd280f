/* prophet-knob-table: README's knob table (Markdown), made from the one knob table PROPHET_KNOBS
 * (include/prophet/config.h) through prophet_config_knobs(). scripts/knob-table.sh writes it into
 * README.md or checks that README.md has it (ctest config.readme_knobs). */
#include "prophet/config.h"

#include <stdio.h>
#include <string.h>

/* What a knob accepts, from its kind and range. */
static void accepted(const prophet_knob_t *k, char *buf, size_t len)
{
    char lo[32], hi[32];
    size_t used = 0;

    prophet_config_number(k->lo, lo, sizeof(lo));
    prophet_config_number(k->hi, hi, sizeof(hi));
    switch (k->kind) {
    case PROPHET_KNOB_BOOL:
        snprintf(buf, len, "`0` or `1` (also `false`/`true`, `no`/`yes`, `off`/`on`)");
        return;
    case PROPHET_KNOB_ENUM:
    case PROPHET_KNOB_POLICY:
        for (int i = 0; i < k->n_names && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, "%s`%s`", i ? ", " : "", k->names[i]);
        return;
    case PROPHET_KNOB_U32:
        snprintf(buf, len, "an integer, %u to %u", (unsigned)k->lo, (unsigned)k->hi);
        return;
    case PROPHET_KNOB_BYTES:
        snprintf(buf, len, "a size >= %s: `4096`, `64KiB`, `25MiB`, `1GB`, ...", lo);
        return;
    case PROPHET_KNOB_RATE:
        snprintf(buf, len, "a rate > 0: `10Gbit`, `25Gbps`, `1.25GB`, `100MB/s`, ...");
        return;
    case PROPHET_KNOB_USEC:
        snprintf(buf, len, "%s to %s", lo, hi);
        return;
    case PROPHET_KNOB_PATH:
        snprintf(buf, len, "a path, 1 to %d characters", PROPHET_PATH_MAX - 1);
        return;
    case PROPHET_KNOB_ITERS:
        snprintf(buf, len, "`A:B`, integers, 0 <= A < B");
        return;
    }
    snprintf(buf, len, "?");
}

int main(void)
{
    int n = 0;
    const prophet_knob_t *k = prophet_config_knobs(&n);
    char acc[256];

    printf("| variable | default | accepts | meaning |\n|---|---|---|---|\n");
    for (int i = 0; i < n; i++, k++) {
        int word = !strcmp(k->shown, "unset") || !strcmp(k->shown, "fitted") ||
                   !strcmp(k->shown, "stderr");
        accepted(k, acc, sizeof(acc));
        printf("| `%s` | %s%s%s | %s | %s |\n", k->name, word ? "" : "`", k->shown, word ? "" : "`",
               acc, k->help);
    }
    return 0;
}
