#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/launch.sh BUILD_DIR: start-up cost (make bench-launch). Times a job
# from the call of its launcher to the end of its first barrier
# (bench/launch_time.c) under flitrun -n N, srun --mpi=pmix and srun
# --mpi=pmi2, for N in SIZES (default 1 2 4 8 16 32 64; beyond the cores
# they are oversubscribed), and prints flit's share beside the total, two
# ways: "flit", flit_init + flit_ep_create of the slowest rank (which
# includes waiting for ranks the launcher started late), and "after", from
# the last rank's start to the end of the last creation (what flit adds
# once every process runs). RUNS runs (default 3) per figure, the launchers
# alternated within each run; medians. srun runs on a one-node Slurm
# cluster started for the purpose (tests/slurm/cluster.sh: root, Debian's
# slurm-wlm and munge); without it only flitrun is measured.
#
# VS=OTHER_BUILD (another checkout's build, with its bench/launch_time and
# tools/flitrun) runs that build too, alternated with this one in every
# run (A B, then B A), prints its row below this one's, marked "vs", and
# the ratios of this build's medians to the other's (total, flit, after),
# marked "/vs".
#
# Under srun --mpi=pmix two more programs run in the same turns, timed the
# same way, as baselines: "bare", the least a PMIx program that exchanges a
# value per rank pays (bench/launch_time_pmix.c: PMIx_Init, put, commit, a
# fence collecting the data), and "ompi", Open MPI's MPI_Init
# (bench/launch_time_mpi.c, built here with mpicc where Open MPI is
# installed). Under srun --mpi=pmi2, "bare2" is the same least for a PMI-2
# program, through Slurm's libpmi2 (bench/launch_time_pmi2.c, where
# libpmi2-0-dev is installed). The last lines of each N are flit's own part
# under each: flit's "after" less the bare client's, and its share of
# flit's total.
set -u
build=$1
sizes=${SIZES:-1 2 4 8 16 32 64}
runs=${RUNS:-3}
here=$(cd "$(dirname "$0")" && pwd)
vs=${VS:-}
cluster=$build/bench/launch_cluster
tmp=$(mktemp -d)
for b in "$build" $vs; do
    [ -x "$b/bench/launch_time" ] && [ -x "$b/tools/flitrun" ] ||
        { echo "bench-launch: $b/bench/launch_time or $b/tools/flitrun is not built" >&2; exit 1; }
done

launchers="flitrun"
baselines=
stop() {
    "$here/../tests/slurm/cluster.sh" stop "$cluster"
    rm -rf "$tmp"
}
trap stop EXIT
trap 'exit 130' INT TERM
if "$here/../tests/slurm/cluster.sh" start "$cluster" >"$tmp/cluster.log" 2>&1; then
    . "$cluster/env"
    launchers="flitrun pmix pmi2"
    [ -x "$build/bench/launch_time_pmi2" ] && baselines="bare2"
    if srun --mpi=list 2>&1 | grep -qw pmix; then
        [ -x "$build/bench/launch_time_pmix" ] && baselines="$baselines bare"
        if command -v mpicc >/dev/null 2>&1 &&
            mpicc -O2 -o "$build/bench/launch_time_mpi" "$here/launch_time_mpi.c"; then
            baselines="$baselines ompi"
        fi
    else
        launchers="flitrun pmi2"
    fi
else
    echo "bench-launch: no Slurm cluster, flitrun only: $(tail -n 1 "$tmp/cluster.log")"
fi

# one LAUNCHER N BUILD: "total flit after" in ms, or nothing when the run
# failed.
one() {
    t0=$(date +%s%N)
    case $1 in
    flitrun) set -- "$3/tools/flitrun" -n "$2" --timeout 120 "$3/bench/launch_time" ;;
    bare) set -- srun --mpi=pmix -O -n "$2" -t 5 "$3/bench/launch_time_pmix" ;;
    bare2) set -- srun --mpi=pmi2 -O -n "$2" -t 5 "$3/bench/launch_time_pmi2" ;;
    ompi) set -- srun --mpi=pmix -O -n "$2" -t 5 "$3/bench/launch_time_mpi" ;;
    *) set -- srun --mpi="$1" -O -n "$2" -t 5 "$3/bench/launch_time" ;;
    esac
    LAUNCH_BENCH_T0=$t0 timeout 180 "$@" 2>>"$tmp/err" |
        sed -n 's/^launch_time: .* total \([0-9.]*\) ms, flit \([0-9.]*\) ms, after \([0-9.]*\) ms$/\1 \2 \3/p'
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "-") printf "%.2fx", a / b; else print "-" }'; }
pct() { awk -v t="$1" -v f="$2" 'BEGIN { if (t > 0 && f != "-") printf "%.1f%%", 100 * f / t; else print "-" }'; }

