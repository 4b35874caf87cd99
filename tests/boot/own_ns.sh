#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# own_ns.sh FLITRUN PROG: ranks that flitrun starts on its host but that
# enter an IPC namespace of their own (unshare --ipc) cannot share memory;
# flit_ep_create fails on every rank, with an error that says what to do,
# and started as if on two hosts (--hosts, --launch) the same ranks work
# over UDP.
set -u
command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not found (Debian: util-linux)"; exit 77; }
unshare --ipc true 2>/dev/null || { echo "SKIP: unshare --ipc needs root"; exit 77; }
out=$("$1" -n 2 --timeout 60 unshare --ipc "$2" 2>&1)
rc=$?
echo "$out"
[ $rc -ne 0 ] || { echo "FAIL: ranks in IPC namespaces of their own ran"; exit 1; }
# Both fail, each on its own (no round waits for the other): the first to
# exit makes flitrun stop the job, maybe before the other has said why.
said=$(echo "$out" | grep -c "namespaces of its own")
[ "$said" -ge 1 ] || { echo "FAIL: no rank said why"; exit 1; }
out=$("$1" -n 2 --timeout 60 --hosts a,b --launch 'env FLITTEST_HOST={host} unshare --ipc' "$2" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: started as two hosts, flitrun exited $rc"; exit 1; }
[ "$(echo "$out" | grep -c answered)" -eq 2 ] || { echo "FAIL: not both ranks answered"; exit 1; }
echo "ok: the clear error on one host, UDP as two"
