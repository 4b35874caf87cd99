#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# slurm_run.sh CLUSTER_DIR CASE ARGS...
# One slurm_* test on the cluster cluster.sh started in CLUSTER_DIR (the
# CTest fixture); skipped (77) when it is not up. Every srun runs under a
# time limit, with a mark in its environment: once it returns, no process
# of the job may remain.
#
#   steps MPI PROG ARGS   PROG under srun --mpi=MPI with 1, 2, 4 and 8 tasks
#                         (those in SLURM_TEST_SIZES when it is set):
#                         every task exits 0, flit says it used the MPI
#                         launcher (FLIT_VERBOSE) and reports no error (the
#                         RMA test provokes warnings on purpose).
#                         FLIT_TRANSPORT in the environment passes through.
#   nopmi PROG            srun without a PMI plugin, 4 tasks: every task
#                         fails flit_init with the clear error, and srun
#                         exits non-zero.
#   kill MPI PROG         PROG (slurm_die) kills its last task: the step
#                         ends non-zero within its time, no process left.
#   leave MPI PROG        PROG (mp_leave --at init): task 1 returns 0 after
#                         flit_init, before flit_ep_create; the others'
#                         flit_ep_create fails at once, naming rank 1 (PMIx:
#                         srun counts an exited task as at the fence, which
#                         answers PMIX_ERR_PARTIAL_SUCCESS; PMI-2: the ranks
#                         see rank 1's pid gone), well within the step's
#                         time.
#   abort MPI PROG        PROG (mpi_abort abort): its last task calls
#                         MPI_Abort(3) while task 0 waits in MPI_Recv for
#                         ever; the launcher's abort ends the step well
#                         within its time: PMIx_Abort with status 3 (not
#                         the 21 of a peer that saw the task gone), PMI-2's
#                         abort (it carries no status) by cancelling the
#                         step.
#   sbatch "MPIS" PROG    a batch script of 4 tasks that runs PROG under
#                         srun --mpi=M for each M in MPIS: every step and
#                         the job succeed.
#   flitrun FLITRUN PROG  flitrun -n 4 PROG inside an allocation (salloc).
#   pmixstore PROG        srun --mpi=pmix -n 2: flit reads the job's data
#                         through the server's socket (store "hash"), unless
#                         the user chose a store (PMIX_MCA_gds) or the step
#                         puts more than 16 tasks on the node.
set -u
dir=$1 case=$2
shift 2
if [ ! -s "$dir/env" ]; then
    echo "SKIP: the test cluster is not up (see the test slurm_cluster_start)"
    exit 77
fi
. "$dir/env"
work=$dir/work.$case.$$
mkdir -p "$work"
mark="slurm_run.$$"
export FLIT_VERBOSE=1
unset FLIT_BOOT FLIT_RANK FLIT_SIZE FLIT_JOB_ID FLIT_JOB_KEY

fail() {
    echo "FAIL: $*"
    for f in "$work"/out "$work"/err; do
        [ -f "$f" ] && { echo "---- $f"; tail -n 40 "$f"; }
    done
    exit 1
}

# The job's processes are gone (slurmstepd may take a moment to reap them).
check_gone() {
    i=0
    while :; do
        # One grep over every environment: a loop of processes per
        # process takes a minute on a loaded machine.
        left=$(grep -lzx "FLITTEST_SLURM_MARK=$mark" /proc/[0-9]*/environ 2>/dev/null |
            sed 's|/proc/\([0-9]*\)/environ|\1|' | tr '\n' ' ')
        [ -z "$left" ] && return 0
        i=$((i + 1))
        [ $i -lt 100 ] || fail "processes left behind:$left"
        sleep 0.1
    done
}

# run LIMIT CMD...: rc of CMD, output in $work/out and $work/err.
run() {
    limit=$1
    shift
    rc=0
    t0=$(date +%s)
    # Only the job carries the mark, not this script's own helpers.
    env FLITTEST_SLURM_MARK="$mark" timeout -k 5 "$limit" "$@" >"$work/out" 2>"$work/err" \
        </dev/null || rc=$?
    check_gone
    # 124 and 137 are timeout's, or a task's SIGKILL that srun passes on.
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        [ $(($(date +%s) - t0)) -lt "$limit" ] || fail "$* did not end within $limit s"
    fi
}

no_flit_problem() {
    if grep -Eq "^flit(\[[0-9]+\])? error:" "$work/err"; then
        fail "flit reported a problem"
    fi
}

case $case in
steps)
    mpi=$1
    shift
    for n in ${SLURM_TEST_SIZES:-1 2 4 8}; do
        run 120 srun --mpi="$mpi" -n "$n" -t 2 "$@"
        [ $rc -eq 0 ] || fail "srun --mpi=$mpi -n $n exited with $rc"
        grep -q "flit\[0\] info: .*$n ranks on 1 host(s), launcher $mpi" "$work/err" ||
            fail "flit did not say it used the $mpi launcher with $n ranks"
        no_flit_problem
        echo "ok: srun --mpi=$mpi -n $n ${FLIT_TRANSPORT:+FLIT_TRANSPORT=$FLIT_TRANSPORT }$*"
    done
    ;;
