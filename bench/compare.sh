#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# flit beside Open MPI's shared-memory path, measured one after the other on
# this machine:
#
#     bench/compare.sh BUILD_DIR [--quick] [--max-size BYTES]
#
# Compiles bench/mpi_pingpong.c with mpicc into BUILD_DIR/bench, runs it on 2
# ranks, runs flit-bench --csv on 2 ranks, and prints the figures side by
# side. Without Open MPI it says what to install and exits 0.
set -eu

build=${1:-build}
[ $# -gt 0 ] && shift
here=$(cd "$(dirname "$0")" && pwd)
bench=$build/bench/flit-bench
flitrun=$build/tools/flitrun

if [ ! -x "$bench" ]; then
    echo "compare.sh: $bench not found: build first (cmake --build $build)" >&2
    exit 1
fi
if [ ! -x "$flitrun" ]; then
    flitrun=$(command -v flitrun || true)
    if [ -z "$flitrun" ]; then
        echo "compare.sh: no flitrun in $build/tools or on PATH" >&2
        exit 1
    fi
fi
if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    echo "compare.sh: Open MPI is not installed, so there is nothing to compare with."
    echo "  On Debian or Ubuntu: apt-get install openmpi-bin libopenmpi-dev"
    exit 0
fi

tmp=$(mktemp -d /tmp/flit-compare-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

mpicc -O2 -o "$build/bench/mpi_pingpong" "$here/mpi_pingpong.c"

# Open MPI 4.1 calls its shared-memory BTL "vader" ("sm" is only an alias
# from 5.0 on). Debian's build also has UCX, whose PML would take the
# messages itself and make the BTL choice moot: pml ob1 keeps them on vader.
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
mpi_version=$(mpirun --version 2>/dev/null | head -n 1)
echo "measuring Open MPI ($mpi_version, pml ob1, btl self,vader) ..." >&2
mpirun $root --oversubscribe -n 2 --mca pml ob1 --mca btl self,vader \
    "$build/bench/mpi_pingpong" "$@" >"$tmp/mpi.csv"
echo "measuring flit ($bench) ..." >&2
"$flitrun" -n 2 "$bench" --csv "$@" >"$tmp/flit.csv"

awk -F, -v mpi_version="$mpi_version" -v host="$(hostname)" '
function size(b) {
    if (b >= 1048576) return sprintf("%g MiB", b / 1048576)
    if (b >= 1024) return sprintf("%g KiB", b / 1024)
    return b " B"
}
function row(figure, b, fv, mv, unit, fmt,    r) {
    if (fv == "" || mv == "" || mv + 0 == 0) {
        printf "  %-34s %8s %14s %14s %9s\n", figure, size(b),
               fv == "" ? "n/a" : sprintf(fmt " %s", fv, unit),
               mv == "" ? "n/a" : sprintf(fmt " %s", mv, unit), ""
        return
    }
    printf "  %-34s %8s %14s %14s %9.2f\n", figure, size(b),
           sprintf(fmt " %s", fv, unit), sprintf(fmt " %s", mv, unit), fv / mv
}
FNR == 1 { next }                       # the header line
FILENAME ~ /flit.csv$/ { flit[$1 "@" $2] = $3; next }
{ mpi[$1 "@" $2] = $3 }
END {
    printf "flit beside %s on %s, 2 ranks, shared memory\n", mpi_version, host
    printf "  (Open MPI: pml ob1, btl self,vader; flit: shm transport)\n\n"
    printf "  %-34s %8s %14s %14s %9s\n", "figure", "size", "flit", "Open MPI", "flit/MPI"
    printf "  %-34s %8s %14s %14s %9s\n", "----------------------------------",
           "--------", "--------------", "--------------", "---------"
    row("latency, one way (flit: short AM)", 8, flit["latency_short@8"],
        mpi["latency@8"], "us", "%.3f")
    row("latency, one way (flit: medium AM)", 8, flit["latency_medium@8"],
        mpi["latency@8"], "us", "%.3f")
    row("latency, one way (flit: tagged)", 8, flit["latency_tagged@8"],
        mpi["latency@8"], "us", "%.3f")
    row("latency, one way (flit: stream)", 8, flit["latency_stream@8"],
        mpi["latency@8"], "us", "%.3f")
    split("16 1024 65536 1048576", tsz, " ")
    for (i = 1; i <= 4; i++)
        row("bandwidth (flit: tagged)", tsz[i], flit["bandwidth_tagged@" tsz[i]],
            mpi["bandwidth@" tsz[i]], "MB/s", "%.0f")
    row("bandwidth (flit: medium AM)", 65536, flit["bandwidth_medium@65536"],
        mpi["bandwidth@65536"], "MB/s", "%.0f")
    split("65536 1048576 4194304", big, " ")
    for (i = 1; i <= 3; i++)
        row("bandwidth (flit: long AM)", big[i], flit["bandwidth_long@" big[i]],
            mpi["bandwidth@" big[i]], "MB/s", "%.0f")
    row("message rate (flit: short AM)", 8, flit["rate_short@8"], mpi["rate@8"],
        "M/s", "%.2f")
    printf "\n  latency: lower is better (ratio < 1: flit is faster); bandwidth"
    printf " and rate:\n  higher is better (ratio > 1: flit is faster). Both"
    printf " programs: bench/ in the source tree.\n"
}' "$tmp/flit.csv" "$tmp/mpi.csv"
