/* How idle library threads wait. OpenMP's default (libgomp: spin some
 * 300000 rounds before sleeping) and OpenBLAS's (spin 2^28 cycles) burn a
 * core between the many short parallel sections of a training step; on a
 * machine whose cores are busy with other work, 2 threads then took 8x the
 * CPU time of 1 and were slower (docs/performance-threads.md). Both
 * libraries read their setting once, while the program loads, so, before
 * anything else, a process whose environment has none restarts itself with
 * OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=4 (wait on a futex,
 * not a spin loop). A user's OMP_WAIT_POLICY or GOMP_SPINCOUNT, or
 * OPENBLAS_THREAD_TIMEOUT, is kept as it is. */
#ifndef AMP_WAIT_POLICY_H
#define AMP_WAIT_POLICY_H

#include "restart_env.h"

/* At the start of main: records the variables above where they are unset,
 * for the one restart (startup.h). */
void amp_wait_policy_prepare(amp_restart_env *r);

#endif
