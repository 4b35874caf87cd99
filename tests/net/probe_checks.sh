#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Checks of the test network that take more than one probe run. Runs under
# `netns.sh run` (FLITNET_* set).
#
#   probe_checks.sh mtu|mesh|sweep UDP_PROBE
set -u

CASE=$1
PROBE=$2
FAILS=0

probe() {
  echo "+ udp_probe $*"
  "$PROBE" "$@" || FAILS=$((FAILS + 1))
}

# MTU 1500: 1472 bytes of payload (+ 8 UDP + 20 IP) is one frame, with or
# without DF; one byte more is refused with DF and fragmented without.
check_mtu() {
  probe --from 0 --to 1 -n 200 -s 1472 --df --expect-nofrag
  probe --from 0 --to 1 -n 200 -s 1472 --expect-nofrag
  probe --from 0 --to 1 -n 20 -s 1473 --df --expect-emsgsize
  probe --from 0 --to 1 -n 200 -s 1473 --expect-frag
  probe --from 1 --to 0 -n 50 -s 65507 --expect-frag
}

# Every host reaches every other through the bridge.
check_mesh() {
  local i j
  for ((i = 0; i < FLITNET_HOSTS; i++)); do
    for ((j = 0; j < FLITNET_HOSTS; j++)); do
      [ "$i" -eq "$j" ] || probe --from "$i" --to "$j" -n 200
    done
  done
}

# Loss and duplication changed on the live network, measured both ways.
# set-loss and set-dup need nft: skipped (77) without it.
check_sweep() {
  local pct
  command -v nft >/dev/null 2>&1 || { echo "SKIP: nft not found (Debian: nftables)"; exit 77; }
  for pct in 0 1 5 10 20; do
    "$FLITNET_SH" set-loss "$FLITNET_PREFIX" "$pct" || FAILS=$((FAILS + 1))
    probe --from 0 --to 1 --loss "$pct"
    probe --from 1 --to 0 --loss "$pct"
  done
  "$FLITNET_SH" set-dup "$FLITNET_PREFIX" on || FAILS=$((FAILS + 1))
  probe --from 0 --to 1 --loss 20 --dup 100
  "$FLITNET_SH" stats "$FLITNET_PREFIX"
  "$FLITNET_SH" set-loss "$FLITNET_PREFIX" 0 || FAILS=$((FAILS + 1))
  "$FLITNET_SH" set-dup "$FLITNET_PREFIX" off || FAILS=$((FAILS + 1))
  probe --from 1 --to 0
}

case $CASE in
  mtu) check_mtu ;;
  mesh) check_mesh ;;
  sweep) check_sweep ;;
  *) echo "usage: probe_checks.sh mtu|mesh|sweep UDP_PROBE" >&2; exit 2 ;;
esac
[ "$FAILS" -eq 0 ] || { echo "$FAILS failure(s)" >&2; exit 1; }
