#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# flit-bench --plot: what the PNG is drawn from, caught by a stand-in
# gnuplot first in PATH (no gnuplot needed, nothing timed): the latency
# panel holds the short AM's point (8 B, 2 arguments), every flit point has
# a bar from its fastest to its slowest run (the data's lo <= value <= hi),
# and the bandwidth panel says that the receiver does not read the data.
# usage: plot_test.sh FLITRUN FLIT_BENCH
set -u
flitrun=$1 bench=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/bin" "$dir/spy"
cat >"$dir/bin/gnuplot" <<'EOS'
#!/bin/sh
# flit-bench's probe for pngcairo: yes; its script: kept with its data
case "$1" in -e) exit 0 ;; esac
cp "$(dirname "$1")"/*.dat "$1" "$PLOT_SPY"/ && : >"$PLOT_SPY/png"
EOS
chmod +x "$dir/bin/gnuplot"
fail() {
    echo "plot_test: $*"
    exit 1
}
PATH="$dir/bin:$PATH" PLOT_SPY="$dir/spy" "$flitrun" -n 2 --timeout 240 "$bench" \
    --quick --only latency,bandwidth --sizes 8,4k --plot "$dir/x.png" >"$dir/out" 2>&1 ||
    fail "flit-bench failed: $(tail -5 "$dir/out")"
gp=$dir/spy/plot.gp
[ -f "$gp" ] && [ -f "$dir/spy/png" ] || fail "no plot made: $(tail -3 "$dir/out")"
[ -f "$dir/spy/short.dat" ] || fail "no short AM data"
grep -q "short.dat' using 1:3:7:8 with yerrorbars .*title 'flit short, 2 args (8 B)'" "$gp" ||
    fail "the latency panel has no short AM point: $(grep '^plot' "$gp")"
n=$(grep -c "^plot .* using 1:2:5:6 with yerrorlines title 'flit medium', '' using 1:3:7:8 with yerrorlines title 'flit long'" "$gp")
[ "$n" -eq 2 ] || fail "$n of 2 panels draw the runs' spread: $(grep '^plot' "$gp")"
grep -q 'label 4 "bars: the fastest and slowest of the runs' "$gp" || fail "bars not explained"
grep -q '^set title "one-sided: the receiver does not read the data' "$gp" ||
    fail "the bandwidth panel does not say the receiver leaves the data unread"
# every drawn point inside its bar; a point not drawn has no bar
for f in short lat bw; do
    awk -v f="$f" '
        NF != 8 { print f ": " NF " columns: " $0; bad = 1; next }
        function check(v, lo, hi) {
            if (v == "?") { if (lo != "?" || hi != "?") bad = 1; return }
            if (!(lo + 0 <= v + 0 && v + 0 <= hi + 0)) { print f ": " $0; bad = 1 }
        }
        { check($2, $5, $6); check($3, $7, $8) }
        END { exit bad }' "$dir/spy/$f.dat" || fail "a point outside its bar in $f.dat"
done
echo "plot_test: short AM point, spread bars, one-sided note ($(grep -c . "$dir/spy/lat.dat") latency sizes)"
exit 0
