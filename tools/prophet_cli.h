/* What the command line of every Prophet program shares: --version and the usage errors.
 *
 *   prophet-X (Prophet for NCCL) 0.9.0                    --version, on stdout, exit 0
 *   prophet-X: unknown option '--foo'                     a usage error, on stderr, exit 2:
 *   Try 'prophet-X --help'.                               one line naming the problem, then this
 */
#ifndef PROPHET_CLI_H
#define PROPHET_CLI_H

#include <getopt.h>

#define PROPHET_CLI_EXIT_USAGE 2
#define PROPHET_CLI_PRODUCT "Prophet for NCCL"

/* Prints "PROG (Prophet for NCCL) VERSION" on stdout. */
void prophet_cli_version(const char *prog);

/* Prints "PROG: MESSAGE" and "Try 'PROG --help'." on stderr. Returns PROPHET_CLI_EXIT_USAGE. */
int prophet_cli_usage_error(const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A value an option does not take: "PROG: OPT: 'VALUE' is not WHAT" (WHAT: e.g. "a number",
 * "an integer 1..64"), as a usage error. Returns PROPHET_CLI_EXIT_USAGE. */
int prophet_cli_bad_value(const char *prog, const char *opt, const char *value, const char *what);

/* The usage error for what getopt_long() (opterr = 0, optstring starting with ':') returned as
 * C = '?' (an unknown option, or a value given to an option that takes none) or ':' (a value
 * missing), read from argv[optind - 1] and optopt. Returns PROPHET_CLI_EXIT_USAGE. */
int prophet_cli_getopt_error(const char *prog, int c, char **argv, const struct option *longopts);

/* The values of options. Every tool reads a number given to an option through these, so that
 * they all take the same forms (decimal digits, a leading '-' where the range allows it; for a
 * real, what strtod takes, finite) and say the same thing about a value they refuse. */

/* A whole decimal number in [min, max] into *out: 0, or -1 when S is not one. */
int prophet_cli_parse_long(const char *s, long min, long max, long *out);

/* A finite real number in [min, max] (min_open: in (min, max]) into *out: 0, or -1. */
int prophet_cli_parse_double(const char *s, double min, double max, int min_open, double *out);

/* The value S of option OPT as a whole number in [min, max] into *out: 0, or the usage error
 * "PROG: OPT: 'S' is not WHAT" (WHAT NULL: "an integer MIN..MAX"; PROPHET_CLI_EXIT_USAGE). */
int prophet_cli_long_value(const char *prog, const char *opt, const char *s, long min, long max,
                           const char *what, long *out);

/* The value S of option OPT as a real number in [min, max] (min_open: (min, max]) into *out: 0, or
 * the usage error "PROG: OPT: 'S' is not WHAT" (WHAT NULL: "a number > MIN and <= MAX", or ">= MIN"
 * when min is not open). */
int prophet_cli_double_value(const char *prog, const char *opt, const char *s, double min,
                             double max, int min_open, const char *what, double *out);

/* As prophet_cli_long_value, the usage error telling the two cases apart: "PROG: OPT: 'S' is not
 * a number" or "PROG: OPT: 'S' is out of range MIN..MAX" (prophet-bwmon's). */
int prophet_cli_long_opt(const char *prog, const char *opt, const char *s, long min, long max,
                         long *out);

#endif
