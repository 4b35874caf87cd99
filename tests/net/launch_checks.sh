#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# flitrun across hosts, on the test network (run by `netns.sh run`, FLITNET_*
# set): flitrun runs in host 0 and starts one rank in each host with
# `--launch 'ip netns exec {host} ...'`, so the ranks reach it over TCP.
#
#   launch_checks.sh CASE FLITRUN LAUNCH_RANK AM_ALL
#
#   udp        a real job (AM_ALL) across the hosts: each rank has an IPC
#              namespace of its own (`unshare --ipc`), so the library sees
#              three hosts and picks UDP between them (FLIT_VERBOSE=1 shows
#              "-> udp" for every peer, at the peer's address on its host)
#   pdeathsig  flitrun killed (SIGKILL): the ranks, which `ip netns exec`
#              became, die of the death signal flitrun set before that exec
#   tie        the same, but through a launcher that forks and leaves
#              flitrun's process group (`setsid -w -f`, as ssh would): no
#              death signal reaches the rank; it ends itself when its TCP
#              connection to flitrun breaks
#   stop       the job stopped by flitrun (--timeout) through that launcher:
#              flitrun stops the launchers, and the ranks end when flitrun
#              closes their connections
#
# Each case ends with no process left in any host. Exit 0 pass, 1 fail,
# 77 skip.
# shellcheck disable=SC2317 # functions run indirectly: case_$CASE, wait_for
# shellcheck disable=SC2016 # the sh -c script expands its own variables
set -u

CASE=$1
FLITRUN=$2
RANK=$3
AM_ALL=$4
FAILS=0
TMP=$(mktemp -d) || exit 1
FLITRUN_PID=

# shellcheck source=tests/net/hosts_lib.sh disable=SC1091
. "$(dirname "$0")/hosts_lib.sh"

cleanup() {
  [ -n "$FLITRUN_PID" ] && kill -KILL "$FLITRUN_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not found (Debian: util-linux)"; exit 77; }

# Poll for a condition, at most ~10 s.
wait_for() {
  local i
  for ((i = 0; i < 100; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

hosts_empty() { [ -z "$(host_pids)" ]; }

# Lines of FILE matching the fixed string PATTERN number at least COUNT.
lines_at_least() { [ "$(grep -cF -- "$2" "$1")" -ge "$3" ]; }

check_hosts_empty() {
  if ! wait_for hosts_empty; then
    fail "processes left in the hosts: $(host_pids | tr '\n' ' ')"
    ps -o pid,ppid,pgid,sid,comm -p "$(host_pids | paste -sd,)" >&2
  fi
}

# flitrun in host 0, in the background; stdout and stderr to files.
start_flitrun() {
  ip netns exec "$FLITNET_NS0" "$FLITRUN" "$@" >"$TMP/out" 2>"$TMP/err" &
  FLITRUN_PID=$!
}

finish() {
  if [ "$FAILS" -gt 0 ]; then
    echo "--- flitrun's stdout:" >&2
    cat "$TMP/out" >&2
    echo "--- flitrun's stderr:" >&2
    cat "$TMP/err" >&2
    exit 1
  fi
  echo "PASS: $CASE"
  exit 0
}

case_udp() {
  local rc r p ns addr
  FLIT_VERBOSE=1 ip netns exec "$FLITNET_NS0" "$FLITRUN" -n "$FLITNET_HOSTS" \
    --hosts "$FLITNET_NSLIST" --launch 'ip netns exec {host} unshare --ipc' \
    --timeout 80 "$AM_ALL" --max-long 1048576 >"$TMP/out" 2>"$TMP/err"
  rc=$?
  [ "$rc" -eq 0 ] || fail "flitrun exited $rc"
  expect_in "$TMP/err" "flitrun: boot address tcp:$FLITNET_ADDR0:"
  expect_in "$TMP/err" "$FLITNET_HOSTS ranks on $FLITNET_HOSTS host(s), launcher flitrun"
  for ((r = 0; r < FLITNET_HOSTS; r++)); do
    ns=FLITNET_NS$r
    addr=FLITNET_ADDR$r
    # the job's key comes on stdin, read by sh -c, never on the command line
    expect_in "$TMP/err" "flitrun: rank $r -> ${!ns}: ip netns exec ${!ns} unshare --ipc sh -c read -r FLIT_JOB_KEY && export FLIT_JOB_KEY && exec \"\$@\" sh env "
    expect_in "$TMP/err" " on ${!ns}) connected from ${!addr}:"
    for ((p = 0; p < FLITNET_HOSTS; p++)); do
      addr=FLITNET_ADDR$p
      if [ "$p" -eq "$r" ]; then
        expect_in "$TMP/err" "flit[$r] info: endpoint 0: rank $p -> self"
      else
        expect_in "$TMP/err" "flit[$r] info: endpoint 0: rank $p -> udp: udp ${!addr}:"
      fi
    done
  done
  check_hosts_empty
}

case_pdeathsig() {
  start_flitrun -n "$FLITNET_HOSTS" --hosts "$FLITNET_NSLIST" \
    --launch 'ip netns exec {host} unshare --ipc' \
    sh -c 'echo "ready $FLIT_RANK"; exec sleep 1000'
  wait_for lines_at_least "$TMP/out" ready "$FLITNET_HOSTS" || fail "the ranks did not start"
  kill -KILL "$FLITRUN_PID"
  wait "$FLITRUN_PID" 2>/dev/null
  FLITRUN_PID=
  check_hosts_empty
}

case_tie() {
  # The ranks' own stderr: flitrun, which relays it, is killed here.
  export LAUNCH_RANK_STDERR="$TMP/rank-err"
  start_flitrun -n "$FLITNET_HOSTS" --hosts "$FLITNET_NSLIST" \
    --launch 'ip netns exec {host} unshare --ipc setsid -w -f' "$RANK"
  wait_for lines_at_least "$TMP/out" ready 1 || fail "the ranks did not start"
  kill -KILL "$FLITRUN_PID"
  wait "$FLITRUN_PID" 2>/dev/null
  FLITRUN_PID=
  check_hosts_empty
  expect_in "$TMP/rank-err" "lost the connection to flitrun at tcp:$FLITNET_ADDR0:"
}

case_stop() {
  local rc
  ip netns exec "$FLITNET_NS0" "$FLITRUN" -n "$FLITNET_HOSTS" --hosts "$FLITNET_NSLIST" \
    --launch 'ip netns exec {host} unshare --ipc setsid -w -f' --timeout 3 \
    "$RANK" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  [ "$rc" -eq 124 ] || fail "flitrun exited $rc, not 124"
  expect_in "$TMP/out" "ready"
  expect_in "$TMP/err" "flitrun: job timed out after 3 s; stopping it"
  check_hosts_empty
}

case $CASE in
  tie | stop)
    command -v setsid >/dev/null 2>&1 ||
      { echo "SKIP: setsid not found (Debian: util-linux)"; exit 77; }
    "case_$CASE"
    ;;
  udp | pdeathsig) "case_$CASE" ;;
  *) echo "launch_checks.sh: no case '$CASE'" >&2; exit 2 ;;
esac
finish
