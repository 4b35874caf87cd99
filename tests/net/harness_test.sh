#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Tests of netns.sh itself: what it builds, that `up` is idempotent, that
# `exec` lands in the right host, that `down`, `run` (on exit, timeout and
# SIGTERM) and `gc` (after SIGKILL) leave nothing behind, and that it skips
# (77) where it cannot work.
#
#   harness_test.sh NETNS_SH PREFIX
#
# Exit 0 pass, 1 fail, 77 skip (ip or nft missing, not root, or no
# namespaces here).
# shellcheck disable=SC2016 # the sh -c scripts expand their own variables
set -u

NETNS=$1
P=$2
FAILS=0
TMP=$(mktemp -d) || exit 1

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
note() { echo "-- $*"; }

cleanup() {
  "$NETNS" down "$P" >/dev/null 2>&1
  "$NETNS" down "$P-run" >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT

ns_exists() { [ -e "/run/netns/$1" ]; }

# Poll for a condition, at most ~10 s; never a bare sleep for readiness.
wait_for() {
  local i
  for ((i = 0; i < 100; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

gone() {
  local ns
  for ns in "$1-sw" "$1-h0" "$1-h1" "$1-h2"; do
    ns_exists "$ns" && return 1
  done
  [ ! -e "/run/flitnet/$1.env" ]
}

check_skip() {
  note "skip as non-root"
  if ! command -v setpriv >/dev/null 2>&1; then
    :
  elif ! setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$NETNS"; then
    # (a tree under a private directory, as mktemp -d makes: nobody may
    # not even read the script, which proves nothing about it)
    note "not checked: user 65534 cannot read $NETNS"
  else
    setpriv --reuid=65534 --regid=65534 --clear-groups "$NETNS" up "$P" 2 2>/dev/null
    [ $? -eq 77 ] || fail "non-root up did not exit 77"
  fi
  note "skip without CAP_SYS_ADMIN (as in an unprivileged container)"
  if command -v setpriv >/dev/null 2>&1; then
    setpriv --bounding-set=-sys_admin "$NETNS" up "$P" 2 2>/dev/null
    [ $? -eq 77 ] || fail "up without CAP_SYS_ADMIN did not exit 77"
    gone "$P" || fail "refused up left something behind"
  fi
}

check_shape() {
  local i ns addr
  note "up $P 3"
  "$NETNS" up "$P" 3 || { fail "up"; return; }
  ns_exists "$P-sw" || fail "no $P-sw"
  for i in 0 1 2; do
    ns="$P-h$i"
    ns_exists "$ns" || { fail "no $ns"; continue; }
    addr=$(ip -n "$ns" -4 -o addr show dev eth0 | awk '{print $4}')
    [ "$addr" = "$(sed -n "s/^FLITNET_ADDR$i=//p" "/run/flitnet/$P.env")/24" ] ||
      fail "$ns eth0 address '$addr'"
    ip -n "$ns" link show lo | grep -q 'state UNKNOWN\|state UP' || fail "$ns lo down"
    ip -n "$ns" link show eth0 | grep -q 'mtu 1500 ' || fail "$ns eth0 MTU not 1500"
    [ -z "$(ip -n "$ns" -6 addr show)" ] || fail "$ns has IPv6 addresses"
  done
  [ "$(ip -n "$P-sw" -o link show master br0 | wc -l)" -eq 3 ] || fail "br0 has not 3 ports"
}

check_idempotent() {
  note "up again, then with 2 hosts"
  "$NETNS" up "$P" 3 || fail "second up"
  ns_exists "$P-h2" || fail "second up lost h2"
  "$NETNS" up "$P" 2 --mtu 9000 || fail "up with 2 hosts"
  ns_exists "$P-h2" && fail "h2 still there after up with 2 hosts"
  ip -n "$P-h1" link show eth0 | grep -q 'mtu 9000 ' || fail "--mtu 9000 not applied"
  "$NETNS" up "$P" 3 || fail "up back to 3 hosts"
}

check_exec() {
  local got
  note "exec lands in the host"
  got=$("$NETNS" exec "$P" 1 -- ip -4 -o addr show dev eth0 | awk '{print $4}')
  [ "${got%/24}" = "$(sed -n 's/^FLITNET_ADDR1=//p' "/run/flitnet/$P.env")" ] ||
    fail "exec in host 1 saw '$got'"
  "$NETNS" exec "$P" 0 sh -c 'exit 5'
  [ $? -eq 5 ] || fail "exec did not pass the exit status"
}

# `down` kills what runs inside, even what ignores SIGTERM. Each sleeper
# writes its pid before it turns into sleep: that is the readiness signal.
check_down() {
  note "down kills processes inside"
  "$NETNS" exec "$P" 0 sh -c 'echo $$ >"$0"; exec sleep 1000' "$TMP/pid0" &
  "$NETNS" exec "$P" 2 sh -c 'trap "" TERM; echo $$ >"$0"; exec sleep 1000' "$TMP/pid2" &
  wait_for test -s "$TMP/pid0" || fail "process in h0 never started"
  wait_for test -s "$TMP/pid2" || fail "process in h2 never started"
  exec 3>&2 2>/dev/null # bash's "Killed" notice for the sleepers
  "$NETNS" down "$P" 2>&3 || fail "down"
  wait # returns only once both sleepers are dead
  exec 2>&3 3>&-
  gone "$P" || fail "namespaces or state left after down"
  "$NETNS" down "$P" || fail "down of nothing"
}

check_run_env() {
  note "run: environment, exit status, teardown"
  "$NETNS" run "$P-run" 2 --loss 5 -- sh -c '
    [ "$FLITNET_PREFIX" = "'"$P-run"'" ] && [ "$FLITNET_HOSTS" = 2 ] &&
    [ "$FLITNET_NS1" = "'"$P-run"'-h1" ] && [ -e "/run/netns/$FLITNET_NS0" ] &&
    [ "$FLITNET_NSLIST" = "$FLITNET_NS0,$FLITNET_NS1" ] &&
    [ "$FLITNET_ADDRLIST" = "$FLITNET_ADDR0,$FLITNET_ADDR1" ] &&
    [ "$FLITNET_LOSS" = 5 ] && [ "$FLITNET_MTU" = 1500 ] && [ -x "$FLITNET_SH" ] &&
    ip netns exec "$FLITNET_NS1" ip -4 -o addr | grep -q "$FLITNET_ADDR1/24" || exit 9
    exit 3'
  [ $? -eq 3 ] || fail "run: wrong environment or exit status"
  gone "$P-run" || fail "run left something behind"
  "$NETNS" run "$P-run" 1 -- sh -c 'exit 77'
  [ $? -eq 77 ] || fail "run did not pass 77 through"
}

check_run_timeout() {
  note "run --timeout"
  "$NETNS" run "$P-run" 2 --timeout 1 -- "$NETNS" exec "$P-run" 1 sleep 100 2>/dev/null
  [ $? -eq 1 ] || fail "run --timeout: exit status not 1"
  gone "$P-run" || fail "run --timeout left something behind"
}

# The command sleeps inside host 0 and writes its pid when it is there.
run_sleeper() {
  rm -f "$TMP/pid"
  "$NETNS" run "$P-run" 2 -- "$NETNS" exec "$P-run" 0 \
    sh -c 'echo $$ >"$0"; exec sleep 100' "$TMP/pid" &
  RUN_PID=$!
  wait_for test -s "$TMP/pid" || fail "run never started its command"
}

check_run_signal() {
  note "run killed by SIGTERM tears down"
  run_sleeper
  kill -TERM "$RUN_PID"
  wait "$RUN_PID"
  [ $? -eq 143 ] || fail "run on SIGTERM: exit status not 143"
  gone "$P-run" || fail "run on SIGTERM left something behind"
  kill -0 "$(cat "$TMP/pid")" 2>/dev/null && fail "run on SIGTERM left its command"

  note "run killed by SIGKILL (CTest's timeout): gc tears down"
  run_sleeper
  kill -KILL "$RUN_PID"
  wait "$RUN_PID" 2>/dev/null
  ns_exists "$P-run-h0" || fail "SIGKILL: expected leftovers for gc"
  "$NETNS" gc 2>/dev/null
  gone "$P-run" || fail "gc left something behind"
  kill -0 "$(cat "$TMP/pid")" 2>/dev/null && fail "gc left the command running"
}

main() {
  # What the checks use (the runs with --loss need nft), named before
  # anything else: a missing tool is a skip, never a failure.
  command -v ip >/dev/null 2>&1 || { echo "SKIP: ip not found (Debian: iproute2)" >&2; exit 77; }
  command -v nft >/dev/null 2>&1 || { echo "SKIP: nft not found (Debian: nftables)" >&2; exit 77; }
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root" >&2; exit 77; }
  "$NETNS" up "$P" 1 >/dev/null 2>&1
  case $? in
    0) "$NETNS" down "$P" ;;
    77) echo "SKIP: no network namespaces here" >&2; exit 77 ;;
    *) echo "FAIL: up of one host" >&2; exit 1 ;;
  esac
  check_skip
  check_shape
  check_idempotent
  check_exec
  check_down
  check_run_env
  check_run_timeout
  check_run_signal
  [ "$FAILS" -eq 0 ] || { echo "$FAILS failure(s)" >&2; exit 1; }
  echo "all passed"
}

main
