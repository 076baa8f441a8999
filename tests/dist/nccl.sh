#!/bin/bash
# test_dist on 2 ranks with the CUDA backend and NCCL between 2 GPUs (one
# per rank: NCCL refuses two ranks on one device). Skips (77) with a message
# without NCCL in the build, without mpirun, or with fewer than 2 GPUs.
# usage: nccl.sh MPIRUN TEST_DIST HAVE_NCCL
set -u
. "$(dirname "$0")/lib.sh"
MPIRUN=$1
need_nccl_gpus "$3" "the 2-process NCCL test"
need_mpirun "$MPIRUN"
mpi 2 "$2" cuda
