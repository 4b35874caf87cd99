#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A little network of "hosts" on one machine, for flit's network tests.
#
#   netns.sh up PREFIX N [options]   build it (tearing down any old PREFIX first)
#   netns.sh down PREFIX             remove it, killing what still runs inside
#   netns.sh exec PREFIX I [--] CMD  run CMD in host I
#   netns.sh run PREFIX N [options] [--timeout S] -- CMD
#                                    up, run CMD with FLITNET_* in its
#                                    environment, down (always, by trap)
#   netns.sh env PREFIX              print the FLITNET_* assignments
#   netns.sh set-loss PREFIX PCT     change the loss on a live network
#   netns.sh set-dup PREFIX on|off|PCT
#   netns.sh stats PREFIX            nftables counters per host
#   netns.sh gc                      down every network whose `run` has died
#
# Options of up and run:
#   --loss PCT     each host drops PCT% of the IPv4 UDP frames it receives
#                  (netdev ingress of its eth0, so both directions lose, and
#                  each IP fragment is lost on its own, as on a real wire)
#   --dup          each host sends every IPv4 UDP packet twice (ip output
#                  hook, `dup to ip daddr device eth0`); --dup=PCT: PCT% of them
#   --delay MS     netem delay on each host's eth0; exit 77 if the kernel has
#                  no netem
#   --mtu BYTES    MTU of every link (default 1500)
#   --subnet A.B.C addresses A.B.C.1 .. A.B.C.N (default 10.77.K, K from PREFIX)
#   --timeout S    (run) CMD is killed after S seconds, and run fails
#
# Shape: namespaces PREFIX-h0 .. PREFIX-h{N-1}, each with lo and eth0 (address
# A.B.C.{1+i}/24), and PREFIX-sw holding bridge br0 with ports p0 .. p{N-1},
# the veth peers of the hosts' eth0. Nothing is created in the caller's
# namespace, so networks of different PREFIXes never see each other (even with
# the same subnet) and interface names stay short whatever PREFIX is. IPv6 is
# off in all of them: no link-local chatter, no DAD.
#
# Exit status: 0 ok, 1 error, 2 usage, 77 this machine cannot do it (not root,
# no `ip netns`, namespaces refused as in an unprivileged container, no
# nftables when loss or dup is asked for, no netem when delay is).
set -u

readonly STATE_DIR=/run/flitnet
SELF=$(readlink -f "$0")
readonly SELF

die() { echo "netns.sh: $*" >&2; exit 1; }
skip() { echo "netns.sh: SKIP: $*" >&2; exit 77; }
usage() { sed -n '2,/^# Shape/p' "$SELF" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }

is_uint() { case $1 in '' | *[!0-9]*) return 1 ;; *) return 0 ;; esac; }

# in_range VALUE LO HI: VALUE is an integer in [LO, HI].
in_range() { is_uint "$1" && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }

check_prefix() {
  case $1 in
    '' | -* | *[!A-Za-z0-9_.-]*) die "bad PREFIX '$1' (letters, digits, _ . - only)" ;;
  esac
  [ ${#1} -le 64 ] || die "PREFIX '$1' longer than 64"
}

check_pct() {
  in_range "$1" 0 100 || die "bad percentage '$1' (0..100)"
}

# Root, `ip netns`, and (when asked) nft are what this machine must offer.
check_can() {
  [ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, nftables)"
  command -v ip >/dev/null 2>&1 || skip "ip not found (Debian: iproute2)"
  ip netns list >/dev/null 2>&1 || skip "'ip netns' unavailable (iproute2 too old?)"
}

need_nft() {
  command -v nft >/dev/null 2>&1 || skip "nft not found (Debian: nftables)"
}

host_ns() { echo "$1-h$2"; }

# Namespaces of PREFIX that exist now: PREFIX-sw, PREFIX-h<digits>.
list_ns() {
  local p=$1 ns rest
  ip netns list 2>/dev/null | while read -r ns rest; do
    : "$rest"
    case $ns in
      "$p"-sw) echo "$ns" ;;
      "$p"-h*) is_uint "${ns#"$p"-h}" && echo "$ns" ;;
    esac
  done
}

list_hosts() {
  local i=0
  while [ -e "/run/netns/$1-h$i" ]; do
    host_ns "$1" "$i"
    i=$((i + 1))
  done
}

