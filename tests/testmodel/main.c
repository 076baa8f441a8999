/* amptrain with the test-only models registered: the same dispatcher, so
 * train, ab (whose runs re-execute this binary), checkpoints and --resume
 * run through the model interface for a model that is not the MLP. */
#include <stdio.h>

#include "cli/cli.h"
#include "model.h"

extern const amp_model_ops amp_test_model_twolayer;
extern const amp_model_ops amp_test_model_kitnet;

int main(int argc, char **argv) {
    if (amp_model_register(&amp_test_model_twolayer) != 0 ||
        amp_model_register(&amp_test_model_kitnet) != 0) {
        fprintf(stderr, "cannot register the test models\n");
        return 1;
    }
    return amp_cli_main(argc, argv);
}
