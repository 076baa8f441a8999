/* amptrain with the test-only models and the INT8 test number-format
 * family (tests/testfamily/) registered: the same dispatcher, so
 * train, ab (whose runs re-execute this binary), checkpoints and --resume
 * run through the model interface for a model that is not the MLP. With
 * AMP_TEST_STARTUP_PAUSE=S set, the start-up holds still for up to S
 * seconds before its restart, until a stop signal comes, after saying
 * "start-up paused" on stderr (tests/startup/signal.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli/cli.h"
#include "formats/family.h"
#include "model.h"
#include "process/startup.h"
#include "process/stop_signals.h"
#include "../testfamily/int8.h"

static void pause_startup(void) {
    long polls = strtol(getenv("AMP_TEST_STARTUP_PAUSE"), NULL, 10) * 100;
    fputs("start-up paused\n", stderr);
    struct timespec ms10 = {0, 10000000};
    for (long i = 0; i < polls && !*amp_stop_flag(); i++) nanosleep(&ms10, NULL);
}

extern const amp_model_ops amp_test_model_twolayer;
extern const amp_model_ops amp_test_model_kitnet;

int main(int argc, char **argv) {
    if (amp_model_register(&amp_test_model_twolayer) != 0 ||
        amp_model_register(&amp_test_model_kitnet) != 0 ||
        amp_format_family_register(&amp_test_family_int8) != 0) {
        fprintf(stderr, "cannot register the test models and number-format family\n");
        return 1;
    }
    if (getenv("AMP_TEST_STARTUP_PAUSE")) amp_startup_pause_hook = pause_startup;
    return amp_cli_main(argc, argv);
}
