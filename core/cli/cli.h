/* The amptrain subcommands; each returns the process exit code
 * (0 ok, 1 runtime failure, 2 usage or config error). */
#ifndef AMP_CLI_H
#define AMP_CLI_H

/* Runs `amptrain <command> ...` (argv[0] is the program). */
int amp_cli_main(int argc, char **argv);

int amp_cmd_train(int argc, char **argv);
int amp_cmd_plugins(int argc, char **argv);
int amp_cmd_ab(int argc, char **argv);
int amp_cmd_checkpoints(int argc, char **argv);
int amp_cmd_new_plugin(int argc, char **argv);
int amp_cmd_sample(int argc, char **argv);
int amp_cmd_settings(int argc, char **argv);
int amp_cmd_export(int argc, char **argv);

#endif
