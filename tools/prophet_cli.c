/* The command-line pieces every Prophet program shares (prophet_cli.h). */
#include "prophet_cli.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PROPHET_VERSION_STRING
#error "PROPHET_VERSION_STRING is defined by the top-level CMakeLists.txt"
#endif

void prophet_cli_version(const char *prog)
{
    printf("%s (%s) %s\n", prog, PROPHET_CLI_PRODUCT, PROPHET_VERSION_STRING);
}

static int prophet_cli_try(const char *prog)
{
    fprintf(stderr, "Try '%s --help'.\n", prog);
    return PROPHET_CLI_EXIT_USAGE;
}

int prophet_cli_usage_error(const char *prog, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return prophet_cli_try(prog);
}

int prophet_cli_bad_value(const char *prog, const char *opt, const char *value, const char *what)
{
    return prophet_cli_usage_error(prog, "%s: '%s' is not %s", opt, value, what);
}

/* Does LONGOPTS name the option written as "--NAME" or "--NAME=..." in ARG? */
static const struct option *prophet_cli_find(const struct option *longopts, const char *arg)
{
    size_t n = strcspn(arg + 2, "=");
    for (const struct option *o = longopts; o && o->name; o++)
        if (strlen(o->name) == n && !strncmp(o->name, arg + 2, n))
            return o;
    return NULL;
}

int prophet_cli_getopt_error(const char *prog, int c, char **argv, const struct option *longopts)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    int is_long = !strncmp(arg, "--", 2);
    int n = is_long ? (int)strcspn(arg, "=") : 2;

    if (c == ':')
        return prophet_cli_usage_error(prog, "option '%.*s' needs a value", n, arg);
    if (is_long && arg[n] == '=' && prophet_cli_find(longopts, arg))
        return prophet_cli_usage_error(prog, "option '%.*s' takes no value", n, arg);
    if (is_long)
        return prophet_cli_usage_error(prog, "unknown option '%.*s'", n, arg);
    if (optopt)
        return prophet_cli_usage_error(prog, "unknown option '-%c'", optopt);
    return prophet_cli_usage_error(prog, "unknown option '%s'", arg);
}

/* Does S begin as a decimal number does (a digit, or '-' or '.' and a digit)? strtol and strtod
 * would also take leading blanks, a '+', "nan" and "inf". */
static int prophet_cli_numeric_start(const char *s)
{
    return isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1])) ||
           (s[0] == '.' && isdigit((unsigned char)s[1]));
}

int prophet_cli_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    long v;

    if (!prophet_cli_numeric_start(s) || s[0] == '.')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (*end || errno || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int prophet_cli_parse_double(const char *s, double min, double max, int min_open, double *out)
{
    char *end;
    double v;

    if (!prophet_cli_numeric_start(s))
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (*end || errno || !isfinite(v) || v > max || v < min || (min_open && v == min))
        return -1;
    *out = v;
    return 0;
}

int prophet_cli_long_value(const char *prog, const char *opt, const char *s, long min, long max,
                           const char *what, long *out)
{
    char range[64];

    if (prophet_cli_parse_long(s, min, max, out) == 0)
        return 0;
    if (!what) {
        snprintf(range, sizeof(range), "an integer %ld..%ld", min, max);
        what = range;
    }
    return prophet_cli_bad_value(prog, opt, s, what);
}

int prophet_cli_double_value(const char *prog, const char *opt, const char *s, double min,
                             double max, int min_open, const char *what, double *out)
{
    char range[96];

    if (prophet_cli_parse_double(s, min, max, min_open, out) == 0)
        return 0;
    if (!what) {
        snprintf(range, sizeof(range), "a number %s %g and <= %g", min_open ? ">" : ">=", min, max);
        what = range;
    }
    return prophet_cli_bad_value(prog, opt, s, what);
}

int prophet_cli_long_opt(const char *prog, const char *opt, const char *s, long min, long max,
                         long *out)
{
    long any;

    if (prophet_cli_parse_long(s, min, max, out) == 0)
        return 0;
    if (prophet_cli_parse_long(s, LONG_MIN, LONG_MAX, &any) != 0)
        return prophet_cli_bad_value(prog, opt, s, "a number");
    return prophet_cli_usage_error(prog, "%s: '%s' is out of range %ld..%ld", opt, s, min, max);
}
