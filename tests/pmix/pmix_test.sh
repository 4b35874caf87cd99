#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# pmix_test.sh NRANKS PROGRAM WORK_DIR [STATUS]
# Runs PROGRAM (pmix_am or pmix_boot) under Open MPI's mpirun with NRANKS
# ranks, no flitrun, and checks that flit chose its PMIx launcher, every rank
# passed, flit reported no problem, and nothing is left behind: no process
# of the job, no Open MPI session directory.
# With STATUS, PROGRAM is mpi_abort: its last rank calls MPI_Abort(STATUS)
# while the others wait, and mpirun must exit with STATUS (PMIx_Abort),
# whatever the others do on seeing that rank gone, with nothing left behind.
# PROGRAM "-" means flit was built without PMIx: skipped.
set -eu
n=$1 prog=$2 work=$3 want=${4:-}
name=${prog##*/}
if [ "$prog" = - ]; then
    echo "SKIP: flit built without PMIx (FLIT_WITH_PMIX=OFF; Debian: libpmix-dev" \
         "and pkg-config, then a fresh build directory or -DFLIT_WITH_PMIX=ON)"
    exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: mpirun not installed (Debian: openmpi-bin)"
    exit 77
fi
if ! mpirun --version 2>&1 | grep -q "Open MPI"; then
    echo "SKIP: this mpirun is not Open MPI's: $(mpirun --version 2>&1 | head -n 1)"
    exit 77
fi
rm -rf "$work"
mkdir -p "$work"

# Every process of the job inherits this; after mpirun none may hold it.
mark="pmix_test.$$.$n"
# flitrun's variables, if this runs under it, must not reach the ranks.
unset FLIT_BOOT FLIT_RANK FLIT_SIZE FLIT_JOB_ID FLIT_JOB_KEY
# Sanitizer builds: libpmix's own leaks are suppressed (see lsan.supp).
here=$(cd "$(dirname "$0")" && pwd)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$here/lsan.supp"
LSAN_OPTIONS="$LSAN_OPTIONS:print_suppressions=0"
export ASAN_OPTIONS LSAN_OPTIONS

# As root mpirun wants --allow-run-as-root; N ranks may exceed the cores
# (--oversubscribe), and binding oversubscribed ranks to cores would slow
# them. The ranks never call MPI_Init, so no MPI transport is loaded.
# mpirun's --timeout ends a hung job (a run takes a few seconds);
# timeout(1) is the backstop. The shell in between records mpirun's pid
# (it names Open MPI's session directory).
rc=0
args="--size $n"
[ -z "$want" ] || args=abort
FLITTEST_PMIX_MARK=$mark FLIT_VERBOSE=1 \
    timeout -k 5 60 sh -c 'echo $$ >"$0" && exec "$@"' "$work/pid" \
    mpirun --allow-run-as-root --oversubscribe --bind-to none --timeout 45 \
    -x FLITTEST_PMIX_MARK -x FLIT_VERBOSE -x ASAN_OPTIONS -x LSAN_OPTIONS \
    -n "$n" "$prog" $args >"$work/out" 2>"$work/err" </dev/null || rc=$?
pid=$(cat "$work/pid")

fail() {
    echo "FAIL: $*"
    echo "---- stdout"; cat "$work/out"
    echo "---- stderr"; cat "$work/err"
    exit 1
}

# The job's processes, whatever their names (ranks, orted, prted): mpirun
# has returned, so none may remain. Zombies show an empty environment.
check_gone() {
    left=""
    for e in /proc/[0-9]*/environ; do
        if { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qx "FLITTEST_PMIX_MARK=$mark"; then
            p=${e#/proc/}
            left="$left ${p%/environ}($(cat /proc/${p%/environ}/comm 2>/dev/null))"
        fi
    done
    [ -z "$left" ] || fail "processes left behind:$left"
    for d in "${TMPDIR:-/tmp}"/ompi.*/pid.$pid; do
        [ ! -e "$d" ] || fail "Open MPI left its session directory $d"
    done
}

if [ -n "$want" ]; then
    [ $rc -eq "$want" ] || fail "mpirun -n $n exited with $rc, not MPI_Abort's $want"
    grep -q "rank $((n - 1)): MPI_Abort($want)" "$work/err" ||
        fail "rank $((n - 1)) did not say MPI_Abort($want)"
    check_gone
    echo "PASS: MPI_Abort($want) of rank $((n - 1)) of $n under mpirun: exit $rc"
    exit 0
fi
[ $rc -eq 0 ] || fail "mpirun -n $n exited with $rc"
ok=$(grep -c "^$name: rank [0-9]* of $n OK" "$work/out" || true)
[ "$ok" -eq "$n" ] || fail "$ok of $n ranks said OK"
grep -q "^$name: launcher PMIx.*, $n ranks, no flitrun" "$work/out" ||
    fail "rank 0 did not report the PMIx launcher"
# flit_init's own word for it (FLIT_VERBOSE), where the program calls it.
if [ "$name" = pmix_am ]; then
    grep -q "flit\[0\] info: .*$n ranks on 1 host(s), launcher pmix" "$work/err" ||
        fail "flit did not say it used the pmix launcher"
fi
# flit may only inform; what the launcher says (Open MPI's notices, which
# depend on the machine) is shown, not judged.
if grep -Eq "^flit(\[[0-9]+\])? (error|warning):" "$work/err"; then
    fail "flit reported a problem"
fi
if grep -Ev "^flit\[[0-9]+\] (info|debug):|^  " "$work/err" | grep -q .; then
    echo "NOTE: other output on stderr:"
    grep -Ev "^flit\[[0-9]+\] (info|debug):|^  " "$work/err" | head -n 20
fi

check_gone
echo "PASS: $n ranks under mpirun, launcher pmix, nothing left behind"
cat "$work/out"
