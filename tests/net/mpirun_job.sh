#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A flit job started by Open MPI's mpirun across the test network's hosts
# (run by `netns.sh run`, FLITNET_* set), as a cluster's users start one:
# mpirun in host 0 reaches every host through its rsh agent (here a script
# that enters the host's namespaces instead of ssh), its daemons start the
# ranks, and flit boots from PMIx. RANKS ranks over the hosts, RANKS / hosts
# a host (shared memory inside, UDP between), do mp_scale --mode job: a
# barrier, a ring exchange with both neighbours and an 8-byte all-to-all
# with every byte checked.
#
#   mpirun_job.sh PMIX MP_SCALE RANKS
#
# PMIX "-": flit was built without PMIx, and the test skips.
#
# Each host gets a hostname of its own (a UTS namespace; Open MPI takes
# ranks with one hostname for one node, and would have them share memory
# across hosts): hosts_lib.sh's mpirun_agent. Exit 0 pass, 1 fail, 77 skip.
set -u

SCALE=$2
RANKS=$3
FAILS=0
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/net/hosts_lib.sh disable=SC1091
. "$(dirname "$0")/hosts_lib.sh"

if [ "$1" = - ]; then
  echo "SKIP: flit built without PMIx (FLIT_WITH_PMIX=OFF; Debian: libpmix-dev)"
  exit 77
fi
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun not installed (Debian: openmpi-bin)"; exit 77; }
mpirun --version 2>&1 | grep -q "Open MPI" ||
  { echo "SKIP: this mpirun is not Open MPI's"; exit 77; }
command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not found (Debian: util-linux)"; exit 77; }
unshare --ipc --uts true 2>/dev/null || { echo "SKIP: unshare --ipc --uts refused here"; exit 77; }

mpirun_agent "$TMP" "$FLITNET_HOSTS" $((RANKS / FLITNET_HOSTS))

# flitrun's variables, if this runs under it, must not reach the ranks.
unset FLIT_BOOT FLIT_RANK FLIT_SIZE FLIT_JOB_ID FLIT_JOB_KEY
start=$(date +%s.%N)
rc=0
# --timeout ends a hung job; timeout(1) is the backstop.
timeout -k 5 "${JOB_TIMEOUT:-120}" ip netns exec "$FLITNET_NS0" \
  mpirun --allow-run-as-root --oversubscribe --bind-to none \
  --timeout "$((${JOB_TIMEOUT:-120} - 10))" \
  --mca plm_rsh_agent "$TMP/agent" --mca plm_rsh_no_tree_spawn 1 \
  --host "$MPIRUN_HOSTS" -n "$RANKS" "$SCALE" --mode job --count 20 \
  >"$TMP/out" 2>"$TMP/err" </dev/null || rc=$?
end=$(date +%s.%N)

[ "$rc" -eq 0 ] || fail "mpirun exited $rc"
grep -qE "^job: $RANKS ranks: barrier, [0-9]+ messages each way with both neighbours, 8-byte all-to-all: every byte checked$" "$TMP/out" ||
  fail "out lacks 'job: $RANKS ranks: barrier, N messages each way ...: every byte checked'"
expect_in "$TMP/out" "scale job: OK"
calls=$(sort -u "$TMP/calls" 2>/dev/null | wc -l)
[ "$calls" -eq "$FLITNET_HOSTS" ] ||
  fail "mpirun's agent entered $calls hosts, not $FLITNET_HOSTS"
check_hosts_empty
if [ "$FAILS" -gt 0 ]; then
  echo "--- agent calls:" >&2
  sort "$TMP/calls" 2>/dev/null | uniq -c >&2
  echo "--- mpirun's stdout (tail):" >&2
  tail -20 "$TMP/out" >&2
  echo "--- mpirun's stderr (tail):" >&2
  tail -40 "$TMP/err" >&2
  exit 1
fi
echo "$RANKS ranks on $FLITNET_HOSTS hosts under mpirun ($calls entered by its agent): $(echo "$end - $start" | bc) s start to end"
cat "$TMP/out"
echo "PASS: mpirun job"
