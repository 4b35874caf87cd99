#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# rounds.sh FLITRUN PROG K: flitrun -v -n 3 PROG succeeds after exactly K
# allgather rounds (flitrun's own count of them).
set -u
out=$("$1" -v -n 3 --timeout 60 "$2" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: flitrun exited $rc"; exit 1; }
rounds=$(echo "$out" | grep -c "^flitrun: allgather round [0-9]* complete")
[ "$rounds" -eq "$3" ] || { echo "FAIL: $rounds allgather rounds, expected $3"; exit 1; }
echo "ok: $rounds rounds"
