/* Argument parsing shared by the commands: getopt_long with amptrain's
 * messages. Long options may be written `--out DIR` or `--out=DIR`, in any
 * order with the positional arguments; `--` ends the options; unique
 * prefixes of long options are accepted (getopt_long's rule: `--res`). */
#ifndef AMP_CLI_ARGS_H
#define AMP_CLI_ARGS_H

#include <getopt.h>

/* Called for each option (opt = its val, arg = its argument or NULL) and
 * each positional argument (opt = 1, arg = the argument), in command-line
 * order. Returns 0 to go on, 1 to stop with success (e.g. after printing
 * --help), -1 to stop with a usage error (after printing why). */
typedef int (*amp_cli_fn)(void *user, int opt, const char *arg);

/* Parses argv[1..argc) of command `cmd` (argv[0] is the command's name).
 * shortopts lists the short options as getopt does ("hv"). An unknown or
 * ambiguous option, a missing or empty option argument is a usage error:
 * "amptrain CMD: <what>" and then `usage` on stderr. Returns 0, 1 (fn
 * stopped with success) or -1 (usage error). */
int amp_cli_parse(const char *cmd, int argc, char **argv, const char *shortopts,
                  const struct option *longopts, amp_cli_fn fn, void *user, const char *usage);

#endif