echo "start-up: launcher call to the end of the first barrier, ms (median of $runs);"
echo "flit = flit_init + flit_ep_create of the slowest rank; after = from the last"
echo "rank's start to the end of the last flit_ep_create; each with its share of the total"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
[ -n "$vs" ] && echo "rows marked vs: $vs, alternated with $build in every run"
printf '%5s %3s' N ''
for l in $launchers $baselines; do
    printf ' | %-7s %7s %7s %6s %7s %6s' "$l" total flit share after share
done
echo
builds="$build $vs"
for n in $sizes; do
    for r in $(seq "$runs"); do
        # A B C, then C B A: no launcher (and no build) always runs first.
        order=
        for l in $launchers; do
            for b in $builds; do
                order="$order $l:$b"
            done
        done
        for l in $baselines; do # not flit's: once, whatever VS says
            order="$order $l:$build"
        done
        [ $((r % 2)) -eq 0 ] && order=$(echo $order | tr ' ' '\n' | tac | tr '\n' ' ')
        for lb in $order; do
            l=${lb%%:*} b=${lb#*:}
            [ "$b" = "$build" ] && tag=this || tag=vs
            one "$l" "$n" "$b" >>"$tmp/$l.$n.$tag"
        done
    done
    for tag in this vs; do
        [ "$tag" = vs ] && [ -z "$vs" ] && continue
        printf '%5s %3s' "$n" "$([ "$tag" = vs ] && echo vs)"
        shown=$launchers
        [ "$tag" = this ] && shown="$shown $baselines"
        for l in $shown; do
            f=$tmp/$l.$n.$tag
            total=$(cut -d' ' -f1 "$f" | median)
            flit=$(cut -d' ' -f2 "$f" | median)
            after=$(cut -d' ' -f3 "$f" | median)
            printf ' | %-7s %7s %7s %6s %7s %6s' "" "$total" "$flit" "$(pct "$total" "$flit")" \
                "$after" "$(pct "$total" "$after")"
        done
        echo
    done
    for pair in pmix:bare pmi2:bare2; do
        l=${pair%%:*} bl=${pair#*:}
        [ -s "$tmp/$bl.$n.this" ] && [ -s "$tmp/$l.$n.this" ] || continue
        total=$(cut -d' ' -f1 "$tmp/$l.$n.this" | median)
        own=$(awk -v a="$(cut -d' ' -f3 "$tmp/$l.$n.this" | median)" \
            -v b="$(cut -d' ' -f3 "$tmp/$bl.$n.this" | median)" 'BEGIN { print a - b }')
        printf '%5s %3s | %s: flit after - %s after %s ms, %s of the total\n' "$n" '' \
            "$l" "$bl" "$own" "$(pct "$total" "$own")"
    done
    [ -z "$vs" ] && continue
    # This build's medians over the other's, same runs.
    printf '%5s %3s' "$n" '/vs'
    for l in $launchers; do
        set -- $(for k in 1 2 3; do
            for tag in this vs; do cut -d' ' -f$k "$tmp/$l.$n.$tag" | median; done
        done)
        printf ' | %-7s %7s %7s %6s %7s %6s' "" "$(ratio "$1" "$2")" "$(ratio "$3" "$4")" '' \
            "$(ratio "$5" "$6")" ''
    done
    echo
done
if [ -s "$tmp/err" ] && grep -q "error" "$tmp/err"; then
    echo "errors seen:"
    grep "error" "$tmp/err" | sort | uniq -c | head -n 5
fi
