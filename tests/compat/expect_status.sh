#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# expect_status.sh CODE COMMAND...: COMMAND must exit with CODE.
code=$1
shift
"$@"
rc=$?
[ "$rc" -eq "$code" ] || { echo "FAIL: exited $rc, expected $code"; exit 1; }
echo "PASS: exited $code"
