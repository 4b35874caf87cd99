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
#                 [--transport udp|xdp [--have ON|OFF]]
#
# --transport xdp: FLIT_TRANSPORT=xdp, an AF_XDP socket on each rail
# (docs/xdp.md); checks also that each rank attached one to every rail and
# reached its peer through AF_XDP on every rail. --have: whether the build
# has AF_XDP (FLIT_WITH_XDP; OFF skips).
#
# Exit 0 pass, 1 fail, 77 skip (not root, no iproute2 or util-linux, no
# AF_XDP in the build).
set -u
FLITRUN=$1
PROG=$2
shift 2
RAILS=eth0,eth1
PROBE_MS=100
TRANSPORT=udp
HAVE=ON
while [ $# -gt 0 ]; do
  case $1 in
    --rails) RAILS=$2; shift 2 ;;
    --probe-ms) PROBE_MS=$2; shift 2 ;;
    --transport) TRANSPORT=$2; shift 2 ;;
    --have) HAVE=$2; shift 2 ;;
    *)
      echo "usage: rails_test.sh FLITRUN MP_RAILS [--rails LIST] [--probe-ms MS]" \
        "[--transport udp|xdp [--have ON|OFF]]" >&2
      exit 2
      ;;
  esac
done
[ "$HAVE" = ON ] ||
  { echo "SKIP: this flit was built without AF_XDP (Debian: libxdp-dev libbpf-dev clang)"; exit 77; }

command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not found (Debian: util-linux)"; exit 77; }
# shellcheck source=tests/net/twolinks.sh
. "$(dirname "$0")/twolinks.sh"
twolinks_net flrails

# wait_file NAME: the job's handshake, bounded (60 s).
wait_file() {
  for ((k = 0; k < 600; k++)); do
    [ -e "$TMP/$1" ] && return 0
    kill -0 "$JOB" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

ip netns exec "$NS0" env FLIT_UDP_RAILS="$RAILS" FLIT_PATH_PROBE_MS="$PROBE_MS" \
  FLIT_PEER_TIMEOUT=10 FLIT_TRANSPORT="$TRANSPORT" FLIT_VERBOSE=1 \
  "$FLITRUN" -n 2 --timeout 60 --hosts "$NS0,$NS1" \
  --launch 'ip netns exec {host} unshare --ipc' \
  "$PROG" --dir "$TMP" --max-pause-ms $((3 * PROBE_MS)) --transport "$TRANSPORT" \
  >"$TMP/out" 2>"$TMP/err" &
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
# Over xdp: each rank's socket on every rail, and its peer reached through
# each (the neighbour answered on that link), not the kernel's sockets.
if [ "$TRANSPORT" = xdp ]; then
  IFS=, read -r -a rails <<<"$RAILS"
  for ((i = 0; i < ${#rails[@]}; i++)); do
    on=$(grep -c "info: xdp: AF_XDP on ${rails[i]} queue 0" "$TMP/err")
    by=$(grep -cE "info: xdp: rank [01] \(10\.79\.$((i + 1))\.[12]\) through AF_XDP on ${rails[i]}\b" "$TMP/err")
    if [ "$on" -ne 2 ] || [ "$by" -ne 2 ]; then
      echo "FAIL: rail ${rails[i]}: $on ranks attached AF_XDP (expected 2), $by reached their peer by it (expected 2)" >&2
      cat "$TMP/err" >&2
      exit 1
    fi
  done
fi
echo "PASS: $TRANSPORT rails $RAILS, eth1 down and up mid-stream"
exit 0
