#!/bin/bash
# flit over UDP, measured three ways on this machine (make bench-udp):
#
#   1. loopback: two ranks of one host, FLIT_TRANSPORT=udp, flit-bench with
#      its raw UDP baselines between the same two processes
#   2. veth: two "hosts" (network namespaces joined through a bridge by veth
#      pairs, tests/net/netns.sh), one rank in each, started by flitrun with
#      --launch 'ip netns exec {host} ...'; the same figures
#   3. loss: the same two hosts while nftables drops 0, 1, 5 and 10% of the
#      UDP frames each host receives: 8-byte latency and 1 MiB goodput,
#      each beside the lossless figure of the same run
#
#     bench/udp_bench.sh BUILD_DIR [--quick] [--only loopback|veth|loss]
#
# 2 and 3 need root (namespaces, nftables); without it they say so and the
# script goes on.
set -u

build=${1:-build}
[ $# -gt 0 ] && shift
quick=
only=
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=--quick; shift ;;
    --only) only=$2; shift 2 ;;
    *) echo "udp_bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/../tests/net/netns.sh
bench=$(readlink -f "$build/bench/flit-bench")
flitrun=$(readlink -f "$build/tools/flitrun")
[ -x "$bench" ] && [ -x "$flitrun" ] || {
  echo "udp_bench.sh: $build/bench/flit-bench or $build/tools/flitrun missing: build first" >&2
  exit 1
}

want() { [ -z "$only" ] || [ "$only" = "$1" ]; }

# ---- inside the test network (netns.sh run ... -- udp_bench.sh --inner ...)
across() { # flit-bench args...: one rank per host, flitrun in host 0
  ip netns exec "$FLITNET_NS0" "$flitrun" -n 2 --hosts "$FLITNET_NSLIST" \
    --launch 'ip netns exec {host} unshare --ipc' --timeout 900 "$bench" "$@"
}

csv_value() { # FILE NAME SIZE: the value column of that figure
  awk -F, -v n="$2" -v s="$3" '$1 == n && $2 == s { print $3; exit }' "$1"
}

inner_loss() {
  local tmp pct lat bw lat0= bw0=
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "$tmp"' RETURN
  printf '\nUNDER LOSS: nftables drops PCT%% of the UDP frames each host receives\n'
  printf '  (both directions: data and acknowledgements); flit-bench --no-baselines\n'
  printf '  --sizes 8,1M; ratio = figure / the 0%% figure of this run\n'
  printf '  %-6s %14s %8s %16s %8s\n' loss "8 B latency" ratio "1 MiB goodput" ratio
  printf '  %-6s %14s %8s %16s %8s\n' ------ -------------- -------- ---------------- --------
  for pct in 0 1 5 10; do
    "$netns" set-loss "$FLITNET_PREFIX" "$pct" >/dev/null || return 1
    if ! across --csv --no-baselines --only latency,bandwidth --sizes 8,1M $quick \
      >"$tmp/$pct.csv" 2>"$tmp/$pct.err"; then
      echo "udp_bench.sh: the run at $pct% loss failed:" >&2
      cat "$tmp/$pct.err" >&2
      return 1
    fi
    lat=$(csv_value "$tmp/$pct.csv" latency_short 8)
    bw=$(csv_value "$tmp/$pct.csv" bandwidth_long 1048576)
    [ "$pct" = 0 ] && { lat0=$lat; bw0=$bw; }
    awk -v p="$pct" -v l="$lat" -v b="$bw" -v l0="$lat0" -v b0="$bw0" 'BEGIN {
      printf "  %-6s %11.2f us %8.2f %11.1f MB/s %8.2f\n", p "%", l, l / l0, b, b / b0 }'
  done
  printf '\n  latency is the mean of many round trips: a lost packet costs a\n'
  printf '  retransmission timeout (FLIT_RTO_MIN_US, default 10 ms) unless a later\n'
  printf '  packet shows the gap first; goodput is what the receiver handled\n'
}

case ${UDP_BENCH_INNER:-} in
  veth)
    echo "== veth: one rank in each of two network namespaces, flitrun --launch 'ip netns exec'"
    across $quick
    exit $? ;;
  loss)
    inner_loss
    exit $? ;;
esac

# ---- the three parts
rc=0
if want loopback; then
  echo "== loopback: two ranks on this host, FLIT_TRANSPORT=udp"
  FLIT_TRANSPORT=udp "$flitrun" -n 2 --timeout 900 "$bench" $quick || rc=1
  echo
fi
for part in veth loss; do
  want $part || continue
  UDP_BENCH_INNER=$part "$netns" run "fb-udp-$part-$$" 2 --timeout 1200 -- "$0" "$build" $quick
  r=$?
  if [ $r -eq 77 ]; then
    echo "== $part: skipped: needs root, network namespaces and nftables"
  elif [ $r -ne 0 ]; then
    rc=1
  fi
  echo
done
exit $rc
