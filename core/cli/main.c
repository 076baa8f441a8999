/* amptrain: mixed-precision training with plugin precision policies and
 * loss scalers. */
#include "cli/cli.h"

int main(int argc, char **argv) { return amp_cli_main(argc, argv); }
