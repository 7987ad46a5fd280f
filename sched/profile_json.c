/* prophet-profile/1 reader: {"format": "prophet-profile/1", "forward_us": F, "backward_us": B,
 * "tensors": [{"name", "elements", "bytes", "priority", "ready_us"}, ...]} with tensors in the
 * order backward produces them. bytes and ready_us are required; elements defaults to bytes / 4,
 * priority to n - 1 - index (backward order reversed). Calls get comm 0, fp32, sum. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sched_internal.h"

#define NCCL_FLOAT32 7 /* ncclFloat32 */
#define NCCL_SUM 0     /* ncclSum */

static int fail(char *errbuf, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (errbuf && errlen) {
        va_start(ap, fmt);
        vsnprintf(errbuf, errlen, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static int get_number(json_t *obj, const char *key, double *out)
{
    json_t *v = json_object_get(obj, key);

    if (!v || !json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return isfinite(*out) ? 0 : -1;
}

int prophet_profile_from_json(const char *text, size_t len, prophet_profile_t *out, char *errbuf,
                              size_t errlen)
{
    json_error_t jerr;
    json_t *root, *fmt, *tensors;
    double v;
    size_t n, i;
    int err = 0;
    uint8_t seen[PROPHET_MAX_CALLS] = {0};

    if (!text || !out)
        return fail(errbuf, errlen, "no profile text");
    root = json_loadb(text, len, 0, &jerr);
    if (!root)
        return fail(errbuf, errlen, "JSON error at line %d: %s", jerr.line, jerr.text);
    memset(out, 0, sizeof(*out));
    fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "prophet-profile/1") != 0) {
        err = fail(errbuf, errlen, "\"format\" is not \"prophet-profile/1\"");
        goto out;
    }
    tensors = json_object_get(root, "tensors");
    n = json_is_array(tensors) ? json_array_size(tensors) : 0;
    if (n == 0 || n > PROPHET_MAX_CALLS) {
        err = fail(errbuf, errlen, "\"tensors\" must be an array of 1 to %d entries",
                   PROPHET_MAX_CALLS);
        goto out;
    }
    out->n_calls = (uint32_t)n;
    for (i = 0; i < n; i++) {
        json_t *t = json_array_get(tensors, i);
        double bytes, ready, elements, prio;

        if (!json_is_object(t) || get_number(t, "bytes", &bytes) || bytes < 1 || bytes > 1e15 ||
            get_number(t, "ready_us", &ready) || ready < 0) {
            err = fail(errbuf, errlen, "tensor %zu: needs \"bytes\" >= 1 and \"ready_us\" >= 0", i);
            goto out;
        }
        if (get_number(t, "elements", &elements) || elements < 0)
            elements = floor(bytes / 4);
        if (get_number(t, "priority", &prio))
            prio = (double)(n - 1 - i);
        if (prio < 0 || prio >= (double)n || prio != floor(prio) || seen[(size_t)prio]) {
            err = fail(errbuf, errlen,
                       "tensor %zu: \"priority\" must be a distinct integer "
                       "in 0..%zu",
                       i, n - 1);
            goto out;
        }
        seen[(size_t)prio] = 1;
        out->sig[i].comm_id = 0;
        out->sig[i].count = (uint64_t)elements;
        out->sig[i].dtype = NCCL_FLOAT32;
        out->sig[i].op = NCCL_SUM;
        out->sig[i].bytes = (uint64_t)bytes;
        out->ready_us[i] = ready;
        out->spread_us[i] = 0;
        out->priority[i] = (uint32_t)prio;
        if (ready > out->backward_us)
            out->backward_us = ready;
    }
    if (get_number(root, "forward_us", &v) || v < 0) {
        err = fail(errbuf, errlen, "\"forward_us\" must be a number >= 0");
        goto out;
    }
    out->forward_us = v;
    if (get_number(root, "backward_us", &v) == 0 && v > out->backward_us)
        out->backward_us = v;
    out->iteration_us = out->forward_us + out->backward_us;
    err = prophet_steps_detect_robust(out->ready_us, out->n_calls, 2.0, out->steps, &out->n_steps);
    if (err)
        fail(errbuf, errlen, "step detection failed");
out:
    json_decref(root);
    return err;
}
