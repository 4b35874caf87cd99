#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A bad FLIT_* value is said once per job, with a status that names the
# environment (FLIT_ERR_CONFIG's text), never "NULL pointer":
#  1. flitrun -n 8 refuses it before starting any rank: one message naming
#     the variable, its value and what is allowed; exit status 2; no rank
#     ran (each would have left a line in a file first);
#  2. a rank started by hand (a job of one) says it once, and flit_init
#     answers "bad FLIT_* setting in the environment";
#  3. eight tasks of another launcher (SLURM_PROCID 0..7): task 0 alone
#     says it, every task fails flit_init.
# usage: bad_env.sh FLITRUN HELLO
set -u
flitrun=$1 hello=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "bad_env: $*"; exit 1; }
bad='FLIT_SHM_RING_KB="300"'

# 1. flitrun
FLIT_SHM_RING_KB=300 "$flitrun" -n 8 --timeout 30 \
    sh -c 'echo "$FLIT_RANK" >>"$0/started"; exec "$1"' "$dir" "$hello" \
    >"$dir/out" 2>"$dir/err"
rc=$?
[ "$rc" -ne 0 ] || fail "flitrun -n 8 with FLIT_SHM_RING_KB=300 exited 0"
[ "$rc" -eq 2 ] || fail "flitrun exited $rc, expected 2 (bad setting)"
[ ! -e "$dir/started" ] ||
    fail "flitrun started $(wc -l <"$dir/started") ranks despite the bad setting"
n=$(grep -c "$bad" "$dir/err")
[ "$n" -eq 1 ] || fail "flitrun said $bad $n times; stderr: $(cat "$dir/err")"
grep "$bad" "$dir/err" | grep -q "allowed" ||
    fail "flitrun's message does not say what is allowed: $(cat "$dir/err")"
! grep -q "NULL pointer" "$dir/err" || fail "blames an argument: $(cat "$dir/err")"

# 2. a job of one
env -u FLIT_BOOT -u FLIT_RANK -u FLIT_SIZE FLIT_SHM_RING_KB=300 "$hello" \
    >"$dir/out" 2>"$dir/err" && fail "hello with FLIT_SHM_RING_KB=300 exited 0"
n=$(grep -c "$bad" "$dir/err")
[ "$n" -eq 1 ] || fail "a singleton said $bad $n times; stderr: $(cat "$dir/err")"
grep -q "flit_init: bad FLIT_\* setting in the environment" "$dir/err" ||
    fail "flit_init did not answer FLIT_ERR_CONFIG: $(cat "$dir/err")"
! grep -q "NULL pointer" "$dir/err" || fail "blames an argument: $(cat "$dir/err")"

# 3. another launcher's eight tasks
for r in 0 1 2 3 4 5 6 7; do
    env -u FLIT_BOOT -u FLIT_RANK -u FLIT_SIZE SLURM_PROCID=$r SLURM_STEP_NUM_TASKS=8 \
        FLIT_SHM_RING_KB=300 "$hello" >>"$dir/out" 2>>"$dir/err3" &&
        fail "task $r of 8 exited 0"
done
n=$(grep -c "$bad" "$dir/err3")
[ "$n" -eq 1 ] || fail "eight tasks said $bad $n times; stderr: $(cat "$dir/err3")"
n=$(grep -c "flit_init: bad FLIT_\* setting" "$dir/err3")
[ "$n" -eq 8 ] || fail "$n of 8 tasks got FLIT_ERR_CONFIG: $(cat "$dir/err3")"
echo "bad_env: said once by flitrun (no rank started), once by a singleton, once by 8 tasks"
exit 0
