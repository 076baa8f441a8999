#!/bin/bash
# test_dist on 2 ranks with the CUDA backend and NCCL between 2 GPUs (one
# per rank: NCCL refuses two ranks on one device). Skips (77) with a message
# without NCCL in the build, without mpirun, or with fewer than 2 GPUs.
# usage: nccl.sh MPIRUN TEST_DIST HAVE_NCCL
set -u
. "$(dirname "$0")/lib.sh"
MPIRUN=$1
case $3 in ON | on | 1 | TRUE | true) ;; *)
    echo "SKIP: amptrain was built without NCCL (needs MPI, CUDA and nccl.h/libnccl)"
    exit 77 ;;
esac
need_mpirun "$MPIRUN"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${gpus:-0}" -lt 2 ]; then
    echo "SKIP: ${gpus:-0} GPU(s) visible: the 2-process NCCL test needs 2"
    exit 77
fi
mpi 2 "$2" cuda
