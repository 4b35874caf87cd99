#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# flitrun's host proxies, on the test network (run by `netns.sh run`,
# FLITNET_* set): flitrun in host 0 runs a job of RANKS ranks over all the
# hosts, through a --launch template that logs each call before it runs
# `ip netns exec HOST unshare --ipc` (so the ranks of a host share memory,
# and hosts talk UDP).
#
#   proxy_checks.sh CASE FLITRUN MP_SCALE RANKS
#
#   job    the ranks do a barrier, a ring exchange with both neighbours and
#          an 8-byte all-to-all with every byte checked (mp_scale --mode
#          job); flitrun made one launcher call per host, not one per rank
#   kill   the proxy of the last host is killed (SIGKILL) by one of its
#          ranks while the others wait in flit_init's exchange: flitrun
#          names that host, stops the others and exits 137
#
# Each case ends with no process left in any host. Exit 0 pass, 1 fail,
# 77 skip.
set -u

CASE=$1
FLITRUN=$2
SCALE=$3
RANKS=$4
FAILS=0
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/net/hosts_lib.sh disable=SC1091
. "$(dirname "$0")/hosts_lib.sh"

command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not found (Debian: util-linux)"; exit 77; }

# The launcher: logs the host, then starts the command there; stdin (the
# job's key, then rank 0's input) passes on.
cat >"$TMP/launch" <<'SH'
#!/bin/sh
log=$1 host=$2
shift 2
echo "$host" >>"$log"
exec ip netns exec "$host" unshare --ipc "$@"
SH
chmod +x "$TMP/launch"

run_flitrun() { # RC [program args]
  local want=$1 rc
  shift
  ip netns exec "$FLITNET_NS0" "$FLITRUN" -n "$RANKS" --hosts "$FLITNET_NSLIST" \
    --launch "$TMP/launch $TMP/calls {host}" --timeout 40 "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  [ "$rc" -eq "$want" ] || fail "flitrun exited $rc, not $want"
}

case_job() {
  local start end
  start=$(date +%s.%N)
  run_flitrun 0 "$SCALE" --mode job --count 20
  end=$(date +%s.%N)
  # the count is the program's after FLITTEST_SCALE (sanitizer builds: fewer)
  grep -qE "^job: $RANKS ranks: barrier, [0-9]+ messages each way with both neighbours, 8-byte all-to-all: every byte checked$" "$TMP/out" ||
    fail "out lacks 'job: $RANKS ranks: barrier, N messages each way ...: every byte checked'"
  expect_in "$TMP/out" "scale job: OK"
  local calls
  calls=$(wc -l <"$TMP/calls")
  [ "$calls" -eq "$FLITNET_HOSTS" ] ||
    fail "flitrun made $calls launcher calls for $FLITNET_HOSTS hosts"
  echo "$RANKS ranks on $FLITNET_HOSTS hosts: $calls launcher calls, $(echo "$end - $start" | bc) s start to end"
}

case_kill() {
  local last=$((FLITNET_HOSTS - 1)) ns
  ns=FLITNET_NS$last
  # the last rank is on the last host (block placement): it kills its
  # proxy, its parent, before it calls flit_init; the others wait there
  run_flitrun 137 sh -c "if [ \"\$FLIT_RANK\" = $((RANKS - 1)) ]; then kill -KILL \$PPID; exec sleep 30; fi; exec $SCALE --mode job --count 20"
  expect_in "$TMP/err" "flitrun: the proxy on ${!ns} (pid "
  expect_in "$TMP/err" ") was killed by signal 9 (SIGKILL); "
}

"case_$CASE"
check_hosts_empty
if [ "$FAILS" -gt 0 ]; then
  echo "--- launcher calls:" >&2
  sort "$TMP/calls" | uniq -c >&2
  echo "--- flitrun's stdout (tail):" >&2
  tail -20 "$TMP/out" >&2
  echo "--- flitrun's stderr (tail):" >&2
  tail -40 "$TMP/err" >&2
  exit 1
fi
echo "PASS: $CASE"
