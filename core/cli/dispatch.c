/* The command dispatcher: amptrain's main() is this function, and so is
 * that of the test build that registers test-only models. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amptrain/plugin.h"
#include "cli/cli.h"
#include "log.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: amptrain <command> [args]\n"
            "\n"
            "commands:\n"
            "  train CONFIG.ini [--set section.key=value]... [--out DIR | --resume DIR]\n"
            "                       train the model the config describes (--resume: continue\n"
            "                       the run in DIR from its newest valid checkpoint)\n"
            "  checkpoints DIR      list and verify the checkpoints of the run in DIR\n"
            "  ab A.ini B.ini [C.ini ...] [--seeds N] [--set section.key=value]...\n"
            "     [--allow-diff] [--out DIR]\n"
            "                       A/B test: run every config with the same seeds and\n"
            "                       write DIR/ab.json and DIR/report.html\n"
            "  plugins [-v]         list the precision and scaler plugins found\n"
            "  new-plugin scaler|precision NAME [DIR]\n"
            "                       write a plugin folder that builds against the installed SDK\n"
            "  --version            print the version\n"
            "\n"
            "exit codes: 0 ok, 1 runtime failure, 2 usage or config error\n");
}

int amp_cli_main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    /* AMPTRAIN_LOG=debug shows each layer's resolved precision and more. */
    const char *lvl = getenv("AMPTRAIN_LOG");
    if (lvl) {
        static const char *const names[] = {"error", "warn", "info", "debug"};
        for (int i = 0; i < 4; i++)
            if (strcmp(lvl, names[i]) == 0) amp_log_set_level(i);
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "train") == 0) return amp_cmd_train(argc - 1, argv + 1);
    if (strcmp(cmd, "plugins") == 0) return amp_cmd_plugins(argc - 1, argv + 1);
    if (strcmp(cmd, "ab") == 0) return amp_cmd_ab(argc - 1, argv + 1);
    if (strcmp(cmd, "checkpoints") == 0) return amp_cmd_checkpoints(argc - 1, argv + 1);
    if (strcmp(cmd, "new-plugin") == 0) return amp_cmd_new_plugin(argc - 1, argv + 1);
    if (strcmp(cmd, "--version") == 0) {
        printf("amptrain %s (plugin ABI %d.%d)\n", AMP_VERSION, AMP_PLUGIN_ABI_MAJOR, AMP_PLUGIN_ABI_MINOR);
        return 0;
    }
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "amptrain: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
