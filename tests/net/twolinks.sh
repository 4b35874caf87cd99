#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Two "hosts" joined by two links, for several rails per endpoint
# (FLIT_UDP_RAILS, docs/rails.md):
#
#   twolinks.sh up PREFIX     namespaces PREFIX-h0 and PREFIX-h1, each with
#                             lo, eth0 (10.79.1.{1,2}/24) and eth1
#                             (10.79.2.{1,2}/24); eth0 and eth1 are veth pairs
#                             of their own, no bridge
#   twolinks.sh down PREFIX   removes them, killing what still runs inside
#
# TWOLINKS_QUEUES=N (default 1): each veth with N send and N receive
# queues (a NIC's RSS queues: the sender's queue is chosen by a hash of
# the flow, and the frame arrives on the receiver's queue of that number).
#
# Sourced (`. twolinks.sh`), it defines twolinks_net TAG for test scripts:
# up with prefix TAG-PID, NS0 and NS1 set to its hosts and TMP to a scratch
# directory, both removed when the script exits (it exits 77 with the
# reason when this machine cannot).
#
# Nothing is created in the caller's namespace. Exit 0 ok, 1 error, 77 this
# machine cannot do it (not root, no iproute2, namespaces refused).
set -u

down() {
  local ns pid
  for ns in "$1-h0" "$1-h1"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  return 0
}

up() {
  local p=$1 l h ns q=${TWOLINKS_QUEUES:-1}
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
  command -v ip >/dev/null 2>&1 || { echo "SKIP: ip not found (Debian: iproute2)"; exit 77; }
  down "$p"
  ip netns add "$p-h0" 2>/dev/null && ip netns add "$p-h1" 2>/dev/null ||
    { down "$p"; echo "SKIP: cannot create network namespaces here"; exit 77; }
  for l in 0 1; do
    ip -n "$p-h0" link add "eth$l" numtxqueues "$q" numrxqueues "$q" type veth \
      peer name "eth$l" netns "$p-h1" numtxqueues "$q" numrxqueues "$q" || return 1
    for h in 0 1; do
      ns=$p-h$h
      ip -n "$ns" addr add "10.79.$((l + 1)).$((h + 1))/24" dev "eth$l" || return 1
      ip -n "$ns" link set "eth$l" up || return 1
    done
  done
  ip -n "$p-h0" link set lo up && ip -n "$p-h1" link set lo up
}

# shellcheck disable=SC2034 # NS0, NS1, TMP: the sourcing script's
twolinks_net() {
  TWOLINKS_SH=${BASH_SOURCE[0]}
  TWOLINKS_P=$1-$$
  NS0=$TWOLINKS_P-h0
  NS1=$TWOLINKS_P-h1
  TMP=$(mktemp -d) || exit 1
  trap '"$TWOLINKS_SH" down "$TWOLINKS_P"; rm -rf "$TMP"' EXIT
  trap 'exit 1' INT TERM
  "$TWOLINKS_SH" up "$TWOLINKS_P" || exit $?
}
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

case ${1:-} in
  up) [ $# -eq 2 ] || exit 2; up "$2" || { down "$2"; exit 1; } ;;
  down) [ $# -eq 2 ] || exit 2; down "$2" ;;
  *) sed -n '3,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