# 10.77.K with K in 1..250 from a checksum of PREFIX. Clashes would be
# harmless (the networks are disjoint) but distinct subnets read better in
# logs of concurrent tests.
default_subnet() {
  local sum
  sum=$(printf '%s' "$1" | cksum | cut -d ' ' -f 1)
  echo "10.77.$((sum % 250 + 1))"
}

# Kill every process whose network namespace is NS: TERM, a grace of up to
# two seconds, then KILL.
kill_ns_pids() {
  local ns=$1 pids tries
  pids=$(ip netns pids "$ns" 2>/dev/null | grep -vx "$$")
  [ -n "$pids" ] || return 0
  # shellcheck disable=SC2086  # a list of pids
  kill -TERM $pids 2>/dev/null
  for tries in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(ip netns pids "$ns" 2>/dev/null | grep -vx "$$")
    [ -n "$pids" ] || return 0
    : "$tries"
    sleep 0.2
  done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null
  return 0
}

cmd_down() {
  local p=$1 ns
  for ns in $(list_ns "$p"); do
    kill_ns_pids "$ns"
  done
  for ns in $(list_ns "$p"); do
    ip netns del "$ns" 2>/dev/null || echo "netns.sh: could not delete $ns" >&2
  done
  rm -f "$STATE_DIR/$p.env"
  [ -z "$(list_ns "$p")" ] || die "namespaces of '$p' left behind"
}

# "pid:starttime" of a live process, so that a reused pid is not taken for it.
proc_id() {
  local st
  st=$(cut -d ' ' -f 22 "/proc/$1/stat" 2>/dev/null) || return 1
  echo "$1:$st"
}

# Down every network recorded with an owner (`run`) that no longer lives:
# what a test killed by SIGKILL (CTest's timeout) leaves behind.
cmd_gc() {
  local f owner p
  for f in "$STATE_DIR"/*.env; do
    [ -e "$f" ] || continue
    owner=$(sed -n 's/^FLITNET_OWNER=//p' "$f")
    [ -n "$owner" ] || continue
    [ "$(proc_id "${owner%%:*}" 2>/dev/null)" = "$owner" ] && continue
    p=$(basename "$f" .env)
    echo "netns.sh: gc: removing '$p' (owner $owner gone)" >&2
    cmd_down "$p"
  done
}

# The rules. Loss: netdev ingress of eth0, before IP, so a fragmented
# datagram loses fragments independently. Dup: ip output; the clone is sent
# through the same route and the kernel does not clone it again (a netdev
# egress `dup to eth0` instead loops: four copies, measured). The clone does
# pass the chain again, so the rule marks what it picked (the clone inherits
# the mark) and counts only what it has not marked: the counter is exact.
readonly DUP_MARK=0x666c6974 # "flit"

nft_rules() {
  local loss=$1 dup=$2 drop='' clone='' pick=''
  [ "$loss" -gt 0 ] &&
    drop="meta protocol ip ip protocol udp numgen random mod 100 < $loss counter drop"
  [ "$dup" -lt 100 ] && pick="numgen random mod 100 < $dup"
  [ "$dup" -gt 0 ] &&
    clone="oifname \"eth0\" meta l4proto udp meta mark != $DUP_MARK $pick \\
      meta mark set $DUP_MARK counter dup to ip daddr device \"eth0\""
  cat <<EOF
table netdev flitnet {
  chain loss {
    type filter hook ingress device "eth0" priority 0;
    $drop
  }
}
table ip flitnet {
  chain clone {
    type filter hook output priority 0;
    $clone
  }
}
EOF
}

# Replace the rules of every host atomically (one nft transaction each).
apply_rules() {
  local p=$1 loss=$2 dup=$3 ns
  for ns in $(list_hosts "$p"); do
    {
      ip netns exec "$ns" nft list table netdev flitnet >/dev/null 2>&1 &&
        echo 'delete table netdev flitnet' && echo 'delete table ip flitnet'
      nft_rules "$loss" "$dup"
    } | ip netns exec "$ns" nft -f - || return 1
  done
}

set_state() {
  local f="$STATE_DIR/$1.env"
  [ -f "$f" ] || die "no network '$1' (no $f)"
  sed -i "s/^$2=.*/$2=$3/" "$f"
}

