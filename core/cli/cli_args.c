#include "cli/cli_args.h"

#include <stdio.h>
#include <string.h>

/* The name an option was given as, for messages: "--out" or "-v". */
static void opt_name(char *buf, size_t cap, const struct option *longopts, int val,
                     const char *given) {
    if (given && given[0] == '-' && given[1] == '-') {
        size_t n = strcspn(given, "=");
        snprintf(buf, cap, "%.*s", (int)n, given);
        return;
    }
    for (const struct option *o = longopts; o && o->name; o++)
        if (o->val == val && !o->flag) {
            snprintf(buf, cap, "--%s", o->name);
            return;
        }
    snprintf(buf, cap, "-%c", val);
}

int amp_cli_parse(const char *cmd, int argc, char **argv, const char *shortopts,
                  const struct option *longopts, amp_cli_fn fn, void *user, const char *usage) {
    /* "-": positional arguments come back in order, as option 1, whatever
     * POSIXLY_CORRECT says; ":": a missing argument is reported as ':'. */
    char spec[64];
    snprintf(spec, sizeof spec, "-:%s", shortopts);
    optind = 0; /* getopt's state is global: start over for each command */
    opterr = 0;
    int rc = 0;
    while (rc == 0) {
        int prev = optind ? optind : 1;
        int c = getopt_long(argc, argv, spec, longopts, NULL);
        if (c == -1) break;
        const char *given = prev < argc ? argv[prev] : NULL;
        char name[64];
        if (c == '?') {
            const char *bad = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
            if (optopt && !(bad[0] == '-' && bad[1] == '-'))
                fprintf(stderr, "amptrain %s: unknown option '-%c'\n%s", cmd, optopt, usage);
            else
                fprintf(stderr, "amptrain %s: unknown or ambiguous option '%s'\n%s", cmd, bad,
                        usage);
            return -1;
        }
        if (c == ':') {
            opt_name(name, sizeof name, longopts, optopt, given);
            fprintf(stderr, "amptrain %s: %s needs a value\n%s", cmd, name, usage);
            return -1;
        }
        if (c != 1 && optarg && !optarg[0]) {
            opt_name(name, sizeof name, longopts, c, given);
            fprintf(stderr, "amptrain %s: %s needs a value, not an empty string\n%s", cmd, name,
                    usage);
            return -1;
        }
        rc = fn(user, c, optarg);
    }
    /* After "--": the rest is positional. */
    for (int i = optind; rc == 0 && i < argc; i++) rc = fn(user, 1, argv[i]);
    return rc;
}
