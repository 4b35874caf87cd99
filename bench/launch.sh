#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/launch.sh BUILD_DIR: start-up cost (make bench-launch). Times a job
# from the call of its launcher to the end of its first barrier
# (bench/launch_time.c) under flitrun -n N, srun --mpi=pmix and srun
# --mpi=pmi2, for N in SIZES (default 1 2 4 8 16 32 64; beyond the cores
# they are oversubscribed), and prints flit's own share (flit_init +
# flit_ep_create, the slowest rank's) beside the total: the launcher's
# share is the rest. RUNS runs (default 3) per figure, the launchers
# alternated within each run; medians. srun runs on a one-node Slurm
# cluster started for the purpose (tests/slurm/cluster.sh: root, Debian's
# slurm-wlm and munge); without it only flitrun is measured.
set -u
build=$1
sizes=${SIZES:-1 2 4 8 16 32 64}
runs=${RUNS:-3}
here=$(cd "$(dirname "$0")" && pwd)
prog=$build/bench/launch_time
flitrun=$build/tools/flitrun
cluster=$build/bench/launch_cluster
tmp=$(mktemp -d)
[ -x "$prog" ] || { echo "bench-launch: $prog is not built" >&2; exit 1; }

launchers="flitrun"
stop() {
    "$here/../tests/slurm/cluster.sh" stop "$cluster"
    rm -rf "$tmp"
}
trap stop EXIT
trap 'exit 130' INT TERM
if "$here/../tests/slurm/cluster.sh" start "$cluster" >"$tmp/cluster.log" 2>&1; then
    . "$cluster/env"
    launchers="flitrun pmix pmi2"
    srun --mpi=list 2>&1 | grep -qw pmix || launchers="flitrun pmi2"
else
    echo "bench-launch: no Slurm cluster, flitrun only: $(tail -n 1 "$tmp/cluster.log")"
fi

# one LAUNCHER N: "total flit" in ms, or nothing when the run failed.
one() {
    t0=$(date +%s%N)
    case $1 in
    flitrun) set -- "$flitrun" -n "$2" --timeout 120 "$prog" ;;
    *) set -- srun --mpi="$1" -O -n "$2" -t 5 "$prog" ;;
    esac
    LAUNCH_BENCH_T0=$t0 timeout 180 "$@" 2>>"$tmp/err" |
        sed -n 's/^launch_time: .* total \([0-9.]*\) ms, flit \([0-9.]*\) ms$/\1 \2/p'
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

echo "start-up: launcher call to the end of the first barrier, ms (median of $runs);"
echo "flit = flit_init + flit_ep_create of the slowest rank, and its share of the total"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
printf '%5s' N
for l in $launchers; do
    printf ' | %-8s %8s %8s %6s' "$l" total flit share
done
echo
for n in $sizes; do
    for r in $(seq "$runs"); do
        # A B C, then C B A: no launcher always runs first.
        order=$launchers
        [ $((r % 2)) -eq 0 ] && order=$(echo "$launchers" | tr ' ' '\n' | tac | tr '\n' ' ')
        for l in $order; do
            one "$l" "$n" >>"$tmp/$l.$n"
        done
    done
    printf '%5s' "$n"
    for l in $launchers; do
        total=$(cut -d' ' -f1 "$tmp/$l.$n" | median)
        flit=$(cut -d' ' -f2 "$tmp/$l.$n" | median)
        share=$(awk -v t="$total" -v f="$flit" 'BEGIN { if (t > 0) printf "%.1f%%", 100 * f / t; else print "-" }')
        printf ' | %-8s %8s %8s %6s' "" "$total" "$flit" "$share"
    done
    echo
done
if [ -s "$tmp/err" ] && grep -q "error" "$tmp/err"; then
    echo "errors seen:"
    grep "error" "$tmp/err" | sort | uniq -c | head -n 5
fi