cmd_set_loss() {
  local p=$1 pct=$2 dup
  check_pct "$pct"
  need_nft
  dup=$(sed -n 's/^FLITNET_DUP=//p' "$STATE_DIR/$p.env" 2>/dev/null)
  set_state "$p" FLITNET_LOSS "$pct"
  apply_rules "$p" "$pct" "${dup:-0}" || die "nft failed"
}

cmd_set_dup() {
  local p=$1 pct=$2 loss
  case $pct in on) pct=100 ;; off) pct=0 ;; esac
  check_pct "$pct"
  need_nft
  loss=$(sed -n 's/^FLITNET_LOSS=//p' "$STATE_DIR/$p.env" 2>/dev/null)
  set_state "$p" FLITNET_DUP "$pct"
  apply_rules "$p" "${loss:-0}" "$pct" || die "nft failed"
}

# sysctl inside NS; tolerated if absent (e.g. bridge-nf without br_netfilter).
ns_sysctl() {
  ip netns exec "$1" sh -c "echo $3 > /proc/sys/$2" 2>/dev/null || true
}

# The first `ip netns add` on a machine makes /run/netns a shared mount;
# two of them at once could stack two mounts. Serialise them.
netns_add() {
  if command -v flock >/dev/null 2>&1; then
    flock "$STATE_DIR/.lock" ip netns add "$1"
  else
    ip netns add "$1"
  fi
}

# The environment's namespaces: a refusal here is the machine's (77).
make_namespaces() {
  local p=$1 n=$2 i ns
  for ns in "$p-sw" $(for ((i = 0; i < n; i++)); do host_ns "$p" "$i"; done); do
    netns_add "$ns" || return 77
    ip netns exec "$ns" true || return 77
    ns_sysctl "$ns" net/ipv6/conf/all/disable_ipv6 1
    ns_sysctl "$ns" net/ipv6/conf/default/disable_ipv6 1
    # New namespaces copy rp_filter from the machine's; one flat subnet
    # never needs it, and the same value everywhere keeps CI like here.
    ns_sysctl "$ns" net/ipv4/conf/all/rp_filter 0
    ns_sysctl "$ns" net/ipv4/conf/default/rp_filter 0
    ip -n "$ns" link set lo up || return 1
  done
  # Bridged frames need not visit the (empty) netfilter of the switch.
  ns_sysctl "$p-sw" net/bridge/bridge-nf-call-iptables 0
  ns_sysctl "$p-sw" net/bridge/bridge-nf-call-ip6tables 0
  ns_sysctl "$p-sw" net/bridge/bridge-nf-call-arptables 0
}

make_links() {
  local p=$1 n=$2 subnet=$3 mtu=$4 i ns
  ip -n "$p-sw" link add br0 mtu "$mtu" type bridge stp_state 0 \
    mcast_snooping 0 || return 77
  for ((i = 0; i < n; i++)); do
    ns=$(host_ns "$p" "$i")
    ip link add eth0 mtu "$mtu" netns "$ns" type veth \
      peer name "p$i" mtu "$mtu" netns "$p-sw" || return 77
    ip -n "$p-sw" link set "p$i" master br0 up || return 1
    ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0 || return 1
    ip -n "$ns" link set eth0 up || return 1
  done
  ip -n "$p-sw" link set br0 up || return 1
  wait_carrier "$p" "$n"
}

# Up means the first datagram sent gets through: wait (briefly) for every
# eth0 to report carrier.
wait_carrier() {
  local p=$1 n=$2 i tries
  for ((i = 0; i < n; i++)); do
    for ((tries = 0; tries < 50; tries++)); do
      ip -n "$(host_ns "$p" "$i")" link show eth0 | grep -q 'state UP' && break
      sleep 0.1
    done
    [ "$tries" -lt 50 ] || { echo "netns.sh: eth0 of host $i has no carrier" >&2; return 1; }
  done
}

make_delay() {
  local p=$1 ms=$2 ns
  for ns in $(list_hosts "$p"); do
    # A limit far above the default 1000: the delay must not turn into loss.
    ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "${ms}ms" \
      limit 100000 2>/dev/null || return 77
  done
}

