#include "mem_limit.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util/out_file.h"

/* what a small run maps beyond the OpenBLAS buffers (arenas, oneDNN's
 * kernels and scratch, thread stacks) */
#define RESERVE ((size_t)256 << 20)

static int g_limited;

size_t amp_mem_headroom(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return SIZE_MAX;
    int ok = fscanf(f, "%lu", &pages) == 1;
    fclose(f);
    if (!ok) return SIZE_MAX;
    size_t used = (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
    return (size_t)rl.rlim_cur > used ? (size_t)rl.rlim_cur - used : 0;
}

/* SIGSEGV or SIGBUS under a limit: most likely a library that used memory
 * it failed to map. write(2) and _exit only. */
static void on_crash(int sig) {
    static const char msg[] =
        "amptrain: crashed inside a library (SIGSEGV or SIGBUS) under an address-space limit "
        "(ulimit -v, prlimit --as): most likely it could not map memory; raise the limit. The "
        "run's temporaries were removed; its earlier checkpoints are untouched\n";
    (void)sig;
    amp_tmp_unlink_all();
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

void amp_mem_limit_prepare(amp_restart_env *r) {
    size_t room = amp_mem_headroom();
    if (room == SIZE_MAX) return;
    g_limited = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sa.sa_flags = 0;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t need = (size_t)(cores > 0 ? cores : 1) * AMP_OPENBLAS_BUFFER + RESERVE;
    if (room >= need) return;
    if (getenv("OPENBLAS_NUM_THREADS")) return; /* the user's choice, or already restarted */
    amp_restart_env_set(r, "OPENBLAS_NUM_THREADS", "1");
}

int amp_mem_limited(void) { return g_limited; }

size_t amp_mem_run_reserve(size_t nparams) { return ((size_t)128 << 20) + 16 * nparams; }

int amp_mem_check_room(size_t need, char *err, size_t errlen) {
    size_t room = amp_mem_headroom();
    if (room >= need) return 0;
    struct rlimit rl;
    getrlimit(RLIMIT_AS, &rl);
    snprintf(err, errlen,
             "the address-space limit (ulimit -v, prlimit --as) of %llu MiB leaves %zu MiB after "
             "the setup, and the run needs about %zu MiB more for the libraries' workspaces and "
             "its checkpoints: raise the limit by %zu MiB or more",
             (unsigned long long)(rl.rlim_cur >> 20), room >> 20, need >> 20,
             (need - room + ((size_t)1 << 20) - 1) >> 20);
    return -1;
}
