#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# expect_death.sh COMMAND...: runs mpi_death under COMMAND (flitrun -k -n 3);
# ranks 0 and 1 must each print MPI_ERR_PROC_FAILED for the three calls,
# the wait for the Ibarrier the dead rank entered must end, and so must the
# job (flitrun's own --timeout would give 124).
out=$("$@")
rc=$?
printf '%s\n' "$out"
[ "$rc" -ne 124 ] || { echo "the job hung (flitrun --timeout)" >&2; exit 1; }
for r in 0 1; do
    printf '%s\n' "$out" | grep -q "^rank $r: MPI_Wait(Ibarrier): class " ||
        { echo "rank $r: the Ibarrier's wait did not end" >&2; exit 1; }
    for call in MPI_Allreduce MPI_Recv 'MPI_Ibcast+MPI_Wait'; do
        printf '%s\n' "$out" | grep -q "^rank $r: $call: class [0-9]* MPI_ERR_PROC_FAILED" ||
            { echo "rank $r: $call did not answer MPI_ERR_PROC_FAILED" >&2; exit 1; }
    done
done
