#!/bin/bash
# test_dist on 2 ranks (see tests/test_dist.c).
# usage: session.sh MPIRUN TEST_DIST
set -u
. "$(dirname "$0")/lib.sh"
MPIRUN=$1
need_mpirun "$MPIRUN"
mpi 2 "$2"
