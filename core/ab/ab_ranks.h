/* `amptrain ab --ranks N`: every run of the study on N ranks, started by
 * `mpirun` as `mpirun -np N amptrain train ...` (data-parallel.md), the
 * same N for every arm so their times and memory compare. */
#ifndef AMP_AB_RANKS_H
#define AMP_AB_RANKS_H

#include <limits.h>
#include <stddef.h>

#define AMP_AB_MAX_RANKS 1024

typedef struct amp_ab_launch {
    int ranks;             /* 1: the run is this executable alone */
    char mpirun[PATH_MAX]; /* the mpirun on PATH (ranks > 1) */
    char np[16];
    int as_root;           /* OpenMPI refuses root without --allow-run-as-root */
} amp_ab_launch;

/* Parses the --ranks value: 0, or -1 with the usage error in err. */
int amp_ab_ranks_parse(int *ranks, const char *arg, char *err, size_t errlen);
/* Finds what the study needs: this executable (self_exe.h), and for
 * ranks > 1 a build with MPI and mpirun on PATH. 0, or with err 1 (the
 * executable's location is unknown) or 2 (a usage error: nothing can run). */
int amp_ab_launch_prepare(amp_ab_launch *l, int ranks, char *err, size_t errlen);
/* The program to exec and the first arguments of a run's command line
 * (mpirun, its options, the executable; or this executable alone; the
 * executable through the dynamic loader when amptrain was started so) into
 * argv; returns how many (at most AMP_AB_LAUNCH_ARGS). */
#define AMP_AB_LAUNCH_ARGS 8
int amp_ab_launch_argv(const amp_ab_launch *l, const char **argv, const char **program);

#endif
