#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make demo beside a CPU hog: the ranks and the hog share one CPU (taskset),
# so each rank waits for it most of every row (far above the 2% that makes
# a figure noisy, whatever the machine's speed or load). Every figure must
# read "noisy", never a number ("3999.963 us", "0.03 M/s"), and the demo
# must say what else was running (load average, busiest processes).
# The decision itself, on made-up series: bench_noisy_test.
# usage: demo_noisy.sh FLITRUN FLIT_DEMO
set -u
flitrun=$1 demo=$2
command -v taskset >/dev/null || { echo "demo_noisy: no taskset (util-linux)"; exit 77; }
taskset -c 0 true 2>/dev/null || { echo "demo_noisy: cannot pin to CPU 0"; exit 77; }
[ -r /proc/self/schedstat ] || { echo "demo_noisy: no /proc/PID/schedstat"; exit 77; }
dir=$(mktemp -d) || exit 1
hog=
cleanup() {
    [ -n "$hog" ] && kill "$hog" 2>/dev/null && wait "$hog" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
fail() {
    echo "demo_noisy: $*"
    cat "$dir/out"
    exit 1
}
taskset -c 0 sh -c 'while :; do :; done' &
hog=$!

# act 1: latency, bandwidth, rate
taskset -c 0 "$flitrun" -n 2 --timeout 240 "$demo" latency >"$dir/out" 2>&1 ||
    fail "flit-demo latency failed"
grep -q '^  other work: .* CPUs busy with other work, load average .*; busiest: ' \
    "$dir/out" || fail "no line on what else was running"
rows=$(grep -cE '^  (one-way latency|bandwidth|message rate)' "$dir/out")
[ "$rows" -eq 7 ] || fail "$rows rows, expected 7"
noisy=$(grep -E '^  (one-way latency|bandwidth|message rate)' "$dir/out" |
    grep -cE ' noisy +ranks waited [0-9]+ ms for a CPU in [0-9]+ ms$')
[ "$noisy" -eq 7 ] || fail "$noisy of 7 rows say noisy beside a hog on their CPU"
! grep -E '^  (one-way latency|bandwidth|message rate)' "$dir/out" |
    grep -qE ' (us|GB/s|M/s)( |$)' || fail "a figure printed as a number"

# act 2: all-to-all
taskset -c 0 "$flitrun" -n 4 --timeout 240 "$demo" alltoall 300 >"$dir/out" 2>&1 ||
    fail "flit-demo alltoall failed"
grep -q '^  other work: .*load average' "$dir/out" || fail "no line on other work"
grep -q '^  rate noisy: the 4 ranks waited' "$dir/out" || fail "rate not noisy"
! grep -q 'messages/s' "$dir/out" || fail "a rate printed as a number"
grep -q 'streams verified' "$dir/out" || fail "streams not verified"
echo "demo_noisy: every figure noisy beside the hog"
exit 0
