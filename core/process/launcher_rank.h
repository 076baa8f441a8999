/* This process's rank as an MPI launcher announced it in the environment
 * (mpirun, srun), readable before MPI starts: so that what fails while
 * amptrain starts (a bad AMPTRAIN_* value on one rank) can say which rank. */
#ifndef AMP_LAUNCHER_RANK_H
#define AMP_LAUNCHER_RANK_H

/* OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID, the first set
 * to a number; -1 when none is. */
int amp_launcher_rank(void);

#endif
