#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# flit-mpi beside Open MPI on this host, alternated (make bench-mpi):
#
#     compat/bench/mpi_compare.sh BUILD_DIR [--rounds N] [--quick]
#                                           [--max-size BYTES] [--ranks N]
#
# bench/mpi_pingpong.c, unchanged, is compiled twice: with the build's
# flit-mpicc (run by flitrun -n 2) and with Open MPI's mpicc (run by
# mpirun -np 2, pml ob1 and btl self,vader: Open MPI 4.1's shared-memory
# path). Each round runs flit-mpi then Open MPI (A B A B ...), both with
# --coll: ping-pong latency, bandwidth, message rate, MPI_Allreduce,
# MPI_Bcast, MPI_Alltoall, MPI_Allgather and MPI_Reduce_scatter_block at
# each size; then, the same way, bench/mpi_small.c (the best 8-byte
# ping-pong, pingpong_best, and the flood of 256 MPI_Isend a window, flood:
# time a message). Printed per figure: the median
# of the rounds for each, and the median of the rounds' own ratios
# (flit-mpi over Open MPI; for latencies and times lower is better, for
# bandwidth and rate higher). --ranks N (other than 2): the collectives
# alone (--coll-only) on N ranks, Open MPI with --oversubscribe where N is
# more than the cores (it then yields while it polls, as flit's ranks do
# when crowded: FLIT_YIELD_US). Without Open MPI (Debian: openmpi-bin
# libopenmpi-dev) it says so and exits 0.
set -eu

build=${1:-build}
[ $# -gt 0 ] && shift
rounds=5
pass=
ranks=2
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --quick) pass="$pass --quick"; shift ;;
    --max-size) pass="$pass --max-size $2"; shift 2 ;;
    *) echo "mpi_compare.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
case $rounds in '' | *[!0-9]* | 0) echo "mpi_compare.sh: --rounds wants a count" >&2; exit 2 ;; esac
case $ranks in '' | *[!0-9]* | 0 | 1) echo "mpi_compare.sh: --ranks wants 2 or more" >&2; exit 2 ;; esac
what=--coll
[ "$ranks" -eq 2 ] || what=--coll-only
over=
[ "$ranks" -le "$(nproc)" ] || over=--oversubscribe
src=$(cd "$(dirname "$0")/../.." && pwd)
flitrun=$build/tools/flitrun
[ -x "$flitrun" ] && [ -x "$build/flit-mpicc" ] ||
    { echo "mpi_compare.sh: build first ($flitrun, $build/flit-mpicc)" >&2; exit 1; }
if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    echo "mpi_compare.sh: no Open MPI (apt-get install openmpi-bin libopenmpi-dev): nothing to compare" >&2
    exit 0
fi
tmp=$(mktemp -d /tmp/flit-mpi-compare-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# flit-mpicc puts flit's mpi.h and libraries first; Open MPI's wrapper its own
"$build/flit-mpicc" -O2 -o "$tmp/flit" "$src/bench/mpi_pingpong.c"
mpicc -O2 -o "$tmp/ompi" "$src/bench/mpi_pingpong.c"
# and on 2 ranks bench/mpi_small.c: the best 8-byte ping-pong and a flood
# of 256 MPI_Isend a window, each side's time a message
small=
if [ "$ranks" -eq 2 ] && [ "$what" != --coll-only ]; then
    "$build/flit-mpicc" -O2 -o "$tmp/flit_small" "$src/bench/mpi_small.c"
    mpicc -O2 -o "$tmp/ompi_small" "$src/bench/mpi_small.c"
    small="200000 20000"
    case " $pass " in *" --quick "*) small="20000 2000" ;; esac
fi
ldd "$tmp/flit" | grep -q 'libflit-mpi' || { echo "mpi_compare.sh: flit's build is not linked to libflit-mpi" >&2; exit 1; }
ldd "$tmp/flit" | grep -q 'libmpi\.so' && { echo "mpi_compare.sh: flit's build links Open MPI's libmpi" >&2; exit 1; }
root=
[ "$(id -u)" -eq 0 ] && root=--allow-run-as-root
r=1
while [ "$r" -le "$rounds" ]; do
    # shellcheck disable=SC2086
    FLIT_TRANSPORT=shm "$flitrun" -n "$ranks" --timeout 600 "$tmp/flit" $what $pass >"$tmp/flit.$r"
    # shellcheck disable=SC2086
    mpirun $root $over -np "$ranks" --mca pml ob1 --mca btl self,vader "$tmp/ompi" $what $pass \
        >"$tmp/ompi.$r"
    if [ -n "$small" ]; then
        # shellcheck disable=SC2086
        FLIT_TRANSPORT=shm "$flitrun" -n 2 --timeout 600 "$tmp/flit_small" $small |
            tail -n +2 >>"$tmp/flit.$r"
        # shellcheck disable=SC2086
        mpirun $root -np 2 --mca pml ob1 --mca btl self,vader "$tmp/ompi_small" $small |
            tail -n +2 >>"$tmp/ompi.$r"
    fi
    echo "mpi_compare.sh: round $r of $rounds done" >&2
    r=$((r + 1))
done
echo "flit-mpi ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')) beside $(mpirun --version 2>/dev/null | head -n 1), $ranks ranks, $rounds rounds alternated, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
awk -F, -v rounds="$rounds" '
    FNR == 1 { split(FILENAME, p, "/"); f = p[length(p)]; who = substr(f, 1, index(f, ".") - 1); r = substr(f, index(f, ".") + 1); next }
    { key = $1 "," $2; v[who, key, r] = $3; unit[key] = $4; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
    function median(a, k,   i, j, t) {
        for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    END {
        printf "%-10s %9s %12s %12s %8s  %s\n", "figure", "size", "flit-mpi", "Open MPI", "ratio", "unit"
        for (i = 1; i <= n; i++) {
            key = order[i]; split(key, kk, ",")
            k = 0; kf = 0; ko = 0
            for (r = 1; r <= rounds; r++) {
                if ((("flit", key, r) in v) && (("ompi", key, r) in v) && v["ompi", key, r] > 0) {
                    q[++k] = v["flit", key, r] / v["ompi", key, r]
                }
                if (("flit", key, r) in v) a[++kf] = v["flit", key, r]
                if (("ompi", key, r) in v) b[++ko] = v["ompi", key, r]
            }
            printf "%-10s %9s %12s %12s %8s  %s\n", kk[1], kk[2],
                kf ? sprintf("%.3f", median(a, kf)) : "n/a", ko ? sprintf("%.3f", median(b, ko)) : "n/a",
                k ? sprintf("%.2f", median(q, k)) : "n/a", unit[key]
            delete a; delete b; delete q
        }
    }' "$tmp"/flit.* "$tmp"/ompi.*
