#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# pmpi_symbols.sh LIB MPI_H: every MPI_ function libflit-mpi exports is weak
# and has a PMPI_ twin at the same address, and mpi.h declares PMPI_X with
# MPI_X's very prototype for every MPI_X it declares.
lib=$1 hdr=$2
command -v nm >/dev/null || { echo "SKIP: nm not installed (Debian: binutils)"; exit 77; }
command -v perl >/dev/null || { echo "SKIP: perl not installed (Debian: perl)"; exit 77; }
syms=$(nm -D --defined-only "$lib" | sed 's/@.*//')
bad=0
for f in $(printf '%s\n' "$syms" | awk '$3 ~ /^MPI_/ && $2 != "B" && $2 != "D" { print $3 }'); do
    mine=$(printf '%s\n' "$syms" | awk -v s="$f" '$3 == s { print $1, $2 }')
    twin=$(printf '%s\n' "$syms" | awk -v s="P$f" '$3 == s { print $1, $2 }')
    case $mine in *" W") ;; *) echo "FAIL: $f is not weak ($mine)"; bad=1 ;; esac
    [ "${twin% *}" = "${mine% *}" ] || { echo "FAIL: P$f missing or elsewhere ($twin vs $mine)"; bad=1; }
done
n=$(printf '%s\n' "$syms" | grep -c ' PMPI_')
[ "$n" -ge 100 ] || { echo "FAIL: only $n PMPI_ symbols"; bad=1; }
# the prototypes: one per line once joined, MPI_ and PMPI_ lists equal
# (comments and preprocessor lines out first)
protos=$(grep -v '^#' "$hdr" | perl -0pe 's{/\*.*?\*/}{}gs' | tr '\n' ' ' | tr ';' '\n' |
    sed 's/  */ /g; s/^ *//' | grep -E '^(int|double) P?MPI_[A-Za-z_]+\(')
mpi=$(printf '%s\n' "$protos" | grep -E '^(int|double) MPI_' | sort)
pmpi=$(printf '%s\n' "$protos" | grep -E '^(int|double) PMPI_' | sed 's/ PMPI_/ MPI_/' | sort)
[ "$mpi" = "$pmpi" ] || {
    echo "FAIL: mpi.h's MPI_ and PMPI_ prototypes differ:"
    printf '%s\n' "$mpi" >/tmp/pmpi_check.$$.a
    printf '%s\n' "$pmpi" >/tmp/pmpi_check.$$.b
    diff /tmp/pmpi_check.$$.a /tmp/pmpi_check.$$.b
    rm -f /tmp/pmpi_check.$$.a /tmp/pmpi_check.$$.b
    bad=1
}
[ "$bad" -eq 0 ] || exit 1
echo "PASS: $n PMPI_ twins, mpi.h's prototypes paired"
