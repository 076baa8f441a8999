#include "startup.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "launcher_rank.h"
#include "util/log.h"
#include "mem_limit.h"
#include "self_exe.h"
#include "stop_signals.h"
#include "wait_policy.h"

#define PASS_VAR "AMPTRAIN_STARTUP_PASS" /* "2" in the restarted program */
#define STOP_VAR "AMPTRAIN_STARTUP_STOP" /* the stop signal received before it */

void (*amp_startup_pause_hook)(void);

static amp_stop_guard g_guard;

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE}; /* stop_signals.h */

static void stop_signal_set(sigset_t *s) {
    sigemptyset(s);
    for (int i = 0; i < 4; i++) sigaddset(s, stop_signals[i]);
}

/* A number from the environment (then removed from it), 0 when unset or no number. */
static long take_env(const char *name) {
    const char *v = getenv(name);
    long x = v ? strtol(v, NULL, 10) : 0;
    unsetenv(name);
    return x > 0 && x < 1024 ? x : 0;
}

/* The one restart, with r's variables: returns only when it failed. The
 * stop signals stay blocked from the check of the flag to the exec, so
 * none is lost in between: the restarted program unblocks them once its
 * handlers are in place. Its handlers start from the dispositions this
 * program started with, so the stop handlers are restored first. */
static void restart(amp_restart_env *r, char **argv) {
    if (r->n == 0) return;
    char vars[512], why[PATH_MAX + 512];
    amp_restart_env_list(r, vars, sizeof vars);
    amp_log(AMP_LOG_DEBUG, "start-up: restarting once with %s", vars);
    sigset_t stops, old;
    stop_signal_set(&stops);
    sigprocmask(SIG_BLOCK, &stops, &old);
    int sig = (int)*amp_stop_flag();
    /* one that came since the block: restoring an ignored disposition
     * below discards it, so it goes in the variable too (the restarted
     * program's handler takes a second delivery as the same request) */
    sigset_t pending;
    sigpending(&pending);
    for (int i = 0; i < 4 && !sig; i++)
        if (sigismember(&pending, stop_signals[i])) sig = stop_signals[i];
    char num[16];
    snprintf(num, sizeof num, "%d", sig);
    if (sig) setenv(STOP_VAR, num, 1);
    setenv(PASS_VAR, "2", 1);
    fflush(NULL);
    amp_stop_signals_restore(&g_guard);
    amp_restart_env_exec(r, argv, why, sizeof why);
    unsetenv(STOP_VAR);
    unsetenv(PASS_VAR);
    amp_stop_signals_install(&g_guard);
    amp_stop_signals_carry(sig);
    sigprocmask(SIG_SETMASK, &old, NULL);
    amp_log(AMP_LOG_WARN, "could not restart to set %s for the libraries (%s); going on without them",
            vars, why);
}

void amp_startup(char **argv) {
    int lvl = amp_env_log_level();
    if (lvl >= 0) amp_log_set_level(lvl);
    int rank = amp_launcher_rank();
    if (rank > 0) amp_log_set_rank(rank); /* as after MPI_Init: rank 0 speaks */
    amp_stop_signals_install(&g_guard);
    long pass = take_env(PASS_VAR);
    amp_stop_signals_carry((int)take_env(STOP_VAR));
    if (pass > 1) { /* blocked by the restart: the handlers are back */
        sigset_t stops;
        stop_signal_set(&stops);
        sigprocmask(SIG_UNBLOCK, &stops, NULL);
    }
    amp_log(AMP_LOG_DEBUG, "start-up: execution %ld", pass > 1 ? pass : 1);
    amp_self_exe_init(argv);
    if (pass <= 1 && amp_startup_pause_hook) amp_startup_pause_hook();
    amp_restart_env r = {{0}, 0};
    amp_wait_policy_prepare(&r);
    amp_mem_limit_prepare(&r);
    if (pass <= 1) restart(&r, argv); /* at most once */
}

int amp_startup_command(int train) {
    if (train) return 0;
    sigset_t stops, old;
    stop_signal_set(&stops);
    sigprocmask(SIG_BLOCK, &stops, &old);
    int sig = (int)*amp_stop_flag();
    amp_stop_signals_restore(&g_guard);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (!sig) return 0;
    fprintf(stderr, "amptrain: stopped by %s while starting; nothing was done\n",
            amp_signal_name(sig));
    return 128 + sig;
}
