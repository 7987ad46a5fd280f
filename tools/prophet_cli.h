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

/* A whole decimal number in [min, max] into *out: 0, or -1 when S is not one. */
int prophet_cli_parse_long(const char *s, long min, long max, long *out);

/* The value of option OPT as a whole number in [min, max] into *out: 0, or the usage error
 * "PROG: OPT: 'S' is not a number" or "... is out of range MIN..MAX" (PROPHET_CLI_EXIT_USAGE). */
int prophet_cli_long_opt(const char *prog, const char *opt, const char *s, long min, long max,
                         long *out);

#endif
