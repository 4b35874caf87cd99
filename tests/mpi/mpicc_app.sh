#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A plain MPI program (jacobi.c) built with flit-mpicc and run with flitrun
# on 3 ranks over shared memory and 4 over UDP; -show names the library.
# usage: mpicc_app.sh FLIT-MPICC FLITRUN SOURCE
set -eu
mpicc=$1
flitrun=$2
src=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
show=$("$mpicc" -show -O2 "$src" -o "$dir/jacobi")
case $show in
*-lflit-mpi*) ;;
*)
    echo "flit-mpicc -show does not link flit-mpi: $show" >&2
    exit 1
    ;;
esac
"$mpicc" -O2 -Wall -Werror "$src" -o "$dir/jacobi"
"$mpicc" -c "$src" -o "$dir/jacobi.o" # compile only: nothing linked
FLIT_TRANSPORT=shm "$flitrun" -n 3 --timeout 60 "$dir/jacobi"
FLIT_TRANSPORT=udp "$flitrun" -n 4 --timeout 60 "$dir/jacobi"
