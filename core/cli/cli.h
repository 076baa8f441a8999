/* The amptrain subcommands; each returns the process exit code
 * (0 ok, 1 runtime failure, 2 usage or config error). */
#ifndef AMP_CLI_H
#define AMP_CLI_H

/* Runs `amptrain <command> ...` (argv[0] is the program). */
int amp_cli_main(int argc, char **argv);

/* Puts /dev/null (read-only) on a closed stdout or stderr, so no file the
 * run opens takes their numbers; writes to them still fail. */
void amp_cli_hold_std_fds(void);
/* fflush(stdout) for a command that must show its text now (before a
 * message on stderr); a failure's reason is kept for the close. 0 or -1. */
int amp_cli_flush_stdout(void);
/* Flushes and closes stdout: `code` when all the text reached it, else a
 * message on stderr and `code` or, for 0, 1. Called once, at the end. */
int amp_cli_close_stdout(int code);

int amp_cmd_train(int argc, char **argv);
int amp_cmd_plugins(int argc, char **argv);
int amp_cmd_ab(int argc, char **argv);
int amp_cmd_checkpoints(int argc, char **argv);
int amp_cmd_new_plugin(int argc, char **argv);
int amp_cmd_sample(int argc, char **argv);
int amp_cmd_settings(int argc, char **argv);
int amp_cmd_export(int argc, char **argv);
int amp_cmd_tokenize(int argc, char **argv);

#endif
