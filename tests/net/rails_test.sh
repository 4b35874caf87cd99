#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Several rails per endpoint, one lost mid-stream (docs/rails.md): two
# hosts (network namespaces) joined by two links, eth0 (10.79.1.0/24) and
# eth1 (10.79.2.0/24), each a veth pair of its own; both ranks run with
# FLIT_UDP_RAILS=eth0,eth1 (--rails LIST: another list; eth1 alone is
# one socket, as without rails, and cannot survive). mp_rails streams numbered messages from rank 0
# to rank 1; at its handshakes (rails.c) this script takes eth1 down and
# brings it back up. The job's boot goes over eth0. The hosts and links:
# twolinks.sh.
#
#   rails_test.sh FLITRUN MP_RAILS [--rails LIST] [--probe-ms MS]
#
# Exit 0 pass, 1 fail, 77 skip (not root, no iproute2 or util-linux).
set -u
FLITRUN=$1
PROG=$2
shift 2
RAILS=eth0,eth1
PROBE_MS=100
while [ $# -gt 0 ]; do
  case $1 in
    --rails) RAILS=$2; shift 2 ;;
    --probe-ms) PROBE_MS=$2; shift 2 ;;
    *) echo "usage: rails_test.sh FLITRUN MP_RAILS [--rails LIST] [--probe-ms MS]" >&2; exit 2 ;;
  esac
done

command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not found (Debian: util-linux)"; exit 77; }
NET=$(dirname "$0")/twolinks.sh
P=flrails-$$
NS0=$P-h0
NS1=$P-h1
TMP=$(mktemp -d) || exit 1
trap '"$NET" down "$P"; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
"$NET" up "$P" || exit $?

# wait_file NAME: the job's handshake, bounded (60 s).
wait_file() {
  for ((k = 0; k < 600; k++)); do
    [ -e "$TMP/$1" ] && return 0
    kill -0 "$JOB" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

ip netns exec "$NS0" env FLIT_UDP_RAILS=$RAILS FLIT_PATH_PROBE_MS="$PROBE_MS" \
  FLIT_PEER_TIMEOUT=10 "$FLITRUN" -n 2 --timeout 60 --hosts "$NS0,$NS1" \
  --launch 'ip netns exec {host} unshare --ipc' \
  "$PROG" --dir "$TMP" --max-pause-ms $((3 * PROBE_MS)) >"$TMP/out" 2>"$TMP/err" &
JOB=$!
if wait_file third; then
  ip -n "$NS0" link set eth1 down
  touch "$TMP/down"
  if wait_file two-thirds; then
    ip -n "$NS0" link set eth1 up
    touch "$TMP/up"
  fi
fi
wait "$JOB"
rc=$?
cat "$TMP/out"
if [ "$rc" -ne 0 ]; then
  echo "FAIL: flitrun exited $rc" >&2
  cat "$TMP/err" >&2
  exit 1
fi
echo "PASS: rails $RAILS, eth1 down and up mid-stream"
exit 0
