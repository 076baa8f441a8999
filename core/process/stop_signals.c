#include "stop_signals.h"

#include <string.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/out_file.h"

/* SIGINT, SIGTERM, SIGHUP (a closed terminal) and SIGPIPE (`train ... |
 * head -1`): remembered here, acted on after the current step (a checkpoint,
 * then exit 128 + signal). A second stop signal stops the process at once,
 * after removing the temporaries it was writing (checkpoint writes are
 * atomic, so that is safe); a repeated SIGPIPE never does, since every write
 * to the closed pipe raises one (the write then fails with EPIPE, which the
 * progress output ignores). SIGHUP or SIGPIPE ignored when the run started
 * (nohup, a parent that handles EPIPE) stay ignored; SIGINT and SIGTERM are
 * always caught, also in a background job of a script (which starts with
 * SIGINT ignored), so that `kill -INT` stops it with a checkpoint. */
static volatile sig_atomic_t g_stop_signal;
static double g_stop_time; /* amp_clock_s when the first stop signal came (0: not yet) */

/* 1 once a handler has claimed the first stop (a lock-free atomic, safe in
 * a handler): signals to a process reach whichever thread has them
 * unblocked, so two handlers can run at once, and only one may be first. */
static int g_stop_claimed;

static double since_stop_s(void) {
    if (g_stop_time == 0.0) return 0.0; /* being set now */
    return amp_clock_s() - g_stop_time;
}

/* 1 once the training loop runs (a stop then checkpoints), and whether this
 * process speaks for the run (rank 0) */
static volatile sig_atomic_t g_training, g_quiet;

/* Says at once what the first signal will do: the step or evaluation under
 * way may take long, and silence looks like a hang. write(2) only: this
 * runs in the handler. */
static void say_stopping(int sig) {
    static const char *const names[] = {[SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT",
                                        [SIGPIPE] = "SIGPIPE", [SIGTERM] = "SIGTERM"};
    const char *name = sig > 0 && sig <= SIGTERM && names[sig] ? names[sig] : "a signal";
    const char *what = g_training
        ? ": stopping after the current step (an evaluation under way stops at its next batch), "
          "with a checkpoint; a second signal stops at once without one\n"
        : ": stopping before the first step; a second signal stops at once\n";
    if (g_quiet || sig == SIGPIPE) return; /* SIGPIPE: stderr may be that pipe */
    ssize_t w = write(2, "amptrain: ", 10);
    w = write(2, name, strlen(name));
    w = write(2, what, strlen(what));
    (void)w;
}

static void on_stop_signal(int sig) {
    int unclaimed = 0;
    if (__atomic_compare_exchange_n(&g_stop_claimed, &unclaimed, 1, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST)) {
        g_stop_signal = sig;
        g_stop_time = amp_clock_s();
        say_stopping(sig);
        return;
    }
    if (sig == SIGPIPE) return;
    /* The same signal again within half a second is one request delivered
     * twice (mpirun's launcher, a terminal and its process group), not a
     * user insisting: keep stopping after the step. */
    if (sig == g_stop_signal && since_stop_s() < 0.5) return;
    amp_tmp_unlink_all();
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* pending until this handler returns, then fatal */
}

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
#define NSTOP (int)(sizeof stop_signals / sizeof stop_signals[0])

_Static_assert(NSTOP == sizeof ((amp_stop_guard *)0)->old / sizeof(struct sigaction),
               "one saved action per stop signal");

const char *amp_signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP"
         : sig == SIGPIPE ? "SIGPIPE" : "a signal";
}

/* installs in force: the CLI's start-up installs first (startup.h), the
 * trainer again inside it, and that inner install keeps a stop already
 * received */
static int g_depth;

void amp_stop_signals_install(amp_stop_guard *g) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSTOP; i++) sigaddset(&sa.sa_mask, stop_signals[i]);
    sa.sa_flags = SA_RESTART;
    if (g_depth++ == 0) {
        g_stop_signal = 0;
        g_stop_claimed = 0;
        g_stop_time = 0.0;
    }
    g_training = 0;
    for (int i = 0; i < NSTOP; i++) {
        sigaction(stop_signals[i], NULL, &g->old[i]);
        int keep_ignored = g->old[i].sa_handler == SIG_IGN &&
                           (stop_signals[i] == SIGHUP || stop_signals[i] == SIGPIPE);
        if (!keep_ignored) sigaction(stop_signals[i], &sa, NULL);
    }
    /* A file-size limit (ulimit -f) must fail the write with EFBIG, which is
     * reported, instead of killing the process mid-checkpoint. */
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    sigaction(SIGXFSZ, &sa, &g->old_xfsz);
}

void amp_stop_signals_restore(const amp_stop_guard *g) {
    for (int i = 0; i < NSTOP; i++) sigaction(stop_signals[i], &g->old[i], NULL);
    sigaction(SIGXFSZ, &g->old_xfsz, NULL);
    if (g_depth > 0) g_depth--;
}

void amp_stop_signals_carry(int sig) {
    if (sig <= 0) return;
    g_stop_claimed = 1;
    g_stop_time = amp_clock_s();
    g_stop_signal = sig;
}

const volatile sig_atomic_t *amp_stop_flag(void) { return &g_stop_signal; }

void amp_stop_signals_training(int training, int quiet) {
    g_quiet = quiet;
    g_training = training;
}
