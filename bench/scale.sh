#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What N ranks on this host cost (make bench-scale): flit-bench-scale under
# flitrun for N = 2, 8, 32, 64, 128, 256 over shared memory and N = 2, 8,
# 32, 64, 128 with FLIT_TRANSPORT=udp. Per N: the slowest rank's flit_init
# and flit_ep_create (both hold the wait for the last rank to start), after_s
# (from the last rank's start of flit_init to the last end of
# flit_ep_create: what flit adds once every process runs), the largest VmSize and VmRSS of a rank after creation
# and VmRSS after an all-to-all exchange, the /dev/shm the job's ring files
# hold after creation and after the exchange (files_MB, files_a2a: their
# allocated blocks, summed over the ranks; the raw lines also carry the
# host's whole /dev/shm use, where other programs' files count), the 8-byte one-way
# latency between ranks 0 and 1 while the others sleep in flit_wait (the
# median of batches of round trips, and the fastest batch: on a loaded
# machine the pair loses its CPUs to the sleepers' neighbours), and the mean
# time of a barrier; heap_KB and heap_a2a: the most a rank's endpoint
# holds from malloc after creation and after the exchange (mallinfo2).
#
#     bench/scale.sh BUILD_DIR [--shm "2 8 ..."] [--udp "2 8 ..."]
#                              [--iters K] [--plot FILE.png] [--raw FILE]
#
# --plot: the figures against N (log axis) as a PNG, with gnuplot (Debian
# package gnuplot-nox); without it the script says so and prints the table.
#
# With --hosts "1 2 4 8" (and --ranks, --mpi; root): the same over network
# namespace hosts, bench/scale_hosts.sh.
set -u

case " $* " in
  *" --hosts "*) exec "$(dirname "$0")/scale_hosts.sh" "$@" ;;
esac
build=${1:-build}
[ $# -gt 0 ] && shift
shm_ns="2 8 32 64 128 256"
udp_ns="2 8 32 64 128"
iters=20000
plot=
raw=
while [ $# -gt 0 ]; do
  case $1 in
    --shm) shm_ns=$2; shift 2 ;;
    --udp) udp_ns=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --plot) plot=$2; shift 2 ;;
    --raw) raw=$2; shift 2 ;;
    *) echo "scale.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
flitrun=$build/tools/flitrun
prog=$build/bench/flit-bench-scale
for f in "$flitrun" "$prog"; do
  [ -x "$f" ] || { echo "scale.sh: $f is missing: build $build first" >&2; exit 1; }
done
[ -n "$raw" ] || raw=$(mktemp /tmp/flit-scale.XXXXXX)

shm_used_mb() { df -k --output=used /dev/shm | awk 'NR == 2 { printf "%.2f", $1 / 1024 }'; }

run_one() { # transport N
  local before line
  before=$(shm_used_mb)
  line=$(FLIT_TRANSPORT=$1 "$flitrun" -n "$2" --timeout 600 "$prog" --iters "$iters" |
         grep '^scale ')
  if [ -z "$line" ]; then
    echo "scale.sh: N=$2 over $1 failed" >&2
    return
  fi
  echo "$line before_mb=$before" >>"$raw"
}

: >"$raw"
for n in $shm_ns; do run_one shm "$n"; done
for n in $udp_ns; do run_one udp "$n"; done

printf '%-4s %5s %9s %9s %9s %10s %9s %9s %10s %10s %8s %8s %11s %9s %9s\n' \
  tp N init_s create_s after_s VmSize_MB VmRSS_MB RSS_a2a files_MB files_a2a \
  lat_us lat_min barrier_us heap_KB heap_a2a
awk '{
  for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  printf "%-4s %5d %9.4f %9.4f %9.4f %10.1f %9.1f %9.1f %10.2f %10.2f %8.3f %8.3f %11.1f %9d %9d\n",
    v["transport"], v["N"], v["init_s"], v["create_s"], v["after_s"], v["vmsize_mb"], v["vmrss_mb"],
    v["vmrss_a2a_mb"], v["files_mb"], v["files_a2a_mb"],
    v["lat_us"], v["lat_min_us"], v["barrier_us"], v["ep_heap_kb"], v["ep_heap_a2a_kb"]
}' "$raw"

if [ -n "$plot" ]; then
  if ! command -v gnuplot >/dev/null; then
    echo "scale.sh: no gnuplot (Debian package gnuplot-nox): no plot" >&2
    exit 0
  fi
  dat=$(mktemp /tmp/flit-scale-dat.XXXXXX)
  for tp in shm udp; do
    awk -v tp=$tp '{
      for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      if (v["transport"] == tp)
        print v["N"], v["create_s"], v["vmsize_mb"], v["shm_create_mb"] - v["before_mb"],
              v["lat_us"], v["barrier_us"]
    }' "$raw" >"$dat.$tp"
  done
  gnuplot <<GP
set terminal pngcairo size 1200,800
set output '$plot'
set multiplot layout 2,2 title 'flit on one host: N ranks'
set logscale x 2
set xlabel 'ranks (N)'
set key left top
set logscale y
set title 'flit\_ep\_create (s, slowest rank)'
plot '$dat.shm' u 1:2 w lp t 'shm', '$dat.udp' u 1:2 w lp t 'udp'
set title 'VmSize per rank (MB)'
plot '$dat.shm' u 1:3 w lp t 'shm', '$dat.udp' u 1:3 w lp t 'udp'
unset logscale y
set title '8-byte one-way latency, ranks 0-1 (us)'
plot '$dat.shm' u 1:5 w lp t 'shm', '$dat.udp' u 1:5 w lp t 'udp'
set logscale y
set title 'barrier (us)'
plot '$dat.shm' u 1:6 w lp t 'shm', '$dat.udp' u 1:6 w lp t 'udp'
unset multiplot
GP
  rm -f "$dat.shm" "$dat.udp"
  echo "scale.sh: plot in $plot"
fi
