#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A flit job over AF_XDP across the hosts of the test network (run by
# `netns.sh run`, FLITNET_* set): FLIT_TRANSPORT=xdp, flitrun in host 0
# starting rank i in host i (tests/net/job.sh), then checks that AF_XDP
# really carried it.
#
#   xdp_job.sh --have ON|OFF [--loss PCT] [--dup PCT] [--busy K] [--mixed]
#              [--rc N] [--out RE]... [--err RE]... FLITRUN [flitrun options]
#              PROGRAM [args]
#
#   --have      whether the build has the transport (FLIT_WITH_XDP): OFF skips
#   --loss PCT  the switch drops PCT% of the UDP frames each host sends
#               (netdev ingress of its port): the hosts' own rules (netns.sh
#               --loss) sit behind XDP, which takes our frames first
#   --dup PCT   the switch sends PCT% of the UDP frames each host sends
#               twice: at the ingress of the sender's port a clone goes
#               straight out of the destination's port (`dup to`), the
#               frame itself through the bridge. A host's own rules (netns.sh
#               --dup, ip output) would clone what AF_XDP never hands to IP
#   --busy K    each rank opens K endpoints more, which find eth0's queue
#               taken by its first (one xdp endpoint per interface and
#               host, docs/xdp.md): each must say so once and serve on UDP
#   --mixed     the last rank runs without the capabilities AF_XDP needs:
#               it must say why once and serve on plain UDP, while the
#               others still send it AF_XDP frames
#   --rc N      flitrun must exit N (default 0; 137 for a job that kills a
#               rank under --keep-going)
#   --out RE    flitrun's stdout must match RE (grep -E); --err: its stderr
#
# Checks: flitrun's status; each rank that may attach says "AF_XDP on eth0",
# the others "UDP serves" with the reason, once each; every peer of an
# attached rank was served through "AF_XDP on eth0"; with --loss the switch
# dropped frames; with --dup it cloned frames, and each rank's channel
# (FLIT_STATS report, "duplicates N") dropped as duplicates at least half of
# the clones sent to its host (a clone of a bare acknowledgement is no
# duplicate chunk); --out/--err; no process left in any host afterwards.
# Exit 0 pass, 1 fail, 77 skip.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
LOSS=0
DUP=0
MIXED=0
BUSY=0
RC=0
OUT=()
ERR=()
HAVE=OFF
while [ $# -gt 0 ]; do
  case $1 in
    --loss) LOSS=$2; shift 2 ;;
    --dup) DUP=$2; shift 2 ;;
    --mixed) MIXED=1; shift ;;
    --busy) BUSY=$2; shift 2 ;;
    --rc) RC=$2; shift 2 ;;
    --out) OUT+=("$2"); shift 2 ;;
    --err) ERR+=("$2"); shift 2 ;;
    --have) HAVE=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || {
  echo "usage: xdp_job.sh --have ON|OFF [--loss PCT] [--dup PCT] [--busy K] [--mixed]" \
    "[--rc N] [--out RE]... [--err RE]... FLITRUN PROGRAM..." >&2
  exit 2
}
FLITRUN=$1
shift
N=$FLITNET_HOSTS
last=$((N - 1))
SW=$FLITNET_PREFIX-sw

[ "$HAVE" = ON ] ||
  { echo "SKIP: this flit was built without AF_XDP (Debian: libxdp-dev libbpf-dev clang)"; exit 77; }
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: setpriv not found (Debian: util-linux)"; exit 77; }

