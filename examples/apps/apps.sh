#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make apps: the four applications on shared objects at their larger size,
# on 1 and 2 ranks, alternated (1 2 1 2 ...) RUNS times (default 3), each
# run checked against its sequential computation; then a markdown table of
# the medians: time on 1 rank, on 2, the speedup, and rank 0's object
# operations and messages sent on 2 ranks. The load average is printed
# before and after: the times mean little on a loaded machine without it.
#
#   examples/apps/apps.sh BUILD [APP...]     (default: jacobi asp water tsp)
set -eu

build=$1
shift
runs=${RUNS:-3}
flitrun=$build/tools/flitrun
[ $# -gt 0 ] || set -- jacobi asp water tsp

# The larger size of each: computation well above communication on 2 ranks.
size_of() {
    case $1 in
    jacobi) echo "--n 2048 --iters 200" ;;
    asp) echo "--n 1200" ;;
    water) echo "--n 4096 --steps 60" ;;
    tsp) echo "--n 20 --seed 1" ;;
    *) echo "apps.sh: no application $1" >&2; exit 2 ;;
    esac
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One run: its summary line (the one that says "ranks:"), or the failure.
run() { # app ranks
    args=$(size_of "$1")
    # shellcheck disable=SC2086 # the size is words
    if ! "$flitrun" -n "$2" --timeout 600 "$build/examples/$1" $args >"$out/run" 2>&1; then
        echo "apps.sh: $1 on $2 ranks failed:" >&2
        cat "$out/run" >&2
        exit 1
    fi
    line=$(grep ' ranks: ' "$out/run")
    case $line in
    *"identical to the sequential"*) ;;
    *) echo "apps.sh: $1 on $2 ranks: $line" >&2; exit 1 ;;
    esac
    echo "$line"
    grep ' in flit calls, ' "$out/run"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
for app in "$@"; do
    i=0
    while [ $i -lt "$runs" ]; do
        for ranks in 1 2; do
            run "$app" $ranks >"$out/$app.$ranks.last"
            sed 's/^/  /' "$out/$app.$ranks.last" >&2
            sed -nE 's/.* ranks: ([0-9.]+) s .*/\1/p' "$out/$app.$ranks.last" \
                >>"$out/$app.$ranks"
            sed -nE 's/.*: ([0-9.]+) s in flit.* ([0-9.]+) s of CPU \(([0-9]+)%.*/\1 \3 \2/p' \
                "$out/$app.$ranks.last" >>"$out/$app.$ranks.profile"
        done
        i=$((i + 1))
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
# With autogroup the kernel shares the cores between sessions first: on a
# busy machine a job's ranks split its session's part, whatever their count.
if [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ]; then
    echo "scheduler: autogroup on (the ranks of a job share one session's part of the" \
        "cores when others are busy)"
fi
echo
echo "| app | size | 1 rank (s) | 2 ranks (s) | speedup | object operations | messages |" \
    "rank 0 in flit | rank 0 CPU | CPU ratio |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for app in "$@"; do
    t1=$(median <"$out/$app.1")
    t2=$(median <"$out/$app.2")
    ops=$(sed -nE 's/.* ([0-9]+) reads ([0-9]+) writes on rank 0.*/\1 \2/p' \
        "$out/$app.2.last" | awk '{ print $1 + $2 }')
    msgs=$(sed -nE 's/.* ([0-9]+) messages sent.*/\1/p' "$out/$app.2.last")
    flit=$(awk '{ print $1 }' "$out/$app.2.profile" | median)
    cpu=$(awk '{ print $2 }' "$out/$app.2.profile" | median)
    c1=$(awk '{ print $3 }' "$out/$app.1.profile" | median)
    c2=$(awk '{ print $3 }' "$out/$app.2.profile" | median)
    echo "| $app | $(size_of "$app") | $t1 | $t2 |" \
        "$(echo "$t1 $t2" | awk '{ printf "%.2fx", $1 / $2 }') | $ops | $msgs |" \
        "$(echo "$flit $t2" | awk '{ printf "%.0f%%", 100 * $1 / $2 }') | $cpu% |" \
        "$(echo "$c1 $c2" | awk '{ printf "%.2fx", $1 / $2 }') |"
done
echo
echo "Medians of $runs runs each, 1 and 2 ranks alternated. On 2 ranks: the object"
echo "operations rank 0 invoked and the messages it sent (last run); the share of"
echo "its time inside flit calls, waiting for the other rank included; its CPU time"
echo "over its wall time (below 100%: it waited for a core, or slept in a wait);"
echo "CPU ratio: the CPU seconds of 1 rank over rank 0's on 2, the speedup free"
echo "cores would give if rank 1 kept pace (not a wall-clock figure)."
