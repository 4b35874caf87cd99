#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# flit over UDP, measured three ways on this machine (make bench-udp):
#
#   1. loopback: two ranks of one host, FLIT_TRANSPORT=udp, flit-bench with
#      its raw UDP baselines between the same two processes
#   2. veth: two "hosts" (network namespaces joined through a bridge by veth
#      pairs, tests/net/netns.sh), one rank in each, started by flitrun with
#      --launch 'ip netns exec {host} ...'; the same figures
#   3. loss: the same two hosts while nftables drops 0, 1, 5 and 10% of the
#      UDP frames each host receives: 8-byte latency, every round trip
#      timed on its own (median, 99th percentile, mean, how many), and
#      1 MiB goodput, each beside the lossless figure of the same run
#
#     bench/udp_bench.sh BUILD_DIR [--quick] [--only loopback|veth|loss]
#                                  [--sizes LIST] [--csv DIR]
#
# --sizes LIST: flit-bench's --sizes for the loopback and veth runs (the
# loss runs measure 8 B and 1 MiB).
# --csv DIR: no tables; flit-bench's CSV of each run into DIR (loopback.csv,
# loopback-spin0.csv with FLIT_SPIN_US=0, veth.csv, loss-PCT.csv), what it
# said on stderr beside each (.err), for bench/readme_tables.sh.
#
# 2 and 3 need root (namespaces, nftables); without it they say so and the
# script goes on.
set -u

build=${1:-build}
[ $# -gt 0 ] && shift
quick=
only=
csv=
sizes=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=--quick; shift ;;
    --only) only=$2; shift 2 ;;
    --sizes) sizes=(--sizes "$2"); shift 2 ;;
    --csv) csv=$(mkdir -p "$2" && cd "$2" && pwd) || exit 1; shift 2 ;;
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

# ---- inside the test network (netns.sh run ... -- udp_bench.sh ...)
across() { # flit-bench args...: one rank per host, flitrun in host 0
  ip netns exec "$FLITNET_NS0" "$flitrun" -n 2 --hosts "$FLITNET_NSLIST" \
    --launch 'ip netns exec {host} unshare --ipc' --timeout 900 "$bench" "$@"
}

csv_value() { # NAME FILE SIZE: the value column of that figure ("" if none)
  awk -F, -v n="$1" -v s="$3" '$1 == n && $2 == s { print $3; exit }' "$2"
}

inner_loss() {
  local tmp pct out
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "$tmp"' RETURN
  for pct in 0 1 5 10; do
    "$netns" set-loss "$FLITNET_PREFIX" "$pct" >/dev/null || return 1
    out=${csv:-$tmp}/loss-$pct
    if ! across --csv --no-baselines --percentiles --only latency,bandwidth --sizes 8,1M \
      $quick >"$out.csv" 2>"$out.err"; then
      echo "udp_bench.sh: the run at $pct% loss failed:" >&2
      cat "$out.err" >&2
      return 1
    fi
  done
  [ -n "$csv" ] && return 0
  printf '\nUNDER LOSS: nftables drops PCT%% of the UDP frames each host receives\n'
  printf '  (both directions: data and acknowledgements); flit-bench --no-baselines\n'
  printf '  --percentiles --sizes 8,1M; x = figure / the 0%% figure of this run\n'
  printf '  %-5s %22s %22s %10s %8s %22s\n' loss "8 B one way, median" "99th percentile" \
    mean "timed" "1 MiB goodput"
  printf '  %-5s %22s %22s %10s %8s %22s\n' ----- ---------------------- \
    ---------------------- ---------- -------- ----------------------
  for pct in 0 1 5 10; do
    f=$tmp/loss-$pct.csv
    awk -v p="$pct" \
      -v m="$(csv_value latency_short_p50 "$f" 8)" -v m0="$(csv_value latency_short_p50 "$tmp/loss-0.csv" 8)" \
      -v t="$(csv_value latency_short_p99 "$f" 8)" -v t0="$(csv_value latency_short_p99 "$tmp/loss-0.csv" 8)" \
      -v a="$(csv_value latency_short_mean "$f" 8)" -v n="$(csv_value latency_short_samples "$f" 8)" \
      -v b="$(csv_value bandwidth_long "$f" 1048576)" -v b0="$(csv_value bandwidth_long "$tmp/loss-0.csv" 1048576)" '
      # a figure and its ratio to the lossless one; "noisy" where a rank
      # lost its CPU in every attempt (flit-bench printed no value)
      function cell(v, v0, unit, fmt) {
        if (v == "") return "noisy"
        if (v0 == "" || v0 + 0 == 0) return sprintf(fmt " %s", v, unit)
        return sprintf(fmt " %s  x%-5.3g", v, unit, v / v0)
      }
      BEGIN {
        printf "  %-5s %22s %22s %10s %8s %22s\n", p "%", cell(m, m0, "us", "%.2f"),
          cell(t, t0, "us", "%.1f"), a == "" ? "noisy" : sprintf("%.1f us", a),
          n == "" ? "-" : sprintf("%d", n), cell(b, b0, "MB/s", "%.0f")
      }'
  done
  printf '\n  Every 8-byte round trip is timed on its own (at least 1000). Most see no\n'
  printf '  loss: the median barely moves. A lost request or reply waits for fast\n'
  printf '  retransmission, a tail probe or a timeout (FLIT_RTO_MIN_US, default 10 ms):\n'
  printf '  the 99th percentile and the mean show what that costs. Goodput is what\n'
  printf '  the receiver handled.\n'
}

case ${UDP_BENCH_INNER:-} in
  veth)
    if [ -n "$csv" ]; then
      across --csv $quick "${sizes[@]}" >"$csv/veth.csv" 2>"$csv/veth.err"
    else
      echo "== veth: one rank in each of two network namespaces, flitrun --launch 'ip netns exec'"
      across $quick "${sizes[@]}"
    fi
    exit $? ;;
  loss)
    inner_loss
    exit $? ;;
esac

# ---- the three parts
rc=0
if want loopback; then
  if [ -n "$csv" ]; then
    FLIT_TRANSPORT=udp "$flitrun" -n 2 --timeout 900 "$bench" --csv $quick "${sizes[@]}" \
      >"$csv/loopback.csv" 2>"$csv/loopback.err" || rc=1
    # flit_wait without spinning first: its sleep alone beside recvfrom's
    FLIT_TRANSPORT=udp FLIT_SPIN_US=0 "$flitrun" -n 2 --timeout 900 "$bench" --csv $quick \
      --only latency --sizes 8 >"$csv/loopback-spin0.csv" 2>"$csv/loopback-spin0.err" || rc=1
  else
    echo "== loopback: two ranks on this host, FLIT_TRANSPORT=udp"
    FLIT_TRANSPORT=udp "$flitrun" -n 2 --timeout 900 "$bench" $quick "${sizes[@]}" || rc=1
    echo
  fi
fi
for part in veth loss; do
  want $part || continue
  args=("$build" $quick "${sizes[@]}")
  [ -n "$csv" ] && args+=(--csv "$csv")
  UDP_BENCH_INNER=$part "$netns" run "fb-udp-$part-$$" 2 --timeout 1200 -- "$0" "${args[@]}"
  r=$?
  if [ $r -eq 77 ]; then
    echo "== $part: skipped: needs root, network namespaces and nftables"
  elif [ $r -ne 0 ]; then
    rc=1
  fi
  [ -z "$csv" ] && echo
done
exit $rc
