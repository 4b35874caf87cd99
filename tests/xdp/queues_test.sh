#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# AF_XDP on an interface with several receive queues (docs/xdp.md, "NIC
# queues"): a NIC spreads flows over its queues by a hash of addresses and
# ports, and an AF_XDP socket receives only what arrives on its own queue.
#
# Two hosts joined by veth pairs of 4 queues each (tests/net/twolinks.sh
# with TWOLINKS_QUEUES=4; veth hands a frame sent on queue i to the peer's
# receive queue i). Rank 0 alone in host 0 on xdp; ranks 1-5 in host 1
# without the capabilities AF_XDP needs, so on plain UDP: their kernel picks
# each socket's send queue by the flow's hash, so their datagrams reach
# host 0 on several queues. mp_stress between every pair, every byte
# checked. Then:
#   - rank 0 attached a socket to every queue ("AF_XDP on eth0 queues 0-3");
#   - frames did arrive on a queue other than 0 (veth's per-queue XDP
#     counters; without that, 1 run in 1,024, the test shows nothing and
#     skips, saying so);
#   - host 0's own UDP stack received next to none of them (Udp InDatagrams
#     of /proc/net/snmp, per network namespace, counts what the XDP
#     program passed on to the kernel): each frame reached the socket of
#     the queue it came on. With a socket on queue 0 alone, every frame on
#     queues 1-3 went that way.
#
#   queues_test.sh --have ON|OFF FLITRUN MP_STRESS
#
# Exit 0 pass, 1 fail, 77 skip (not root, no iproute2, util-linux or
# ethtool, no AF_XDP in the build).
set -u
HAVE=OFF
[ "${1:-}" = --have ] && { HAVE=$2; shift 2; }
[ $# -eq 2 ] || { echo "usage: queues_test.sh --have ON|OFF FLITRUN MP_STRESS" >&2; exit 2; }
FLITRUN=$1
PROG=$2
HERE=$(cd "$(dirname "$0")" && pwd)
[ "$HAVE" = ON ] ||
  { echo "SKIP: this flit was built without AF_XDP (Debian: libxdp-dev libbpf-dev clang)"; exit 77; }
for tool in unshare setpriv ethtool; do
  command -v $tool >/dev/null 2>&1 ||
    { echo "SKIP: $tool not found (Debian: $([ $tool = ethtool ] && echo ethtool || echo util-linux))"; exit 77; }
done
# shellcheck source=tests/net/twolinks.sh
. "$HERE/../net/twolinks.sh"
TWOLINKS_QUEUES=4 twolinks_net flxq
# Host 1's kernel leaves UDP checksums to an offload veth never does: the
# AF_XDP side, which checks them, would refuse its datagrams.
ip netns exec "$NS1" ethtool -K eth0 tx off >/dev/null || { echo "FAIL: ethtool -K refused"; exit 1; }

in_datagrams() { # the UDP datagrams host 0's kernel received
  ip netns exec "$NS0" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $2 }' /proc/net/snmp
}
before=$(in_datagrams)
XDPTEST_PLAIN_HOST=$NS1 FLIT_TRANSPORT=xdp FLIT_VERBOSE=1 FLIT_STATS=1 \
  ip netns exec "$NS0" "$FLITRUN" -n 6 --timeout 120 --hosts "$NS0:1,$NS1:5" \
  --launch "$HERE/launch.sh {host}" "$PROG" --count 400 --seed 71 >"$TMP/out" 2>"$TMP/err"
rc=$?
after=$(in_datagrams)
fail() {
  echo "FAIL: $*" >&2
  cat "$TMP/out" "$TMP/err" >&2
  exit 1
}
[ "$rc" -eq 0 ] || fail "flitrun exited $rc"
grep -q "info: xdp: AF_XDP on eth0 queues 0-3" "$TMP/err" ||
  fail "rank 0 did not say 'AF_XDP on eth0 queues 0-3'"
# received is the datagram count of rank 0's transport (its FLIT_STATS dump)
received=$(sed -n 's/^flit\[0\] .*xdp: .*datagrams_received \([0-9]*\).*/\1/p' "$TMP/err" | head -1)
[ -n "$received" ] || fail "no xdp counters from rank 0"
others=$(ip netns exec "$NS0" ethtool -S eth0 |
  awk -F: '$1 ~ /rx_queue_[1-9][0-9]*_xdp_packets/ { n += $2 } END { print n + 0 }')
kernel=$((after - before))
echo "rank 0 received $received datagrams; $others frames came on queues 1-3; host 0's UDP stack took $kernel"
if [ "$others" -eq 0 ]; then # 5 flows on queue 0 by chance: 1 run in 1,024
  echo "SKIP: every flow hashed to queue 0: nothing to see this time"
  exit 77
fi
# A handful may come before the sockets are on the queues; not thousands.
[ "$kernel" -le 16 ] || fail "host 0's UDP stack received $kernel datagrams: frames on queues without a socket"
echo "PASS: every queue's frames reached rank 0 by AF_XDP"
