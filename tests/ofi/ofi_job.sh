#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A flit job over libfabric (FLIT_TRANSPORT=ofi) on one provider, all ranks
# on this host or (--net) one per host of the test network, then checks
# that libfabric carried it.
#
#   ofi_job.sh --have ON|OFF PROVIDER [--net] [--tcp-loss PCT] [--rc N]
#              [--out RE]... FLITRUN [flitrun options] PROGRAM [args]
#
#   --have  whether the build has the transport (FLIT_WITH_OFI): OFF skips
#   --rc N  the exit status flitrun must give (a rank killed: 137); 0 else
#   --out RE  a line of the job's output (stdout and stderr) must match RE
#   --absent  PROVIDER is one libfabric does not have: the job must fail
#             (--rc, --out say how), and nothing was carried
#   --net     run by `netns.sh run` (tests/net, FLITNET_* set): flitrun in
#             host 0 starts rank i in host i, as tests/net/job.sh does, so
#             every pair of ranks talks through the veth pairs
#   --mixed   (with --net) FLIT_TRANSPORT=shm,ofi and two ranks a host
#             (flitrun -n 2*HOSTS): ranks of one host must reach each
#             other over shared memory, those of other hosts over ofi at
#             that host's veth address
#   --tcp-loss PCT  (with --net) the switch drops PCT% of the TCP segments
#             each host sends (netdev ingress of its port; netns.sh's own
#             --loss drops UDP only), and must have dropped some; under
#             netns.sh --loss (UDP), the hosts must have dropped some
#
# Checks: the status; with FLIT_STATS=1, rank 0 says its peers were in
# contact over "ofi" (no other transport could have served: shm and udp
# stand aside under FLIT_TRANSPORT=ofi). With --net, also (FLIT_VERBOSE=1)
# that rank 0's provider sits on the hosts' interface (domain eth0) and
# that the libfabric address it holds for rank i is host i's veth address,
# and that no process is left in any host. Exit 0 pass, 1 fail, 77 skip.
set -u
HAVE=OFF
[ "${1:-}" = --have ] && { HAVE=$2; shift 2; }
PROV=${1:?usage: ofi_job.sh --have ON|OFF PROVIDER [--rc N] [--out RE] FLITRUN...}
shift
RC=0
OUTS=
ABSENT=0
NET=0
MIXED=0
TCP_LOSS=0
while [ $# -gt 0 ]; do
  case $1 in
    --absent) ABSENT=1; shift ;;
    --net) NET=1; shift ;;
    --mixed) MIXED=1; shift ;;
    --tcp-loss) TCP_LOSS=$2; shift 2 ;;
    --rc) RC=$2; shift 2 ;;
    --out) OUTS="$OUTS
$2"; shift 2 ;;
    *) break ;;
  esac
done

[ "$HAVE" = ON ] ||
  { echo "SKIP: this flit was built without libfabric (Debian: libfabric-dev)"; exit 77; }
command -v fi_info >/dev/null 2>&1 ||
  { echo "SKIP: fi_info not found (Debian: libfabric-bin)"; exit 77; }
[ "$ABSENT" = 1 ] || fi_info -p "$PROV" -t FI_EP_RDM >/dev/null 2>&1 ||
  { echo "SKIP: libfabric has no provider '$PROV' for FI_EP_RDM here (fi_info -p $PROV)"; exit 77; }

if [ "$NET" = 1 ]; then
  [ -n "${FLITNET_NSLIST:-}" ] || { echo "ofi_job.sh: --net outside netns.sh run" >&2; exit 2; }
  command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not found (Debian: util-linux)"; exit 77; }
  if [ "$TCP_LOSS" -gt 0 ]; then
    command -v nft >/dev/null 2>&1 || { echo "SKIP: nft not found (Debian: nftables)"; exit 77; }
    # In the switch's namespace: it goes with the network's teardown.
    i=0
    rules="table netdev flitofi {"
    while [ "$i" -lt "$FLITNET_HOSTS" ]; do
      rules="$rules
  chain p$i {
    type filter hook ingress device \"p$i\" priority 0;
    meta protocol ip ip protocol tcp numgen random mod 100 < $TCP_LOSS counter drop
  }"
      i=$((i + 1))
    done
    printf '%s\n}\n' "$rules" | ip netns exec "$FLITNET_PREFIX-sw" nft -f - ||
      { echo "FAIL: nft refused the loss rules"; exit 1; }
  fi
  FLITRUN=$1
  shift
  export FLIT_VERBOSE=1
  set -- ip netns exec "$FLITNET_NS0" "$FLITRUN" --hosts "$FLITNET_NSLIST" \
    --launch 'ip netns exec {host} unshare --ipc' "$@"
