#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# expect_exit.sh CODE NPROCS COMMAND...: COMMAND (a job of NPROCS) must exit
# with CODE, every proc's exit callback must have printed its line, and no
# proc may report another as down: the exit was orderly.
code=$1 nprocs=$2
shift 2
out=$(AMUDP_EXIT_TEST="from the master" "$@" 2>&1)
rc=$?
echo "$out"
lines=$(echo "$out" | grep -c "exit callback $code\$")
[ "$rc" -eq "$code" ] || { echo "FAIL: the job exited $rc, expected $code"; exit 1; }
[ "$lines" -eq "$nprocs" ] || { echo "FAIL: $lines exit callbacks ran, expected $nprocs"; exit 1; }
if echo "$out" | grep -q "is down"; then
    echo "FAIL: an orderly exit was reported as a proc going down"
    exit 1
fi
echo "PASS: exit $code from one proc ended all $nprocs"
