#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# flit-bench runs and prints every figure it promises, with its baseline.
# Not a timing test: only the shape of the CSV is checked, never a value.
#
#   smoke.sh FLITRUN FLIT_BENCH shm|udp
set -u
flitrun=$1
bench=$2
path=$3
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT

[ "$path" = udp ] && export FLIT_TRANSPORT=udp
"$flitrun" -n 2 --timeout 200 "$bench" --quick --csv --percentiles --sizes 8,4k,64k,1M \
  >"$out" || { echo "FAIL: flit-bench exited $?"; cat "$out"; exit 1; }

fails=0
# A line is a figure (a positive value) or says why it is none: "noisy"
# when every attempt lost a CPU to other work (a loaded machine), "baseline
# noisy" when its baseline's did. Never a value beside such a note.
#
# NAME SIZE: the figure is there, positive, with a positive baseline and a
# ratio (whatever its value: a loaded machine makes any figure small).
expect() {
  if ! awk -F, -v n="$1" -v s="$2" '
      $1 == n && $2 == s && ($3 > 0 && $5 > 0 && $6 != "" || $7 ~ /noisy/) { ok = 1 }
      END { exit !ok }' "$out"; then
    echo "FAIL: no figure $1 at $2 with a baseline"
    fails=$((fails + 1))
  fi
}
# NAME SIZE: the figure is there, with no baseline and no ratio: the only
# baseline measured is of another size.
expect_alone() {
  if ! awk -F, -v n="$1" -v s="$2" '
      $1 == n && $2 == s && ($3 > 0 || $7 ~ /^noisy/) && $5 == "" && $6 == "" { ok = 1 }
      END { exit !ok }' "$out"; then
    echo "FAIL: no figure $1 at $2, or one with a ratio to a baseline of another size"
    fails=$((fails + 1))
  fi
}
head -n 1 "$out" | grep -qx 'name,size,value,unit,baseline,ratio,note' ||
  { echo "FAIL: no CSV header"; fails=$((fails + 1)); }
awk -F, 'NR > 1 && (NF != 7 || ($3 != "" && $7 ~ /^noisy/) || ($3 == "" && $7 == "")) {
    print "FAIL: malformed line: " $0; bad = 1 } END { exit bad }' "$out" ||
  fails=$((fails + 1))
expect latency_short 8
for s in 0 4 12 16; do expect_alone latency_short $s; done
expect latency_short_wait 8
for s in p50 p99 max mean; do expect_alone latency_short_$s 8; done
awk -F, '$1 == "latency_short_samples" && ($3 >= 1000 || $7 ~ /^noisy/) { ok = 1 }
    END { exit !ok }' "$out" || { echo "FAIL: fewer than 1000 round trips timed"; fails=$((fails + 1)); }
if [ "$path" = udp ]; then
  # raw UDP ping-pongs of every size
  for s in 8 4096 65536; do expect latency_medium $s; done
  for s in 8 4096 65536 1048576; do expect latency_long $s; done
else
  # the raw flag is 8 bytes: a ratio at 8 B only
  expect latency_medium 8
  expect latency_long 8
  for s in 4096 65536; do expect_alone latency_medium $s; done
  for s in 4096 65536 1048576; do expect_alone latency_long $s; done
fi
for s in 8 4096 65536; do expect bandwidth_medium $s; done
for s in 8 4096 65536 1048576; do expect bandwidth_long $s; done
expect rate_short 8
if [ "$path" = udp ]; then
  expect_raw=latency_raw_udp
  grep -q '^latency_raw_udp_blocking,8,' "$out" || { echo "FAIL: no blocking raw UDP"; fails=$((fails + 1)); }
else
  expect_raw=latency_raw_flag
  grep -q '^latency_raw_line,8,' "$out" || { echo "FAIL: no one-line raw flag"; fails=$((fails + 1)); }
  expect latency_short_line 8
fi
grep -q "^$expect_raw,8," "$out" || { echo "FAIL: no $expect_raw"; fails=$((fails + 1)); }
# 8, 4k, 64k, 1M is too sparse a sweep for N1/2: no figure, a reason
awk -F, '$1 == "nhalf_long" && $3 == "" && $7 != "" { ok = 1 } END { exit !ok }' "$out" ||
  { echo "FAIL: N1/2 of a sparse sweep is not 'no figure, and why'"; fails=$((fails + 1)); }

# Shared objects (bench_object.c): each figure beside its baseline.
for f in object_roi object_goi object_local_read; do expect $f ""; done
for f in object_roi_bulk object_goi_bulk; do expect $f 1048576; done

# Bad options: exit 2 with a message, no figures.
if "$flitrun" -n 2 --timeout 60 "$bench" --only nothing >/dev/null 2>&1; then
  echo "FAIL: --only nothing was accepted"; fails=$((fails + 1))
fi
if "$flitrun" -n 2 --timeout 60 "$bench" --sizes 4 >/dev/null 2>&1; then
  echo "FAIL: --sizes 4 (below 8 bytes) was accepted"; fails=$((fails + 1))
fi

if [ "$fails" -gt 0 ]; then
  cat "$out"
  exit 1
fi
echo "PASS: flit-bench on $path: $(($(wc -l <"$out") - 1)) figures"