nopmi)
    run 60 srun --mpi=none -n 4 -t 1 "$@"
    [ $rc -ne 0 ] || fail "srun without PMI exited 0"
    said=$(grep -c "flit error: this process was started as one of several tasks by Slurm's srun" "$work/err")
    [ "$said" -eq 4 ] || fail "$said of 4 tasks said why they cannot run"
    grep -q "srun --mpi=pmi2" "$work/err" || fail "flit did not say what to do"
    echo "ok: srun without PMI: exit $rc, every task said why"
    ;;
kill)
    mpi=$1
    shift
    start=$(date +%s)
    run 120 srun --mpi="$mpi" -n 4 -t 2 "$@"
    [ $rc -ne 0 ] || fail "the step with a killed task exited 0"
    echo "ok: srun --mpi=$mpi, a task killed: exit $rc after $(($(date +%s) - start)) s"
    ;;
abort)
    mpi=$1
    shift
    start=$(date +%s)
    run 120 srun --mpi="$mpi" -n 3 -t 2 "$@" abort
    took=$(($(date +%s) - start))
    [ $took -lt 30 ] || fail "the step took $took s: MPI_Abort did not end it"
    grep -q "rank 2: MPI_Abort(3)" "$work/err" || fail "no task said MPI_Abort(3)"
    if [ "$mpi" = pmix ]; then
        [ $rc -eq 3 ] || fail "srun exited $rc, not MPI_Abort's 3"
    else
        [ $rc -ne 0 ] || fail "the step whose task called MPI_Abort exited 0"
        grep -q "STEP [0-9.]* ON .* CANCELLED" "$work/err" ||
            fail "Slurm did not cancel the step: PMI-2's abort did not reach it"
    fi
    echo "ok: srun --mpi=$mpi, task 2 called MPI_Abort: exit $rc after $took s"
    ;;
leave)
    mpi=$1
    shift
    start=$(date +%s)
    run 120 srun --mpi="$mpi" -n 3 -t 2 "$@" --at init
    took=$(($(date +%s) - start))
    [ $rc -ne 0 ] || fail "the step whose task left early exited 0"
    [ $took -lt 30 ] || fail "the step took $took s: its tasks waited for the one that left"
    [ "$(grep -c "rank 1 left the job" "$work/err")" -ge 1 ] || fail "no task named rank 1"
    [ "$(grep -c "flit_ep_create: FLIT_ERR_" "$work/out")" -eq 2 ] ||
        fail "not both tasks that stayed got an error from flit_ep_create"
    echo "ok: srun --mpi=$mpi, task 1 left after flit_init: exit $rc after $took s"
    ;;
sbatch)
    mpis=$1
    shift
    echo "#!/bin/sh" >"$work/job.sh"
    steps=0
    for m in $mpis; do
        echo "srun --mpi=$m $* || exit 1" >>"$work/job.sh"
        steps=$((steps + 1))
    done
    run 120 sbatch -W -n 4 -t 2 -o "$work/job.out" "$work/job.sh"
    [ $rc -eq 0 ] || { cat "$work/job.out" >>"$work/err"; fail "sbatch -W exited $rc"; }
    got=$(grep -c "answered" "$work/job.out")
    [ "$got" -eq $((4 * steps)) ] ||
        { cat "$work/job.out" >>"$work/out"; fail "$got of $((4 * steps)) answers"; }
    echo "ok: sbatch, steps of 4 tasks under $mpis"
    ;;
flitrun)
    flitrun=$1
    shift
    run 120 salloc -n 4 -t 2 "$flitrun" -n 4 --timeout 60 "$@"
    [ $rc -eq 0 ] || fail "salloc flitrun -n 4 exited with $rc"
    got=$(grep -c "answered" "$work/out")
    [ "$got" -eq 4 ] || fail "$got of 4 answers"
    echo "ok: flitrun -n 4 inside an allocation"
    ;;
pmixstore)
    said="PMIx: the job's data through the server's socket (store hash)"
    run 60 env FLIT_VERBOSE=2 srun --mpi=pmix -n 2 -t 1 "$@"
    [ $rc -eq 0 ] || fail "srun --mpi=pmix -n 2 exited with $rc"
    [ "$(grep -c "$said" "$work/err")" -eq 2 ] || fail "not both tasks chose the store hash"
    run 60 env FLIT_VERBOSE=2 PMIX_MCA_gds=ds21,hash srun --mpi=pmix -n 2 -t 1 "$@"
    [ $rc -eq 0 ] || fail "srun --mpi=pmix -n 2 with PMIX_MCA_gds exited with $rc"
    ! grep -q "$said" "$work/err" || fail "flit overrode the user's PMIX_MCA_gds"
    run 60 env FLIT_VERBOSE=2 srun --mpi=pmix -O -n 17 -t 1 "$@"
    [ $rc -eq 0 ] || fail "srun --mpi=pmix -n 17 exited with $rc"
    ! grep -q "$said" "$work/err" || fail "flit chose the store hash for 17 tasks on a node"
    echo "ok: PMIx store hash for 2 tasks, not over the user's choice, not for 17"
    ;;
*)
    echo "unknown case $case" >&2
    exit 2
    ;;
esac
rm -rf "$work"
exit 0
