#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# shm_full.sh FLITRUN PROG NRANKS MB [args...]: runs PROG's ranks in a mount
# namespace of their own whose /dev/shm is a tmpfs of MB MiB, so that the
# program can fill it without touching the host's. The namespace's mounts
# are private and go with its last process: nothing is left behind.
set -u
flitrun=$1 prog=$2 nranks=$3 mb=$4
shift 4
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (a mount namespace with a small /dev/shm)"; exit 77; }
command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not found (Debian: util-linux)"; exit 77; }
unshare --mount --propagation private true 2>/dev/null ||
    { echo "SKIP: unshare --mount refused here (a container without CAP_SYS_ADMIN?)"; exit 77; }
exec unshare --mount --propagation private sh -c '
    mount -t tmpfs -o "size=$1m,mode=1777" flit-test-shm /dev/shm ||
        { echo "SKIP: cannot mount a tmpfs on /dev/shm"; exit 77; }
    shift
    exec "$@"' sh "$mb" "$flitrun" -n "$nranks" --timeout 120 "$prog" --shm-mb "$mb" "$@"
