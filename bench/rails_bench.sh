#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Several rails per endpoint (make bench-rails, docs/rails.md): 1 MiB
# long-AM bandwidth between two "hosts" (network namespaces joined by two
# veth pairs, tests/net/twolinks.sh) over one rail (FLIT_UDP_RAILS=eth0)
# and over two (eth0,eth1), alternated (A B A B ...: drift on a shared
# machine falls on both alike); then net.rails' stream (tests/net/rails_test.sh:
# 1 KiB messages, eth1 taken down mid-stream) over eth0 alone and over both,
# alternated: the first third's rate (before the outage), and the fail-over
# pause with two rails. Medians with their spread (min-max).
#
#     bench/rails_bench.sh BUILD_DIR [--rounds N] [--transport udp|xdp]
#
# --transport xdp: the same over AF_XDP, a socket on each rail (docs/xdp.md;
# the build must have it).
#
# Needs root. veth pairs on one machine share its CPUs: two rails add no
# wire, only a second socket, so expect no gain in bandwidth here.
set -u

build=${1:-build}
[ $# -gt 0 ] && shift
rounds=5
transport=udp
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --transport) transport=$2; shift 2 ;;
    *) echo "rails_bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
net=$here/../tests/net/twolinks.sh
bench=$(readlink -f "$build/bench/flit-bench")
flitrun=$(readlink -f "$build/tools/flitrun")
rails=$(readlink -f "$build/tests/mp/mp_rails")
[ -x "$bench" ] && [ -x "$flitrun" ] && [ -x "$rails" ] || {
  echo "rails_bench.sh: flit-bench, flitrun or mp_rails missing in $build: build first" >&2
  exit 1
}
P=flrb-$$
dir=$(mktemp -d) || exit 1
trap '"$net" down "$P"; rm -rf "$dir"' EXIT
"$net" up "$P" || exit $?

run_bw() { # RAILS OUT: one flit-bench run, one rank per host
  ip netns exec "$P-h0" env FLIT_UDP_RAILS="$1" FLIT_TRANSPORT="$transport" "$flitrun" -n 2 \
    --hosts "$P-h0,$P-h1" --launch 'ip netns exec {host} unshare --ipc' --timeout 300 \
    "$bench" --csv --only bandwidth --sizes 1M --no-baselines --retries 4 >"$2.csv" 2>"$2.err"
}

# median, min and max of the numbers on stdin: "MED MIN MAX" ("- - -" if none)
stats() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "- - -"; exit }
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    print m, v[1], v[NR] }'
}

for ((k = 1; k <= rounds; k++)); do
  for r in one two; do
    set=eth0
    [ $r = two ] && set=eth0,eth1
    run_bw "$set" "$dir/bw-$k-$r" || { cat "$dir/bw-$k-$r.err" >&2; exit 1; }
  done
  for r in eth0 eth0,eth1; do
    "$here/../tests/net/rails_test.sh" "$flitrun" "$rails" --rails $r --transport "$transport" >"$dir/stream-$k-$r.out" 2>&1 ||
      { cat "$dir/stream-$k-$r.out" >&2; exit 1; }
  done
done

bw() { awk -F, '$1 == "bandwidth_long" && $2 == 1048576 && $3 != "" { print $3 }' "$dir"/bw-*-"$1".csv | stats; }
# flit-bench prints no value for a figure whose ranks kept losing their CPU
# (a loaded machine): say so, with its reason
noisy() { grep -h -m1 '^bandwidth_long,1048576,,' "$dir"/bw-*-"$1".csv | cut -d, -f7; }
read -r om ol oh <<<"$(bw one)"
read -r tm tl th <<<"$(bw two)"
read -r pm pl ph <<<"$(sed -n 's/.*pause \([0-9]*\) ms.*/\1/p' "$dir"/stream-*-eth0,eth1.out | stats)"
rate() { sed -n 's/.*first third \([0-9.]*\) MB.*/\1/p' "$dir"/stream-*-"$1".out | stats; }
read -r sm sl sh <<<"$(rate eth0)"
read -r dm dl dh <<<"$(rate eth0,eth1)"
echo "rails over $transport: $rounds rounds, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg) at the end"
echo "  1 MiB bandwidth, one rail   $om ($ol-$oh) MB/s"
echo "  1 MiB bandwidth, two rails  $tm ($tl-$th) MB/s   ratio $(awk -v a="$tm" -v b="$om" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "-" }')"
[ "$om" = - ] && echo "  one rail: flit-bench said $(noisy one)"
[ "$tm" = - ] && echo "  two rails: flit-bench said $(noisy two)"
echo "  1 KiB stream, one rail      $sm ($sl-$sh) MB/s (mp_rails, first third)"
echo "  1 KiB stream, two rails     $dm ($dl-$dh) MB/s"
echo "  fail-over pause             $pm ($pl-$ph) ms (FLIT_PATH_PROBE_MS=100; bound 300)"