# The switch's rules: a chain at the ingress of each port p<i> (what host i
# sends), dropping first, then cloning what it lets through to the port of
# the frame's destination (a clone sent out of a port leaves the switch:
# it passes no ingress hook again, so each frame is cloned at most once and
# the counters are exact).
if [ "$LOSS" -gt 0 ] || [ "$DUP" -gt 0 ]; then
  command -v nft >/dev/null 2>&1 || { echo "SKIP: nft not found (Debian: nftables)"; exit 77; }
  rules="table netdev flitxdp {"$'\n'
  for ((i = 0; i < N; i++)); do
    rules+="  chain p$i {"$'\n'"    type filter hook ingress device \"p$i\" priority 0;"$'\n'
    [ "$LOSS" -gt 0 ] &&
      rules+="    meta protocol ip ip protocol udp numgen random mod 100 < $LOSS counter drop"$'\n'
    for ((j = 0; j < N && DUP > 0; j++)); do
      [ "$j" -eq "$i" ] && continue
      addr=FLITNET_ADDR$j
      rules+="    meta protocol ip ip protocol udp ip daddr ${!addr}"
      rules+=" numgen random mod 100 < $DUP counter dup to \"p$j\""$'\n'
    done
    rules+="  }"$'\n'
  done
  echo "$rules }" | ip netns exec "$SW" nft -f - || { echo "FAIL: nft refused the switch's rules"; exit 1; }
fi

FAILS=0
# shellcheck source=tests/net/hosts_lib.sh disable=SC1091
. "$HERE/../net/hosts_lib.sh"
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

# The launcher: rank i in host i; with --mixed, the last host's rank
# without the capabilities that bpf() and AF_XDP ask for.
export XDPTEST_PLAIN_HOST=
if [ "$MIXED" -eq 1 ]; then
  XDPTEST_PLAIN_HOST=$(eval echo "\$FLITNET_NS$last")
  # Its kernel sends through veth with the UDP checksum left to an offload
  # that veth never does: the AF_XDP side, which checks it, would refuse
  # every datagram. A NIC finishes the checksum on the wire.
  command -v ethtool >/dev/null 2>&1 || { echo "SKIP: ethtool not found (Debian: ethtool)"; exit 77; }
  ip netns exec "$XDPTEST_PLAIN_HOST" ethtool -K eth0 tx off >/dev/null ||
    { echo "FAIL: ethtool -K eth0 tx off refused"; exit 1; }
fi
export FLIT_TRANSPORT=xdp FLIT_VERBOSE=1 FLIT_STATS=1
ip netns exec "$FLITNET_NS0" "$FLITRUN" -n "$N" --hosts "$FLITNET_NSLIST" \
  --launch "$HERE/launch.sh {host}" "$@" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq "$RC" ] || fail "flitrun exited $rc, expected $RC"
# matches FILE WHAT RE...: each RE (grep -E) matches a line of FILE.
matches() {
  local file=$1 what=$2 re
  shift 2
  for re in "$@"; do grep -qE -- "$re" "$file" || fail "$what does not match '$re'"; done
}
matches "$TMP/out" stdout "${OUT[@]+"${OUT[@]}"}"
matches "$TMP/err" stderr "${ERR[@]+"${ERR[@]}"}"

attached=$(grep -c "info: xdp: AF_XDP on eth0 queue" "$TMP/err")
refused=$(grep -c "UDP serves this endpoint" "$TMP/err")
want_refused=$MIXED
[ "$attached" -eq $((N - want_refused)) ] ||
  fail "$attached ranks said 'AF_XDP on eth0', expected $((N - want_refused))"
busy=$(grep -c "warning: xdp: .*eth0 is busy.*UDP serves this endpoint" "$TMP/err")
[ "$busy" -eq $((N * BUSY)) ] || fail "$busy endpoints found eth0 busy, expected $((N * BUSY))"
[ "$refused" -eq $((want_refused + N * BUSY)) ] ||
  fail "$refused endpoints fell back to UDP, expected $((want_refused + N * BUSY))"