fi

LOG=$(mktemp) || exit 1
trap 'rm -f "$LOG"' EXIT
TRANSPORT=ofi
[ "$MIXED" = 1 ] && TRANSPORT=shm,ofi
FLIT_TRANSPORT=$TRANSPORT FLIT_OFI_PROVIDER=$PROV FLIT_STATS=1 "$@" >"$LOG" 2>&1
got=$?
cat "$LOG"
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
if [ "$NET" = 1 ]; then
  grep -Eq "flit\[0\] info: ofi: provider .*, domain $FLITNET_IFNAME," "$LOG" ||
    fail "rank 0's provider is not on $FLITNET_IFNAME"
  per=1 # ranks a host, in blocks (flitrun --map-by slot)
  [ "$MIXED" = 1 ] && per=2
  i=1
  while [ "$i" -lt $((FLITNET_HOSTS * per)) ]; do
    h=$((i / per))
    if [ "$h" -eq 0 ]; then
      grep -Eq "flit\[0\] info: endpoint 0: rank $i -> shm:" "$LOG" ||
        fail "rank 0 does not reach rank $i, on its host, over shared memory"
    else
      addr=
      eval "addr=\$FLITNET_ADDR$h"
      addr=$(echo "$addr" | sed 's/\./\\./g')
      grep -Eq "flit\[0\] info: endpoint 0: rank $i -> ofi: ofi [^ ]+ fi_sockaddr_in://$addr:" "$LOG" ||
        fail "rank 0 does not hold host $h's address $addr for rank $i"
    fi
    i=$((i + 1))
  done
  if [ "$TCP_LOSS" -gt 0 ]; then
    dropped=$(ip netns exec "$FLITNET_PREFIX-sw" nft list table netdev flitofi |
      sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
    echo "ofi_job: the switch dropped $dropped TCP segments"
    [ "$dropped" -gt 0 ] || fail "the switch dropped no TCP segment"
  fi
  if [ "${FLITNET_LOSS:-0}" -gt 0 ]; then
    dropped=$("$FLITNET_SH" stats "$FLITNET_PREFIX" |
      sed -n 's/.* dropped=\([0-9]*\).*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
    echo "ofi_job: the hosts dropped $dropped UDP frames"
    [ "$dropped" -gt 0 ] || fail "the hosts dropped no UDP frame"
  fi
  # Nothing left behind in any host (give exiting processes ~10 s).
  k=0
  while :; do
    left=$(for ns in $(echo "$FLITNET_NSLIST" | tr , ' '); do ip netns pids "$ns"; done | tr '\n' ' ')
    [ -z "$left" ] || [ "$k" -ge 100 ] && break
    sleep 0.1
    k=$((k + 1))
  done
  [ -z "$left" ] || fail "processes left in the hosts: $left"
fi
[ "$got" -eq "$RC" ] || fail "the job's status is $got, not $RC"
[ "$ABSENT" = 1 ] || grep -Eq 'flit\[0\] +ofi: (.*, )?peers_in_contact [1-9]' "$LOG" ||
  fail "rank 0's counters do not show peers reached over ofi"
echo "$OUTS" | while IFS= read -r re; do
  [ -z "$re" ] || grep -Eq -- "$re" "$LOG" || { echo "FAIL: no line matches '$re'" >&2; exit 1; }
done || FAILS=$((FAILS + 1))
[ "$FAILS" -eq 0 ] && echo "ofi_job: $PROV OK${FLITNET_NSLIST:+ across $FLITNET_NSLIST}"
[ "$FAILS" -eq 0 ]
