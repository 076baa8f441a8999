/* The ranks as this process sees them: made by dist.c, read by its MPI
 * transport (dist_mpi.c) and the buckets (dist_buckets.c). Only for files compiled into the core, where
 * AMP_HAVE_MPI is defined (not dist_nccl.c, built apart). */
#ifndef AMP_DIST_STATE_H
#define AMP_DIST_STATE_H

#include "dist/dist.h"

#if AMP_HAVE_MPI
#include <mpi.h>
#endif

struct amp_dist {
    int rank, world;
    int local_rank, local_size;
    int mpi;                 /* MPI_Init was called here */
    amp_dist_settings set;
    int agreed;              /* the last code amp_dist_agree returned */
    int test_device_gather;  /* amp_dist_test_device_gather */
    int test_fail_rank;      /* amp_dist_test_fail_collective */
    int64_t test_fail_step;  /* its step + 1; 0 none */
#if AMP_HAVE_MPI
    MPI_Comm comm;
    MPI_Comm back;           /* the gradient sums' gathers back (their own order) */
    MPI_Op step_op;
    MPI_Datatype step_type;  /* n doubles, for amp_dist_reduce_step */
    int step_n;
#endif
};

#endif
