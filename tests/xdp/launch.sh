#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# launch.sh HOST PROGRAM [args]: flitrun's --launch for xdp_job.sh: runs
# PROGRAM in network namespace HOST with an IPC namespace of its own (so
# ranks look like separate hosts); in host $XDPTEST_PLAIN_HOST without the
# capabilities AF_XDP needs (CAP_BPF, CAP_SYS_ADMIN, CAP_NET_ADMIN,
# CAP_NET_RAW, CAP_PERFMON), as an unprivileged rank would run.
host=$1
shift
if [ -n "${XDPTEST_PLAIN_HOST:-}" ] && [ "$host" = "$XDPTEST_PLAIN_HOST" ]; then
  exec ip netns exec "$host" unshare --ipc \
    setpriv --bounding-set=-bpf,-sys_admin,-net_admin,-net_raw,-perfmon \
    --inh-caps=-all -- "$@"
fi
exec ip netns exec "$host" unshare --ipc "$@"
