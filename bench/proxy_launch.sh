#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/proxy_launch.sh BUILD_DIR [OTHER_FLITRUN]: start-up of a job over
# namespace hosts (tests/net/netns.sh: root). flitrun runs in host 0 with
# --hosts over HOSTS hosts (default 4) and --launch 'ip netns exec {host}
# unshare --ipc' (each host shares memory inside, UDP between), and starts
# RANKS ranks (default 256) of mp_scale --mode job --barrier-only 1. Times,
# per run, flitrun's start to the end of the first barrier (rank 0 prints
# when) and to flitrun's end. RUNS runs (default 5); with OTHER_FLITRUN
# (another build's flitrun, e.g. main's), the two alternate (A B A B ...).
# Prints each run, then the median and the range of each.
set -u
build=$(cd "$1" && pwd)
other=${2:-}
hosts=${HOSTS:-4}
ranks=${RANKS:-256}
runs=${RUNS:-5}
here=$(cd "$(dirname "$0")" && pwd)
scale=$build/tests/mp/mp_scale

# One run, in the network: prints "barrier_s end_s" or "fail RC".
one() {
  local fr=$1 t0 t1 bar rc
  t0=$(date +%s.%N)
  bar=$(ip netns exec "$FLITNET_NS0" "$fr" -n "$ranks" --hosts "$FLITNET_NSLIST" \
          --launch 'ip netns exec {host} unshare --ipc' --timeout 120 \
          "$scale" --mode job --barrier-only 1 2>/dev/null |
        sed -n 's/^job: first barrier at //p')
  rc=${PIPESTATUS[0]}
  t1=$(date +%s.%N)
  if [ -z "$bar" ]; then echo "fail $rc"; return; fi
  echo "$(echo "$bar - $t0" | bc) $(echo "$t1 - $t0" | bc)"
}

stats() { # label file: median and range of columns 1 and 2
  sort -n -k1 "$2" | awk -v l="$1" '{b[NR]=$1} END {printf "%s: first barrier median %.2f s (%.2f..%.2f)", l, b[int((NR+1)/2)], b[1], b[NR]}'
  sort -n -k2 "$2" | awk '{e[NR]=$2} END {printf ", end median %.2f s (%.2f..%.2f), %d runs\n", e[int((NR+1)/2)], e[1], e[NR], NR}'
}

if [ -z "${FLITNET_NS0:-}" ]; then
  exec bash "$here/../tests/net/netns.sh" run fpl "$hosts" --timeout 3000 -- "$0" "$@"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((i = 1; i <= runs; i++)); do
  r=$(one "$build/tools/flitrun")
  echo "run $i this:  $r"
  case $r in fail*) ;; *) echo "$r" >>"$tmp/a" ;; esac
  if [ -n "$other" ]; then
    r=$(one "$other")
    echo "run $i other: $r"
    case $r in fail*) ;; *) echo "$r" >>"$tmp/b" ;; esac
  fi
done
echo "$ranks ranks over $hosts hosts, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -s "$tmp/a" ] && stats "this build ($build/tools/flitrun)" "$tmp/a"
[ -s "$tmp/b" ] && stats "other ($other)" "$tmp/b"
exit 0