if [ "$MIXED" -eq 1 ]; then
  grep -q "flit\[$last\] warning: xdp: .*not permitted" "$TMP/err" ||
    fail "rank $last did not say why it cannot use AF_XDP"
  grep -q "flit\[$last\].*-> xdp: udp .*(no xdp)" "$TMP/err" ||
    fail "rank $last's peers are not described as served by UDP"
  # FLIT_STATS=1's report names only the counters that moved: no
  # refused_packets in rank 0's sections means none was refused.
  grep -q '^flit\[0\] endpoint 0 counters' "$TMP/err" || fail "rank 0 printed no counters"
  refused_pkts=$(sed -n 's/^flit\[0\] .*refused_packets \([0-9]*\).*/\1/p' "$TMP/err" |
    awk '{ n += $1 } END { print n + 0 }')
  [ "$refused_pkts" -eq 0 ] || fail "rank 0 refused $refused_pkts packets"
fi
# Every attached rank sent to every peer through AF_XDP.
for ((r = 0; r < N - want_refused; r++)); do
  through=$(grep -c "flit\[$r\] info: xdp: rank [0-9]* .* through AF_XDP on eth0" "$TMP/err")
  [ "$through" -eq $((N - 1)) ] ||
    fail "rank $r sent through AF_XDP to $through peers, not $((N - 1))"
done
grep -q "wrong checksum" "$TMP/err" && fail "a rank refused frames for their checksum"
if [ "$LOSS" -gt 0 ]; then
  dropped=$(ip netns exec "$SW" nft list table netdev flitxdp |
    sed -n 's/.*counter packets \([0-9]*\) .* drop$/\1/p' | awk '{ s += $1 } END { print s + 0 }')
  echo "the switch dropped $dropped frames"
  [ "$dropped" -gt 0 ] || fail "the switch dropped nothing"
fi
if [ "$DUP" -gt 0 ]; then
  # Per host: the clones the switch sent it (its address's rules on the
  # other ports), against the duplicates its rank's channel dropped (the
  # counter's lines in FLIT_STATS's report; it may wrap onto a second one).
  ip netns exec "$SW" nft list table netdev flitxdp >"$TMP/sw"
  cloned=0
  for ((r = 0; r < N; r++)); do
    addr=FLITNET_ADDR$r
    to=$(sed -n "s/.* ip daddr ${!addr//./\\.} .*counter packets \([0-9]*\) .* dup to .*/\1/p" \
      "$TMP/sw" | awk '{ s += $1 } END { print s + 0 }')
    grep -q "^flit\[$r\] endpoint 0 counters" "$TMP/err" || fail "rank $r printed no counters"
    dups=$(sed -n "s/^flit\[$r\] .*[ ,]duplicates \([0-9]*\).*/\1/p" "$TMP/err" |
      awk '{ n += $1 } END { print n + 0 }')
    echo "host $r: the switch cloned $to frames to it, rank $r dropped $dups duplicates"
    [ "$to" -gt 0 ] || fail "the switch cloned no frame to host $r"
    [ $((2 * dups)) -ge "$to" ] ||
      fail "rank $r dropped $dups duplicates, fewer than half the $to clones sent to it"
    cloned=$((cloned + to))
  done
  echo "the switch cloned $cloned frames"
fi
# Nothing left behind in any host: flitrun has reaped its ranks, a rank
# killed included (tests/net/hosts_lib.sh).
check_hosts_empty
if [ "$FAILS" -gt 0 ]; then
  echo "---- flitrun stdout"; cat "$TMP/out"
  echo "---- flitrun stderr"; cat "$TMP/err"
  exit 1
fi
grep -h "OK\|AF_XDP\|UDP serves" "$TMP/out" "$TMP/err" | grep -v "^flit\[.*info: FLIT_"
for re in "${OUT[@]+"${OUT[@]}"}"; do grep -hE -m 1 -- "$re" "$TMP/out"; done
for re in "${ERR[@]+"${ERR[@]}"}"; do grep -hE -m 1 -- "$re" "$TMP/err"; done
echo "ok: $N ranks over xdp$([ "$LOSS" -gt 0 ] && echo ", $LOSS% loss")$([ "$DUP" -gt 0 ] &&
  echo ", $DUP% duplicated")$([ "$MIXED" -eq 1 ] && echo ", rank $last on UDP"), flitrun exited $rc"