write_state() {
  local p=$1 n=$2 subnet=$3 mtu=$4 loss=$5 dup=$6 delay=$7 owner=$8 i
  local nslist='' addrlist=''
  mkdir -p "$STATE_DIR" || return 1
  {
    echo "FLITNET_OWNER=$owner"
    echo "FLITNET_SH=$SELF"
    echo "FLITNET_PREFIX=$p"
    echo "FLITNET_HOSTS=$n"
    echo "FLITNET_SUBNET=$subnet.0/24"
    echo "FLITNET_IFNAME=eth0"
    echo "FLITNET_MTU=$mtu"
    echo "FLITNET_LOSS=$loss"
    echo "FLITNET_DUP=$dup"
    echo "FLITNET_DELAY=$delay"
    for ((i = 0; i < n; i++)); do
      echo "FLITNET_NS$i=$(host_ns "$p" "$i")"
      echo "FLITNET_ADDR$i=$subnet.$((i + 1))"
      nslist="$nslist${nslist:+,}$(host_ns "$p" "$i")"
      addrlist="$addrlist${addrlist:+,}$subnet.$((i + 1))"
    done
    echo "FLITNET_NSLIST=$nslist"
    echo "FLITNET_ADDRLIST=$addrlist"
  } >"$STATE_DIR/$p.env"
}

# Parsed options of up/run, in globals (bash has no better way to return
# several values): O_LOSS O_DUP O_DELAY O_MTU O_SUBNET O_TIMEOUT, and O_REST
# for what follows `--`.
parse_opts() {
  O_LOSS=0 O_DUP=0 O_DELAY=0 O_MTU=1500 O_SUBNET='' O_TIMEOUT=0 O_REST=()
  while [ $# -gt 0 ]; do
    case $1 in
      --loss) O_LOSS=${2-}; shift ;;
      --dup) O_DUP=100 ;;
      --dup=*) O_DUP=${1#--dup=} ;;
      --delay) O_DELAY=${2-}; shift ;;
      --mtu) O_MTU=${2-}; shift ;;
      --subnet) O_SUBNET=${2-}; shift ;;
      --timeout) O_TIMEOUT=${2-}; shift ;;
      --) shift; O_REST=("$@"); return 0 ;;
      *) die "unknown option '$1'" ;;
    esac
    shift
  done
  check_pct "$O_LOSS"
  check_pct "$O_DUP"
  is_uint "$O_DELAY" || die "bad --delay '$O_DELAY'"
  in_range "$O_MTU" 68 65535 || die "bad --mtu '$O_MTU'"
  is_uint "$O_TIMEOUT" || die "bad --timeout '$O_TIMEOUT'"
  case $O_SUBNET in
    '' | [0-9]*.[0-9]*.[0-9]*) ;;
    *) die "bad --subnet '$O_SUBNET' (A.B.C)" ;;
  esac
}

# up PREFIX N, options already parsed; OWNER is "" by hand, the run's id.
do_up() {
  local p=$1 n=$2 owner=$3 subnet rc
  in_range "$n" 1 250 || die "bad host count '$n' (1..250)"
  check_can
  if [ "$O_LOSS" -gt 0 ] || [ "$O_DUP" -gt 0 ]; then need_nft; fi
  [ "$O_DELAY" -eq 0 ] || command -v tc >/dev/null 2>&1 || skip "tc not found (Debian: iproute2)"
  subnet=${O_SUBNET:-$(default_subnet "$p")}
  cmd_down "$p"
  # State first: if we die half-way, gc and down still find the pieces.
  write_state "$p" "$n" "$subnet" "$O_MTU" "$O_LOSS" "$O_DUP" "$O_DELAY" \
    "$owner" || die "cannot write $STATE_DIR"
  rc=0
  make_namespaces "$p" "$n" && make_links "$p" "$n" "$subnet" "$O_MTU" || rc=$?
  if [ "$rc" -eq 0 ] && { [ "$O_LOSS" -gt 0 ] || [ "$O_DUP" -gt 0 ]; }; then
    # No nf_tables in the kernel is the machine's; a rule refused is ours.
    ip netns exec "$p-h0" nft list ruleset >/dev/null || rc=77
    [ "$rc" -ne 0 ] || apply_rules "$p" "$O_LOSS" "$O_DUP" || rc=1
  fi
  if [ "$rc" -eq 0 ] && [ "$O_DELAY" -gt 0 ]; then
    make_delay "$p" "$O_DELAY" || rc=78
  fi
  case $rc in
    0)
      echo "netns.sh: $p up: $n hosts $subnet.1-$n/24 mtu $O_MTU," \
        "loss $O_LOSS%, dup $O_DUP%, delay ${O_DELAY}ms" >&2
      return 0
      ;;
    77) cmd_down "$p"; skip "this machine refused namespaces, veth, bridge or nftables (see above)" ;;
    78) cmd_down "$p"; skip "no netem qdisc in this kernel (--delay)" ;;
    *) cmd_down "$p"; die "setting up '$p' failed" ;;
  esac
}

