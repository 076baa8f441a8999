#include "launcher_rank.h"

#include <errno.h>
#include <stdlib.h>

int amp_launcher_rank(void) {
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                        "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (!v || !*v) continue;
        char *end;
        errno = 0;
        long r = strtol(v, &end, 10);
        if (!*end && !errno && r >= 0 && r < (1L << 30)) return (int)r;
    }
    return -1;
}
