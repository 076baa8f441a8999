/* The one start-up step of the amptrain CLI, the first thing main does:
 *   - reads AMPTRAIN_LOG, and the rank an MPI launcher gave (launcher_rank.h);
 *   - installs the stop handlers (stop_signals.h), so a SIGINT or SIGTERM
 *     while amptrain starts is remembered, not lost;
 *   - finds the executable (self_exe.h);
 *   - gathers every variable the libraries read while the program loads
 *     (wait_policy.h: OMP_WAIT_POLICY, OPENBLAS_THREAD_TIMEOUT; mem_limit.h:
 *     OPENBLAS_NUM_THREADS under a tight address-space limit) and, when any
 *     was unset, re-executes the program once with all of them. The
 *     restarted program knows it is one (AMPTRAIN_STARTUP_PASS=2 in its
 *     environment, removed at once) and never restarts again; a stop signal
 *     received before the restart goes with it (AMPTRAIN_STARTUP_STOP), and
 *     one arriving during the exec stays pending (blocked) until the
 *     restarted program's handlers are in place.
 * AMPTRAIN_LOG=debug says which execution each is ("start-up: execution N"). */
#ifndef AMP_STARTUP_H
#define AMP_STARTUP_H

/* At the start of main. Returns only in the process that runs the command
 * (the restart, when one was needed and possible; a restart that fails is a
 * warning, and the program goes on without the variables). */
void amp_startup(char **argv);

/* Before the command runs: train keeps the start-up's stop handlers (the
 * trainer acts on a stop received while starting: 128 + signal, nothing
 * written); any other command gets back the dispositions amptrain started
 * with. Returns 128 + signal when a stop came while starting (and says so),
 * else 0. */
int amp_startup_command(int train);

/* Called, when set, in the first execution before anything is gathered
 * (test builds set it to hold the start-up still while a signal is sent). */
extern void (*amp_startup_pause_hook)(void);

#endif
