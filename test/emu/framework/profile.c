/* Loading and validating a prophet-profile/1 file with jansson. */
#include "profile.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *path, const char *what)
{
    fprintf(stderr, "prophet-emu: profile %s: %s\n", path, what);
    return -1;
}

static int number(json_t *obj, const char *key, double *out)
{
    json_t *v = json_object_get(obj, key);

    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return isfinite(*out) ? 0 : -1;
}

static int load_tensor(const char *path, json_t *jt, size_t i, struct emu_tensor *t)
{
    char what[160];
    json_t *name = json_object_get(jt, "name");
    json_t *elements = json_object_get(jt, "elements");
    json_t *bytes = json_object_get(jt, "bytes");
    json_t *priority = json_object_get(jt, "priority");

    if (!json_is_object(jt) || !json_is_string(name) || !json_is_integer(elements) ||
        json_integer_value(elements) <= 0 || number(jt, "ready_us", &t->ready_us) ||
        t->ready_us < 0) {
        snprintf(what, sizeof(what),
                 "tensor %zu: needs name, elements > 0 (integer) and ready_us >= 0", i);
        return fail(path, what);
    }
    t->elements = (uint64_t)json_integer_value(elements);
    if (json_is_integer(bytes) && (uint64_t)json_integer_value(bytes) != t->elements * 4) {
        snprintf(what, sizeof(what), "tensor %zu (%s): bytes != 4 * elements (only fp32)", i,
                 json_string_value(name));
        return fail(path, what);
    }
    t->priority = json_is_integer(priority) ? (int)json_integer_value(priority) : (int)i;
    t->name = strdup(json_string_value(name));
    return t->name ? 0 : fail(path, "out of memory");
}

static int load_root(const char *path, json_t *root, struct emu_profile *p)
{
    json_t *fmt = json_object_get(root, "format");
    json_t *model = json_object_get(root, "model");
    json_t *bs = json_object_get(root, "batch_size");
    json_t *tensors = json_object_get(root, "tensors");
    size_t i;

    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "prophet-profile/1"))
        return fail(path, "format is not \"prophet-profile/1\"");
    if (number(root, "forward_us", &p->forward_us) || p->forward_us < 0 ||
        number(root, "backward_us", &p->backward_us) || p->backward_us < 0)
        return fail(path, "needs forward_us and backward_us >= 0");
    if (!json_is_array(tensors) || json_array_size(tensors) == 0)
        return fail(path, "needs a non-empty \"tensors\" array");
    p->model = strdup(json_is_string(model) ? json_string_value(model) : "unknown");
    p->batch_size = json_is_integer(bs) ? (int)json_integer_value(bs) : 0;
    p->n = json_array_size(tensors);
    p->t = calloc(p->n, sizeof(*p->t));
    if (!p->model || !p->t)
        return fail(path, "out of memory");
    for (i = 0; i < p->n; i++)
        if (load_tensor(path, json_array_get(tensors, i), i, &p->t[i]))
            return -1;
    return 0;
}

int emu_profile_load(const char *path, struct emu_profile *p)
{
    json_error_t jerr;
    json_t *root;
    int err;

    memset(p, 0, sizeof(*p));
    root = json_load_file(path, 0, &jerr);
    if (!root) {
        char what[256];
        snprintf(what, sizeof(what), "%s (line %d)", jerr.text, jerr.line);
        return fail(path, what);
    }
    err = load_root(path, root, p);
    json_decref(root);
    if (err)
        emu_profile_free(p);
    return err;
}

void emu_profile_free(struct emu_profile *p)
{
    if (p->t)
        for (size_t i = 0; i < p->n; i++)
            free(p->t[i].name);
    free(p->t);
    free(p->model);
    memset(p, 0, sizeof(*p));
}
