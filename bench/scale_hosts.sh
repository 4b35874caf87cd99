#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What N ranks over H hosts cost (make bench-scale BENCH_ARGS='--hosts
# "1 2 4 8"'; root): the hosts are network namespaces on one bridge
# (tests/net/netns.sh), each host's ranks sharing memory, UDP between.
# flit-bench-scale runs under flitrun in host 0 (--hosts over the first H
# namespaces, --map-by host: ranks 0 and 1 on different hosts from H = 2)
# for every N of --ranks and H of --hosts with N >= H. Per run, besides
# flit-bench-scale's own figures (bench/scale.c): start_s, from flitrun's
# start to rank 0 leaving the first barrier after flit_ep_create; total_s,
# flitrun's start to its end; finalize_s, rank 0's flit_ep_destroy and
# flit_finalize; and the ratios the targets are stated in: lat_x, the 8-byte
# one-way latency of ranks 0 and 1 over the 2-rank job's on 2 hosts (the
# same pair, alone), and bar_x, the barrier over that job's.
#
# --mpi: each run again under Open MPI's mpirun on the same layout (its rsh
# agent enters the namespaces: tests/net/hosts_lib.sh's mpirun_agent), flit
# started by mpirun (launcher mpirun), and Open MPI's own MPI_Init and
# MPI_Barrier (bench/launch_time_mpi.c, --mca btl tcp,self,vader; launcher
# ompi: only start_s and total_s).
#
#     bench/scale_hosts.sh BUILD_DIR [--hosts "1 2 4 8"]
#         [--ranks "2 64 256 512 1024"] [--iters K] [--mpi]
#         [--plot FILE.png] [--raw FILE]
set -u

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
[ $# -gt 0 ] && shift
args=("$@")
hosts_list="1 2 4 8"
ranks_list="2 64 256 512 1024"
iters=2000
mpi=0
plot=
raw=
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts_list=$2; shift 2 ;;
    --ranks) ranks_list=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --mpi) mpi=1; shift ;;
    --plot) plot=$2; shift 2 ;;
    --raw) raw=$2; shift 2 ;;
    *) echo "scale_hosts.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
flitrun=$build/tools/flitrun
prog=$build/bench/flit-bench-scale
for f in "$flitrun" "$prog"; do
  [ -x "$f" ] || { echo "scale_hosts.sh: $f is missing: build $build first" >&2; exit 1; }
done
most=1
for h in $hosts_list; do [ "$h" -gt "$most" ] && most=$h; done

# The hosts, made for the whole run and taken down after it.
if [ -z "${FLITNET_NS0:-}" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "scale_hosts.sh: network namespaces need root" >&2; exit 1; }
  exec bash "$here/../tests/net/netns.sh" run fsh "$most" --timeout 14400 -- \
    "$0" "$build" "${args[@]}"
fi
# shellcheck source=tests/net/hosts_lib.sh disable=SC1091
. "$here/../tests/net/hosts_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "$raw" ] || raw=$tmp/raw
: >"$raw"

if [ "$mpi" = 1 ]; then
  if ! command -v mpirun >/dev/null || ! command -v mpicc >/dev/null; then
    echo "scale_hosts.sh: --mpi needs Open MPI (Debian: openmpi-bin libopenmpi-dev)" >&2
    mpi=0
  elif ! mpicc -O2 -o "$tmp/launch_time_mpi" "$here/launch_time_mpi.c"; then
    echo "scale_hosts.sh: mpicc could not build launch_time_mpi.c" >&2
    mpi=0
  fi
fi

ns_list() { # H: the first H namespaces, comma-separated
  local i ns out=""
  for ((i = 0; i < $1; i++)); do
    ns=FLITNET_NS$i
    out="$out${out:+,}${!ns}"
  done
  echo "$out"
}

now() { date +%s.%N; }

