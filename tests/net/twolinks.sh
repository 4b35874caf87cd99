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
  local p=$1 l h ns
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
  command -v ip >/dev/null 2>&1 || { echo "SKIP: ip not found (Debian: iproute2)"; exit 77; }
  down "$p"
  ip netns add "$p-h0" 2>/dev/null && ip netns add "$p-h1" 2>/dev/null ||
    { down "$p"; echo "SKIP: cannot create network namespaces here"; exit 77; }
  for l in 0 1; do
    ip -n "$p-h0" link add "eth$l" type veth peer name "eth$l" netns "$p-h1" || return 1
    for h in 0 1; do
      ns=$p-h$h
      ip -n "$ns" addr add "10.79.$((l + 1)).$((h + 1))/24" dev "eth$l" || return 1
      ip -n "$ns" link set "eth$l" up || return 1
    done
  done
  ip -n "$p-h0" link set lo up && ip -n "$p-h1" link set lo up
}

case ${1:-} in
  up) [ $# -eq 2 ] || exit 2; up "$2" || { down "$2"; exit 1; } ;;
  down) [ $# -eq 2 ] || exit 2; down "$2" ;;
  *) sed -n '3,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
