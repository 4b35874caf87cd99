#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run_hello.sh FLITRUN HELLO ok|bad-env
# Runs the README's complete program as the README says, built by
# readme_snippets: alone (a job of one rank) and under flitrun -n 2.
#   ok       every rank prints its neighbour's answer, and all exit 0.
#   bad-env  with a bad FLIT_* value: alone, flit_init fails, the program
#            says so and exits non-zero by itself (not a signal: it once
#            divided by a job size of 0), and the library names the
#            variable; under flitrun, flitrun names it once and starts no
#            rank.
set -u
flitrun=$1 hello=$2 mode=$3
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
fails=0
fail() { echo "FAIL: $*"; cat "$out"; fails=$((fails + 1)); }
has() { grep -qxF "$1" "$out" || fail "no line '$1'"; }

case $mode in
ok)
    "$hello" >"$out" 2>&1 || fail "$hello alone exited $?"
    has "rank 0: rank 0 answered 200"
    "$flitrun" -n 2 --timeout 60 "$hello" >"$out" 2>&1 || fail "flitrun -n 2 $hello exited $?"
    has "rank 0: rank 1 answered 200"
    has "rank 1: rank 0 answered 202"
    ;;
bad-env)
    export FLIT_SHM_RING_KB=3
    for how in alone flitrun; do
        if [ $how = alone ]; then
            "$hello" >"$out" 2>&1
        else
            "$flitrun" -n 2 --timeout 60 "$hello" >"$out" 2>&1
        fi
        st=$?
        # flitrun exits with a rank's status, or 128 + its signal; 124 is
        # its --timeout.
        if [ $st -eq 0 ] || [ $st -ge 124 ]; then
            fail "$how: exit status $st, expected a clean failure"
        fi
        if [ $how = alone ]; then
            grep -q '^flit_init: ' "$out" || fail "$how: the program did not say flit_init failed"
        else
            grep -q '^flitrun: no rank started' "$out" || fail "$how: flitrun started ranks"
            grep -q '^flit_init: ' "$out" && fail "$how: a rank ran"
        fi
        [ "$(grep -c 'FLIT_SHM_RING_KB' "$out")" -eq 1 ] ||
            fail "$how: FLIT_SHM_RING_KB not named exactly once"
    done
    ;;
*)
    echo "usage: run_hello.sh FLITRUN HELLO ok|bad-env"; exit 2 ;;
esac
[ $fails -eq 0 ] || exit 1
echo "PASS: $mode"
