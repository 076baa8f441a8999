/* `amptrain plugins [-v]`: every plugin on the search path, and with -v
 * every rejected candidate and why. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "plugins/loader.h"
#include "process/self_exe.h"

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

static const char plugins_usage[] =
    "usage: amptrain plugins [-v]\n"
    "  lists the precision and scaler plugins found (AMPTRAIN_PLUGIN_PATH, then the\n"
    "  built-in ones beside the executable)\n"
    "  -v, --verbose  also the search order, each plugin's keys and every file rejected,\n"
    "                 with the reason\n";

static int plugins_opt(void *user, int opt, const char *arg) {
    switch (opt) {
    case 'v':
        *(int *)user = 1;
        return 0;
    case 'h':
        fputs(plugins_usage, stdout);
        return 1;
    case 1:
        fprintf(stderr, "amptrain plugins: unexpected argument '%s'\n%s", arg, plugins_usage);
        return -1;
    }
    return -1;
}

int amp_cmd_plugins(int argc, char **argv) {
    static const struct option opts[] = {{"verbose", no_argument, NULL, 'v'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int verbose = 0;
    int rc = amp_cli_parse("plugins", argc, argv, "vh", opts, plugins_opt, &verbose, plugins_usage);
    if (rc != 0) return rc > 0 ? 0 : 2;
    amp_plugin_dirs sd;
    if (amp_plugin_search_dirs(&sd) != 0) {
        fprintf(stderr, "amptrain: out of memory listing the plugin folders\n");
        return 1;
    }
    char **dirs = sd.dir;
    int nd = sd.n;
    if (verbose) {
        printf("search order (AMPTRAIN_PLUGIN_PATH, then beside the executable):\n");
        for (int i = 0; i < nd; i++) printf("  %s\n", dirs[i]);
        if (nd == 0) printf("  (no directory exists)\n");
        const char *why = "";
        if (!amp_self_exe(&why)) printf("  (none beside the executable: %s)\n", why);
    }
    printf("%-10s %-12s %-8s %-5s %s\n", "KIND", "NAME", "VERSION", "ABI", "PATH");
    int found = 0;
    for (int d = 0; d < nd; d++) {
        struct dirent **names = NULL;
        int n = scandir(dirs[d], &names, NULL, by_name);
        for (int i = 0; i < n; i++) {
            const char *fn = names[i]->d_name;
            if (ends_with(fn, ".so")) {
                char path[PATH_MAX + 300];
                snprintf(path, sizeof path, "%s/%s", dirs[d], fn);
                amp_plugin_info e;
                char why[1024];
                int ok = amp_plugin_probe(path, &e, why, sizeof why) == 0;
                char want[256];
                if (ok) amp_plugin_file_name(want, sizeof want, (amp_plugin_kind)e.kind, e.name);
                /* `train` finds plugins by file name: a file named for
                 * another kind or name cannot be used as listed. */
                if (ok && strcmp(fn, want) != 0) {
                    snprintf(why, sizeof why, "%s: declares a %s plugin '%s' but is named %s; rename "
                             "it to %s", path, amp_plugin_kind_name((amp_plugin_kind)e.kind), e.name,
                             fn, want);
                    ok = 0;
                }
                if (ok) {
                    char abi[16];
                    snprintf(abi, sizeof abi, "%u.%u", e.abi_major, e.abi_minor);
                    printf("%-10s %-12s %-8s %-5s %s\n", amp_plugin_kind_name((amp_plugin_kind)e.kind),
                           e.name, e.version, abi, path);
                    if (verbose && e.description[0]) printf("%-10s   %s\n", "", e.description);
                    if (verbose && e.keys && e.keys[0]) printf("%-10s   keys: %s\n", "", e.keys);
                    found++;
                } else if (verbose) {
                    printf("%-10s %s\n", "rejected", why);
                }
            }
            free(names[i]);
        }
        free(names);
    }
    amp_plugin_dirs_free(&sd);
    if (!found) fprintf(stderr, "amptrain: no plugins found; set AMPTRAIN_PLUGIN_PATH\n");
    return found ? 0 : 1;
}
