/* amp_ab_launch (ab_ranks.h): how `ab` starts a run on N ranks. */
#include "ab/ab_ranks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dist/dist.h"
#include "process/self_exe.h"

int amp_ab_ranks_parse(int *ranks, const char *arg, char *err, size_t errlen) {
    char *end;
    errno = 0;
    long n = strtol(arg, &end, 10);
    if (errno || end == arg || *end || n < 1 || n > AMP_AB_MAX_RANKS) {
        snprintf(err, errlen, "--ranks '%s': expected an integer in [1, %d]", arg,
                 AMP_AB_MAX_RANKS);
        return -1;
    }
    *ranks = (int)n;
    return 0;
}

/* The first executable `name` in PATH's folders, as a shell would find it. */
static int find_on_path(const char *name, char *out, size_t cap) {
    const char *path = getenv("PATH");
    if (!path || !path[0]) return -1;
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        if (len > 0 && len + strlen(name) + 2 <= cap) {
            snprintf(out, cap, "%.*s/%s", (int)len, p, name);
            struct stat sb;
            if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode) && access(out, X_OK) == 0) return 0;
        }
        p += len;
        if (*p == ':') p++;
    }
    return -1;
}

int amp_ab_launch_prepare(amp_ab_launch *l, int ranks, char *err, size_t errlen) {
    memset(l, 0, sizeof *l);
    l->ranks = ranks;
    const char *why = "";
    if (!amp_self_exe(&why)) {
        snprintf(err, errlen, "cannot start the runs, which are this program again: %s", why);
        return 1;
    }
    if (ranks == 1) return 0;
    if (!amp_dist_have_mpi()) {
        snprintf(err, errlen, "--ranks %d: this amptrain was built without MPI, so it cannot "
                 "run on several ranks (install libopenmpi-dev and rebuild; see "
                 "docs/data-parallel.md)", ranks);
        return 2;
    }
    if (find_on_path("mpirun", l->mpirun, sizeof l->mpirun) != 0) {
        snprintf(err, errlen, "--ranks %d: no mpirun on PATH to start the ranks (install "
                 "openmpi-bin, or put its bin folder on PATH)", ranks);
        return 2;
    }
    snprintf(l->np, sizeof l->np, "%d", ranks);
    l->as_root = geteuid() == 0;
    return 0;
}

int amp_ab_launch_argv(const amp_ab_launch *l, const char **argv, const char **program) {
    int n = 0;
    if (l->ranks == 1) return amp_self_argv("amptrain", argv, program);
    *program = l->mpirun;
    argv[n++] = "mpirun";
    if (l->as_root) argv[n++] = "--allow-run-as-root";
    /* more ranks than cores is the user's choice here, as in the tests */
    argv[n++] = "--oversubscribe";
    argv[n++] = "-np";
    argv[n++] = l->np;
    const char *ignored;
    return n + amp_self_argv(NULL, argv + n, &ignored); /* known: prepare checked */
}