cmd_exec() {
  local p=$1 i=$2 ns
  shift 2
  [ "${1-}" = -- ] && shift
  [ $# -gt 0 ] || usage
  ns=$(host_ns "$p" "$i")
  [ -e "/run/netns/$ns" ] || die "no host '$ns'"
  exec ip netns exec "$ns" "$@"
}

cmd_stats() {
  local p=$1 ns dropped duplicated
  need_nft
  for ns in $(list_hosts "$p"); do
    dropped=$(ip netns exec "$ns" nft list chain netdev flitnet loss 2>/dev/null |
      sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
    duplicated=$(ip netns exec "$ns" nft list chain ip flitnet clone 2>/dev/null |
      sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
    echo "$ns dropped=${dropped:-0} duplicated=${duplicated:-0}"
  done
}

# Run CMD between up and down. CMD runs in the background so that a signal
# to us is handled at once (bash defers traps while a foreground child
# runs); `timeout` (0: no limit) puts CMD in a process group of its own and
# passes our TERM to all of it.
cmd_run() {
  local p=$1 n=$2 rc owner
  shift 2
  parse_opts "$@"
  [ ${#O_REST[@]} -gt 0 ] || usage
  check_can
  cmd_gc
  owner=$(proc_id $$) || die "cannot read /proc/$$/stat"
  RUN_PREFIX=$p # a global: the trap may run outside this function
  trap 'cmd_down "$RUN_PREFIX"' EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
  do_up "$p" "$n" "$owner"
  set -a
  # shellcheck disable=SC1090  # written by write_state
  . "$STATE_DIR/$p.env"
  set +a
  timeout -k 5 "$O_TIMEOUT" "${O_REST[@]}" &
  CHILD=$!
  trap 'kill -TERM "$CHILD" 2>/dev/null; exit 129' HUP
  trap 'kill -TERM "$CHILD" 2>/dev/null; exit 130' INT
  trap 'kill -TERM "$CHILD" 2>/dev/null; exit 143' TERM
  wait "$CHILD"
  rc=$?
  if [ "$O_TIMEOUT" -gt 0 ] && { [ $rc -eq 124 ] || [ $rc -eq 137 ]; }; then
    echo "netns.sh: '${O_REST[*]}' timed out after ${O_TIMEOUT}s" >&2
    rc=1
  fi
  exit $rc
}

main() {
  local cmd=${1-}
  [ $# -ge 1 ] && shift
  case $cmd in
    up)
      [ $# -ge 2 ] || usage
      check_prefix "$1"
      local p=$1 n=$2
      shift 2
      parse_opts "$@"
      [ ${#O_REST[@]} -eq 0 ] || usage
      do_up "$p" "$n" ''
      ;;
    down) [ $# -eq 1 ] || usage; check_prefix "$1"; check_can; cmd_down "$1" ;;
    exec) [ $# -ge 3 ] || usage; check_prefix "$1"; check_can; cmd_exec "$@" ;;
    run) [ $# -ge 3 ] || usage; check_prefix "$1"; cmd_run "$@" ;;
    env)
      [ $# -eq 1 ] || usage
      check_prefix "$1"
      cat "$STATE_DIR/$1.env" 2>/dev/null || die "no network '$1'"
      ;;
    set-loss) [ $# -eq 2 ] || usage; check_prefix "$1"; check_can; cmd_set_loss "$@" ;;
    set-dup) [ $# -eq 2 ] || usage; check_prefix "$1"; check_can; cmd_set_dup "$@" ;;
    stats) [ $# -eq 1 ] || usage; check_prefix "$1"; check_can; cmd_stats "$1" ;;
    gc) check_can; cmd_gc ;;
    *) usage ;;
  esac
}

main "$@"
