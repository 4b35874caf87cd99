#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# expect_status.sh [--times N] STATUS COMMAND...: COMMAND must exit with
# STATUS, each of N runs (1 unless told).
times=1
if [ "$1" = --times ]; then
    times=$2
    shift 2
fi
want=$1
shift
i=0
while [ "$i" -lt "$times" ]; do
    i=$((i + 1))
    "$@"
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "run $i of $times: expected exit status $want, got $got" >&2
        exit 1
    fi
done
