#!/bin/sh
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
"$flitrun" -n 2 --timeout 200 "$bench" --quick --csv --sizes 8,4k,64k,1M >"$out" || {
  echo "FAIL: flit-bench exited $?"; cat "$out"; exit 1; }

fails=0
# NAME SIZE: the figure is there, positive, with a positive baseline and a
# ratio (whatever its value: a loaded machine makes any figure small).
expect() {
  if ! awk -F, -v n="$1" -v s="$2" '
      $1 == n && $2 == s && $3 > 0 && $5 > 0 && $6 != "" { ok = 1 }
      END { exit !ok }' "$out"; then
    echo "FAIL: no figure $1 at $2 with a baseline"
    fails=$((fails + 1))
  fi
}
head -n 1 "$out" | grep -qx 'name,size,value,unit,baseline,ratio' ||
  { echo "FAIL: no CSV header"; fails=$((fails + 1)); }
for s in 0 4 8 12 16; do expect latency_short $s; done
expect latency_short_wait 8
for s in 8 4096 65536; do expect latency_medium $s; expect bandwidth_medium $s; done
for s in 8 4096 65536 1048576; do expect latency_long $s; expect bandwidth_long $s; done
expect rate_short 8
if [ "$path" = udp ]; then
  expect_raw=latency_raw_udp
  grep -q '^latency_raw_udp_blocking,8,' "$out" || { echo "FAIL: no blocking raw UDP"; fails=$((fails + 1)); }
else
  expect_raw=latency_raw_flag
fi
grep -q "^$expect_raw,8," "$out" || { echo "FAIL: no $expect_raw"; fails=$((fails + 1)); }
grep -q '^nhalf_long,,' "$out" || { echo "FAIL: no N1/2"; fails=$((fails + 1)); }

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
