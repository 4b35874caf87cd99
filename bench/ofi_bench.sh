#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# flit over libfabric beside libfabric's own fi_pingpong on the same
# provider, the floor (make bench-ofi):
#
#     bench/ofi_bench.sh BUILD_DIR [--runs N] [--providers "tcp udp shm"] [--quick]
#
# For each provider, N rounds (default 5), alternated: fi_pingpong 8 B and
# 1 MiB (RDM endpoints, server and client on 127.0.0.1; its usec/xfer, one
# way, and its MB/sec), then flit-bench with FLIT_TRANSPORT=ofi on that
# provider (latency_short 8 B, one way; tagged messages of 64 KiB and
# 1 MiB one way, by rendezvous (fi_read), beside fi_pingpong's of the same
# size, the 1 MiB one as a ping-pong's MB/s; a put of 8 B until visible at the
# target, a put of 8 B with a notification until the owner's handler ran,
# and a blocking get of 8 B, by fi_write / fi_read; puts of 1 MiB,
# 16 in flight, then a flush; bandwidth_long 64 KiB and 1 MiB; rate_short,
# 8-byte short AMs streamed, beside bench/ofi_flood: libfabric's own
# 8-byte messages streamed the same way, the floor; the put beside
# ofi_flood --put-pingpong, libfabric's own 8-byte writes by turns, each
# side watching its memory, the put's floor), and flit-bench's rate
# and bandwidth again
# with FLIT_OFI_MULTI_RECV=1 (receives into multi-receive buffers), its
# ratio to the same round's figure without (the two runs swap order each
# round; a provider that refuses it runs as without, and its log says so;
# over udp;ofi_rxd the setting corrupts data: docs/ofi.md). Each
# figure as "median (min-max)" over the rounds, and flit's figures over
# the provider's of the same round as ratios (latency: lower is better;
# bandwidth: higher). fi_pingpong's 1 MiB figure is a ping-pong's (one
# message in flight), flit's put bandwidth a stream's. flit-bench prints no figure it could not measure quietly
# (another process held a CPU): such rounds are left out and counted. On a
# loaded machine every round may be; the script says so. --quick: flit-bench
# --quick (fewer iterations), for a smoke run.
set -u
build=${1:-build}
[ $# -gt 0 ] && shift
runs=5
providers="tcp udp shm"
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
flood=$(readlink -f "$build/bench/ofi_flood")
[ -x "$bench" ] && [ -x "$flitrun" ] && [ -x "$flood" ] ||
  { echo "ofi_bench.sh: $build/bench/flit-bench, ofi_flood or $build/tools/flitrun missing:" \
      "build first (with libfabric)" >&2; exit 1; }
command -v fi_pingpong >/dev/null 2>&1 ||
  { echo "ofi_bench.sh: fi_pingpong not found (Debian: libfabric-bin)" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

pingpong() { # PROVIDER SIZE COLUMN: fi_pingpong's figure ($6 MB/sec, $7
              # usec/xfer) for SIZE bytes, "" if it failed
  local port=$((20000 + RANDOM % 20000)) iters=10000
  [ "$2" -gt 65536 ] && iters=1000
  timeout 60 fi_pingpong -p "$1" -e rdm -B "$port" -I $iters -S "$2" >/dev/null 2>&1 &
  local server=$!
  sleep 0.3
  timeout 60 fi_pingpong -p "$1" -e rdm -P "$port" -I $iters -S "$2" 127.0.0.1 2>/dev/null |
    awk -v c="$3" 'NR == 2 { print $c }'
  wait "$server"
}

flit() { # PROVIDER CSV
  FLIT_TRANSPORT=ofi FLIT_OFI_PROVIDER=$1 timeout 600 "$flitrun" -n 2 "$bench" $quick --csv \
    --only latency,bandwidth,rate,rma,stream --sizes 8,64k,1M >"$2" 2>/dev/null
}

flit_multi() { # PROVIDER CSV: rate and bandwidth receiving into
                # multi-receive buffers
  FLIT_TRANSPORT=ofi FLIT_OFI_PROVIDER=$1 FLIT_OFI_MULTI_RECV=1 timeout 600 "$flitrun" -n 2 \
    "$bench" $quick --csv --only bandwidth,rate --sizes 8,64k,1M >"$2" 2>/dev/null
}

add() { # ARRAY VALUE: VALUE appended to ARRAY unless empty (not measured)
  local -n to=$1
  [ -z "$2" ] || to+=("$2")
}

ratio() { # ARRAY A B: A / B appended to ARRAY when both were measured
  [ -n "$2" ] && [ -n "$3" ] && add "$1" "$(awk -v a="$2" -v b="$3" 'BEGIN { print a / b }')"
  return 0
}

value() { # FILE NAME SIZE: the first such figure (the rma section repeats
           # latency_short as its baseline)
  awk -F, -v n="$2" -v s="$3" '$1 == n && $2 == s && $3 != "" { print $3; exit }' "$1"
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
  floor=() floor1m=() lat=() bw64=() bw1m=() put=() putbw=() get=()
  latr=() putr=() putbwr=() rate=() mrate=() mbw64=() mrater=() mbw64r=()
  rfloor=() rater=() note=() noter=() wfloor=() putwr=()
  floor64=() tg64=() tg64r=() tg1m=() tg1mr=()
  for ((r = 0; r < runs; r++)); do
    f8=$(pingpong "$prov" 8 7)
    f1m=$(pingpong "$prov" 1048576 6)
    f64=$(pingpong "$prov" 65536 7)
    fr=$(timeout 120 "$flood" "$prov" 2>/dev/null | sed -n 's/.*: \([0-9.]*\) M\/s (median.*/\1/p')
    fw=$(timeout 120 "$flood" "$prov" --put-pingpong --count 5120 2>/dev/null |
      sed -n 's/.*one way: \([0-9.]*\) us (median.*/\1/p')
    m=$tmp/$prov.$r.multi.csv
    c=$tmp/$prov.$r.csv
    if ((r % 2)); then
      flit_multi "$prov" "$m"
      flit "$prov" "$c"
    else
      flit "$prov" "$c"
      flit_multi "$prov" "$m"
    fi
    l=$(value "$c" latency_short 8)
    p=$(value "$c" latency_put 8)
    pn=$(value "$c" latency_put_notify 8)
    pb=$(value "$c" bandwidth_put 1048576)
    rt=$(value "$c" rate_short 8)
    b64=$(value "$c" bandwidth_long 65536)
    mrt=$(value "$m" rate_short 8)
    mb64=$(value "$m" bandwidth_long 65536)
    add floor "$f8"
    add floor1m "$f1m"
    add floor64 "$f64"
    t64=$(value "$c" latency_tagged 65536)
    t1m=$(value "$c" latency_tagged 1048576)
    [ -n "$t1m" ] && t1m=$(awk -v t="$t1m" 'BEGIN { print 1048576 / t }')
    add tg64 "$t64"
    add tg1m "$t1m"
    ratio tg64r "$t64" "$f64"
    ratio tg1mr "$t1m" "$f1m"
    add rfloor "$fr"
    add wfloor "$fw"
    add lat "$l"
    add put "$p"
    add note "$pn"
    add putbw "$pb"
    add get "$(value "$c" latency_get 8)"
    add bw64 "$b64"
    add bw1m "$(value "$c" bandwidth_long 1048576)"
    add rate "$rt"
    add mrate "$mrt"
    add mbw64 "$mb64"
    # ratios within the round: flit / the provider's own, and multi-receive
    # buffers / without
    ratio latr "$l" "$f8"
    ratio putr "$p" "$f8"
    ratio putwr "$p" "$fw"
    ratio noter "$pn" "$f8"
    ratio putbwr "$pb" "$f1m"
    ratio rater "$rt" "$fr"
    ratio mrater "$mrt" "$rt"
    ratio mbw64r "$mb64" "$b64"
  done
  echo "== $prov ($runs rounds, alternated)"
  echo "  fi_pingpong 8 B, us/xfer:          $(summary "${floor[@]}")"
  echo "  fi_pingpong 1 MiB, MB/s:           $(summary "${floor1m[@]}")"
  echo "  flit latency_short 8 B, us:        $(summary "${lat[@]}")"
  echo "    / fi_pingpong 8 B:               $(summary "${latr[@]}")"
  echo "  flit put 8 B visible at target, us: $(summary "${put[@]}")"
  echo "    / fi_pingpong 8 B:               $(summary "${putr[@]}")"
  echo "  ofi_flood 8 B write ping-pong, us: $(summary "${wfloor[@]}")"
  echo "    flit put 8 B / that:             $(summary "${putwr[@]}")"
  echo "  flit put 8 B with notification, us: $(summary "${note[@]}")"
  echo "    / fi_pingpong 8 B:               $(summary "${noter[@]}")"
  echo "  flit get 8 B, us:                  $(summary "${get[@]}")"
  echo "  flit put 1 MiB, MB/s:              $(summary "${putbw[@]}")"
  echo "    / fi_pingpong 1 MiB:             $(summary "${putbwr[@]}")"
  echo "  fi_pingpong 64 KiB, us/xfer:       $(summary "${floor64[@]}")"
  echo "  flit tagged 64 KiB one way, us:    $(summary "${tg64[@]}")"
  echo "    / fi_pingpong 64 KiB:            $(summary "${tg64r[@]}")"
  echo "  flit tagged 1 MiB ping-pong, MB/s: $(summary "${tg1m[@]}")"
  echo "    / fi_pingpong 1 MiB:             $(summary "${tg1mr[@]}")"
  echo "  flit bandwidth_long 64 KiB, MB/s:  $(summary "${bw64[@]}")"
  echo "  flit bandwidth_long 1 MiB, MB/s:   $(summary "${bw1m[@]}")"
  echo "  ofi_flood 8 B messages, M/s:       $(summary "${rfloor[@]}")"
  echo "  flit rate_short 8 B, M/s:          $(summary "${rate[@]}")"
  echo "    / ofi_flood:                     $(summary "${rater[@]}")"
  echo "  multi-receive buffers:"
  echo "    rate_short 8 B, M/s:             $(summary "${mrate[@]}")"
  echo "      / without, same round:         $(summary "${mrater[@]}")"
  echo "    bandwidth_long 64 KiB, MB/s:     $(summary "${mbw64[@]}")"
  echo "      / without, same round:         $(summary "${mbw64r[@]}")"
done
