#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# expect_exit.sh CODE NPROCS COMMAND...: COMMAND (a job of NPROCS) must exit
# with CODE, every proc's exit callback must have printed its line, and no
# proc may report another as down: the exit was orderly. EXPECT_EXIT_RUNS=N
# runs the job N times, the k-th with FLIT_FAULT_SEED=k (with
# FLIT_DROP_RATE set, each run loses other datagrams).
code=$1 nprocs=$2
shift 2
runs=${EXPECT_EXIT_RUNS:-1}
k=1
while [ "$k" -le "$runs" ]; do
    out=$(FLIT_FAULT_SEED=$k AMUDP_EXIT_TEST="from the master" "$@" 2>&1)
    rc=$?
    echo "$out"
    lines=$(echo "$out" | grep -c "exit callback $code\$")
    [ "$rc" -eq "$code" ] || { echo "FAIL: run $k: the job exited $rc, expected $code"; exit 1; }
    [ "$lines" -eq "$nprocs" ] ||
        { echo "FAIL: run $k: $lines exit callbacks ran, expected $nprocs"; exit 1; }
    if echo "$out" | grep -q "is down"; then
        echo "FAIL: run $k: an orderly exit was reported as a proc going down"
        exit 1
    fi
    k=$((k + 1))
done
echo "PASS: exit $code ended all $nprocs procs ($runs runs)"