# record LAUNCHER H N T0 T1 OUT: the run's line with what the script timed.
record() {
  local line fb fin
  line=$(grep '^scale ' "$6")
  fin=$(sed -n 's/^scale-end .*finalize_s=\([0-9.]*\).*/\1/p' "$6")
  if [ -z "$line" ]; then
    echo "scale_hosts.sh: $3 ranks over $2 hosts under $1 failed" >&2
    tail -5 "$6" >&2
    return
  fi
  fb=${line##*first_barrier_epoch=}
  fb=${fb%% *}
  echo "$line launcher=$1 hosts=$2 start_s=$(echo "$fb - $4" | bc)" \
       "total_s=$(echo "$5 - $4" | bc) finalize_s=${fin:-0}" >>"$raw"
}

run_flitrun() { # H N
  local t0 t1
  t0=$(now)
  ip netns exec "$FLITNET_NS0" "$flitrun" -n "$2" --hosts "$(ns_list "$1")" --map-by host \
    --launch 'ip netns exec {host} unshare --ipc' --timeout 600 \
    "$prog" --iters "$iters" >"$tmp/out" 2>&1
  t1=$(now)
  record flitrun "$1" "$2" "$t0" "$t1" "$tmp/out"
}

mpirun_in_hosts() { # H N PROGRAM...: under mpirun, --map-by node
  local h=$1 n=$2
  shift 2
  rm -f "$tmp/calls"
  mpirun_agent "$tmp" "$h" $(((n + h - 1) / h))
  ip netns exec "$FLITNET_NS0" mpirun --allow-run-as-root --oversubscribe --bind-to none \
    --timeout 600 --mca plm_rsh_agent "$tmp/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl tcp,self,vader --host "$MPIRUN_HOSTS" --map-by node -n "$n" "$@" \
    >"$tmp/out" 2>&1 </dev/null
}

run_mpirun() { # H N
  local t0 t1 ms
  t0=$(now)
  mpirun_in_hosts "$1" "$2" "$prog" --iters "$iters"
  t1=$(now)
  record mpirun "$1" "$2" "$t0" "$t1" "$tmp/out"
  t0=$(now)
  LAUNCH_BENCH_T0=$(date +%s%N) mpirun_in_hosts "$1" "$2" -x LAUNCH_BENCH_T0 \
    "$tmp/launch_time_mpi"
  t1=$(now)
  ms=$(sed -n 's/^launch_time: .* total \([0-9.]*\) ms.*/\1/p' "$tmp/out")
  if [ -z "$ms" ]; then
    echo "scale_hosts.sh: Open MPI's $2 ranks over $1 hosts failed" >&2
    tail -5 "$tmp/out" >&2
    return
  fi
  echo "ompi N=$2 launcher=ompi hosts=$1 start_s=$(echo "$ms / 1000" | bc -l)" \
       "total_s=$(echo "$t1 - $t0" | bc)" >>"$raw"
}

for h in $hosts_list; do
  for n in $ranks_list; do
    [ "$n" -ge "$h" ] || continue
    run_flitrun "$h" "$n"
    [ "$mpi" = 1 ] && run_mpirun "$h" "$n"
  done
done

echo "$(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p')), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %5s %5s %8s %9s %9s %9s %9s %8s %6s %11s %6s %10s %8s\n' \
  launcher hosts N start_s create_s VmRSS_MB RSS_a2a VmSize_MB lat_us lat_x barrier_us \
  bar_x finalize_s total_s
# lat_x and bar_x: over the 2-rank job on 2 hosts under flitrun (read first).
awk '
  function parse(   i, kv) {
    delete v
    for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) v[kv[1]] = kv[2]
  }
  NR == FNR { parse(); if (v["launcher"] == "flitrun" && v["N"] == 2 && v["hosts"] == 2) {
      lat2 = v["lat_us"]; bar2 = v["barrier_us"] }; next }
  { parse()
    if (v["launcher"] == "ompi") {
      printf "%-8s %5d %5d %8.2f %9s %9s %9s %9s %8s %6s %11s %6s %10s %8.2f\n",
        "ompi", v["hosts"], v["N"], v["start_s"], "-", "-", "-", "-", "-", "-", "-", "-", "-",
        v["total_s"]
      next
    }
    printf "%-8s %5d %5d %8.2f %9.4f %9.1f %9.1f %9.1f %8.2f %6s %11.1f %6s %10.4f %8.2f\n",
      v["launcher"], v["hosts"], v["N"], v["start_s"], v["create_s"], v["vmrss_mb"],
      v["vmrss_a2a_mb"], v["vmsize_mb"], v["lat_us"],
      ((lat2 > 0 && v["hosts"] > 1) ? sprintf("%.2f", v["lat_us"] / lat2) : "-"),
      v["barrier_us"], ((bar2 > 0) ? sprintf("%.1f", v["barrier_us"] / bar2) : "-"),
      v["finalize_s"], v["total_s"]
  }' "$raw" "$raw"

if [ -n "$plot" ]; then
  if ! command -v gnuplot >/dev/null; then
    echo "scale_hosts.sh: no gnuplot (Debian package gnuplot-nox): no plot" >&2
    exit 0
  fi
  gp=$tmp/plot.gp
  {
    echo "set terminal pngcairo size 1200,800"
    echo "set output '$plot'"
    echo "set multiplot layout 2,2 title 'flit over namespace hosts: N ranks'"
    echo "set logscale x 2; set xlabel 'ranks (N)'; set key left top"
  } >"$gp"
  for fig in "start_s:start to first barrier (s)" "vmrss_a2a_mb:VmRSS after all-to-all (MB)" \
             "lat_us:8-byte one-way latency, ranks 0-1 (us)" "barrier_us:barrier (us)"; do
    key=${fig%%:*}
    echo "set title '${fig#*:}'" >>"$gp"
    cmd="plot"
    for h in $hosts_list; do
      for l in flitrun mpirun ompi; do
        awk -v k="$key" -v h="$h" -v l="$l" '{
          delete v
          for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) v[kv[1]] = kv[2]
          if (v["hosts"] == h && v["launcher"] == l && (k in v)) print v["N"], v[k]
        }' "$raw" >"$tmp/d.$key.$h.$l"
        [ -s "$tmp/d.$key.$h.$l" ] &&
          cmd="$cmd '$tmp/d.$key.$h.$l' w lp t '$l, $h hosts',"
      done
    done
    echo "${cmd%,}" >>"$gp"
  done
  echo "unset multiplot" >>"$gp"
  gnuplot "$gp" && echo "scale_hosts.sh: plot in $plot"
fi
