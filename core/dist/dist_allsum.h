/* Sums over the ranks of values in the backend's memory, in the middle of
 * a step: what synchronised batch norm needs (the channel statistics of
 * the global batch in forward, the sums of dy and dy * xhat in backward).
 * The backend calls it through the session's amp_allsum hook; models and
 * the layer kit never reach MPI or NCCL themselves. */
#ifndef AMP_DIST_ALLSUM_H
#define AMP_DIST_ALLSUM_H

#include <stddef.h>

#include "dist/dist.h"

/* v[n] doubles summed over the ranks in place: on the CPU over MPI (v is
 * host memory), blocking, bounded by [dist] timeout like every other wait;
 * on the GPU with NCCL on the gradient transport's stream (one stream keeps
 * one order of the communicator's collectives), the backend's stream
 * ordered after it. Every rank calls it in the same order. On one rank (g
 * NULL) nothing. 0, or -1 with err. */
int amp_dist_grads_allsum(amp_dist_grads *g, amp_dist *d, double *v, size_t n, char *err,
                          size_t errlen);

#endif
