#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# expect_status.sh STATUS COMMAND...: COMMAND must exit with STATUS.
want=$1
shift
"$@"
got=$?
if [ "$got" -ne "$want" ]; then
    echo "expected exit status $want, got $got" >&2
    exit 1
fi
