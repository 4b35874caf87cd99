#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/compare.sh runs flit, Open MPI and UCX in turn, round by round, and
# prints each figure of each program with a ratio. Not a timing test: only
# the shape of the table is checked, never a value. Skips (77) when neither
# peer is installed, naming the packages. flit-bench leaves out a figure
# during which a rank lost its CPU (noisy) after its retries; the suite runs
# beside other tests, so this run gives it more of them than --quick's one,
# or a figure noisy in both rounds would read n/a and fail the shape.
# A flit figure may still read n/a when flit-bench said, in both rounds,
# that figures never came out clean (other work held the CPUs all along):
# the row must then carry every peer's figure, and the gap is reported.
#
#   compare_smoke.sh SOURCE_DIR BUILD_DIR
set -u
src=$1
build=$2
out=$(mktemp) || exit 1
err=$(mktemp) || exit 1
trap 'rm -f "$out" "$err"' EXIT

"$src/bench/compare.sh" "$build" --rounds 2 --quick --retries 6 >"$out" 2>"$err" ||
    { echo "FAIL: compare.sh exited $?"; cat "$err" "$out"; exit 1; }
if grep -q "nothing to compare with" "$out"; then
    echo "SKIP: neither Open MPI nor UCX is installed (apt-get install openmpi-bin" \
        "libopenmpi-dev ucx-utils)"
    exit 77
fi

fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
peers=
command -v mpirun >/dev/null 2>&1 && peers="$peers mpi"
command -v ucx_perftest >/dev/null 2>&1 && peers="$peers ucx"

# Every program ran in both rounds, and not always in the same place.
for p in flit $peers; do
    for r in 1 2; do
        grep -q "^round $r of 2: $p \.\.\.$" "$err" || fail "no $p run in round $r"
    done
done
first1=$(sed -n 's/^round 1 of 2: \([a-z]*\) \.\.\.$/\1/p' "$err" | head -n 1)
first2=$(sed -n 's/^round 2 of 2: \([a-z]*\) \.\.\.$/\1/p' "$err" | head -n 1)
[ -z "$peers" ] || [ "$first1" != "$first2" ] || fail "round 2 began with $first2 again"

noisy=$(grep -c "figures never came out clean" "$err")

# NAME SIZE N: the row has a median with its range for flit and N ratios.
row() {
    line=$(grep -F "$1" "$out" | grep -E " $2 " | head -n 1)
    [ -n "$line" ] || { fail "no row '$1' at $2"; return; }
    cells=$(echo "$line" | grep -oE '[0-9.]+ \([0-9.]+-[0-9.]+\)' | wc -l)
    ratios=$(echo "$line" | grep -oE '\) +[0-9]+\.[0-9]{2}( |$)' | wc -l)
    want=$(($3 + 1))
    wantr=$3
    if echo "$line" | grep -qE ' (us|M/s|MB/s) +n/a ' && [ "$noisy" -ge 2 ]; then
        echo "note: row '$1' at $2 has no flit figure (noisy in both rounds)"
        want=$3
        wantr=0
    fi
    [ "$cells" -ge "$want" ] || fail "row '$1' at $2: $cells figures: $line"
    [ "$ratios" -ge "$wantr" ] || fail "row '$1' at $2: $ratios ratios: $line"
}
npeers=$(echo "$peers" | wc -w)
row "latency, one way (flit: short AM)" "8 B" "$npeers"
row "latency, one way (flit: tagged)" "8 B" "$npeers"
row "message rate (flit: short AM)" "8 B" "$npeers"
row "bandwidth (flit: tagged)" "1 KiB" "$npeers"
case $peers in *ucx*) row "put bandwidth (flit: put)" "64 KiB" 1 ;; esac
case $peers in *mpi*) row "bandwidth (flit: long AM)" "64 KiB" 1 ;; esac

if [ "$fails" -ne 0 ]; then
    echo "--- table"
    cat "$out"
    echo "--- stderr"
    cat "$err"
    exit 1
fi
echo "compare_smoke: ok (flit$peers)"
