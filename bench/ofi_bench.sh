#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# flit over libfabric beside libfabric's own fi_pingpong on the same
# provider, the floor (make bench-ofi):
#
#     bench/ofi_bench.sh BUILD_DIR [--runs N] [--providers "tcp udp"] [--quick]
#
# For each provider, N rounds (default 5), alternated: fi_pingpong 8 B
# (RDM endpoints, server and client on 127.0.0.1; its usec/xfer), then
# flit-bench with FLIT_TRANSPORT=ofi on that provider (latency_short 8 B,
# bandwidth_long 64 KiB and 1 MiB). Each figure as "median (min-max)" over
# the rounds. flit-bench prints no figure it could not measure quietly
# (another process held a CPU): such rounds are left out and counted. On a
# loaded machine every round may be; the script says so. --quick: flit-bench
# --quick (fewer iterations), for a smoke run.
set -u
build=${1:-build}
[ $# -gt 0 ] && shift
runs=5
providers="tcp udp"
quick=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --providers) providers=$2; shift 2 ;;
    --quick) quick=--quick; shift ;;
    *) echo "ofi_bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
bench=$(readlink -f "$build/bench/flit-bench")
flitrun=$(readlink -f "$build/tools/flitrun")
[ -x "$bench" ] && [ -x "$flitrun" ] ||
  { echo "ofi_bench.sh: $build/bench/flit-bench or $build/tools/flitrun missing: build first" >&2; exit 1; }
command -v fi_pingpong >/dev/null 2>&1 ||
  { echo "ofi_bench.sh: fi_pingpong not found (Debian: libfabric-bin)" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

pingpong() { # PROVIDER: fi_pingpong's usec/xfer for 8 B, "" if it failed
  local port=$((20000 + RANDOM % 20000))
  timeout 60 fi_pingpong -p "$1" -e rdm -B "$port" -I 10000 -S 8 >/dev/null 2>&1 &
  local server=$!
  sleep 0.3
  timeout 60 fi_pingpong -p "$1" -e rdm -P "$port" -I 10000 -S 8 127.0.0.1 2>/dev/null |
    awk '$1 == "8" { print $7 }'
  wait "$server"
}

flit() { # PROVIDER CSV
  FLIT_TRANSPORT=ofi FLIT_OFI_PROVIDER=$1 timeout 600 "$flitrun" -n 2 "$bench" $quick --csv \
    --only latency,bandwidth --sizes 8,64k,1M >"$2" 2>/dev/null
}

value() { # FILE NAME SIZE
  awk -F, -v n="$2" -v s="$3" '$1 == n && $2 == s && $3 != "" { print $3 }' "$1"
}

summary() { # values...: "median (min-max)", or "none (all noisy or failed)"
  [ $# -gt 0 ] || { echo "none (every round noisy or failed)"; return; }
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.2f (%.2f-%.2f), %d rounds\n", m, v[1], v[NR], NR }'
}

for prov in $providers; do
  if ! fi_info -p "$prov" -t FI_EP_RDM >/dev/null 2>&1; then
    echo "== $prov: libfabric has no such provider here (fi_info -p $prov); skipped"
    continue
  fi
  floor=() lat=() bw64=() bw1m=()
  for ((r = 0; r < runs; r++)); do
    v=$(pingpong "$prov") && [ -n "$v" ] && floor+=("$v")
    flit "$prov" "$tmp/$prov.$r.csv"
    v=$(value "$tmp/$prov.$r.csv" latency_short 8) && [ -n "$v" ] && lat+=("$v")
    v=$(value "$tmp/$prov.$r.csv" bandwidth_long 65536) && [ -n "$v" ] && bw64+=("$v")
    v=$(value "$tmp/$prov.$r.csv" bandwidth_long 1048576) && [ -n "$v" ] && bw1m+=("$v")
  done
  echo "== $prov ($runs rounds, alternated)"
  echo "  fi_pingpong 8 B, us/xfer:        $(summary "${floor[@]}")"
  echo "  flit latency_short 8 B, us:      $(summary "${lat[@]}")"
  echo "  flit bandwidth_long 64 KiB:      $(summary "${bw64[@]}")"
  echo "  flit bandwidth_long 1 MiB:       $(summary "${bw1m[@]}")"
done
