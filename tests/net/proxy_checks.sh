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
#   cut    once the job is past its first barrier, the last host's link is
#          cut (nftables drops every frame its eth0 sends or receives,
#          as a pulled cable): after FLIT_PEER_TIMEOUT its peers give its
#          ranks up, and flitrun its proxy; the job ends (1) saying which
#          noticed first (a rank: the rank that went down; flitrun: the
#          host), and no process is left anywhere, not even behind the cut
#   cut_boot  the last host's ranks start but never call flit_init (they
#          sleep), and its link is cut once one of them runs: the job
#          waits in the boot exchange, and only flitrun's connection to
#          that host's proxy can tell it the host is gone. flitrun gives
#          the proxy up after FLIT_PEER_TIMEOUT of silence (TCP keep-alive
#          and user timeout), names the host and ends the job, well before
#          its --timeout
#   cut_boot_direct  the same with --no-proxy: the ranks of the last host
#          connect to flitrun themselves, and flitrun gives up the one
#          that did, naming it and its host
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
    --launch "$TMP/launch $TMP/calls {host}" --timeout "${JOB_TIMEOUT:-40}" "$@" \
    >"$TMP/out" 2>"$TMP/err"
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

# Every frame in or out of host I's eth0 dropped from now on.
cut_host() {
  local ns=FLITNET_NS$1
  ip netns exec "${!ns}" nft -f - <<NFT
table netdev flitcut {
  chain in { type filter hook ingress device eth0 priority -500; policy drop; }
  chain out { type filter hook egress device eth0 priority -500; policy drop; }
}
NFT
}

# cut_job WHEN [program args]: runs the job in the background with
# FLIT_PEER_TIMEOUT=2, waits for the file WHEN (a handshake: the job got
# there) and, when SAID is set, for flitrun's stderr to hold SAID, cuts the
# last host's link, touches $TMP/go and waits for flitrun; sets RC and TOOK
# (seconds from start to end).
cut_job() {
  local when=$1 last=$((FLITNET_HOSTS - 1)) i start job
  shift
  command -v nft >/dev/null 2>&1 || { echo "SKIP: nft not found (Debian: nftables)"; exit 77; }
  start=$(date +%s)
  # shellcheck disable=SC2086 # FLITRUN_OPTS: words
  FLIT_PEER_TIMEOUT=2 ip netns exec "$FLITNET_NS0" "$FLITRUN" -n "$RANKS" \
    --hosts "$FLITNET_NSLIST" --launch "$TMP/launch $TMP/calls {host}" --timeout 40 \
    ${FLITRUN_OPTS:-} "$@" >"$TMP/out" 2>"$TMP/err" &
  job=$!
  for ((i = 0; i < 400; i++)); do
    [ -e "$when" ] && { [ -z "${SAID:-}" ] || grep -qF "$SAID" "$TMP/err"; } && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  [ -e "$when" ] || fail "the job never got as far as $(basename "$when")"
  [ -z "${SAID:-}" ] || grep -qF "$SAID" "$TMP/err" || fail "flitrun never said '$SAID'"
  cut_host "$last" || fail "could not cut host $last's link"
  touch "$TMP/go"
  wait "$job"
  RC=$?
  TOOK=$(($(date +%s) - start))
  echo "flitrun exited $RC $TOOK s after its start"
}

case_cut() {
  local ns=FLITNET_NS$((FLITNET_HOSTS - 1))
  # go.ready: rank 0 is past the first barrier, and every rank waits for go
  cut_job "$TMP/go.ready" "$SCALE" --mode job --count 20 --hold "$TMP/go"
  # whichever notices first, flitrun (the proxy's connection) or a rank
  # (its channel to a rank there), says so plainly: no abort, no --timeout
  [ "$RC" -eq 1 ] || fail "flitrun exited $RC, not 1, with a host cut off"
  grep -qE "flitrun: lost contact with the proxy on ${!ns}:| went down \(" "$TMP/err" ||
    fail "err says neither that flitrun lost contact with ${!ns} nor that a rank went down"
}

case_cut_boot() {
  local ns=FLITNET_NS$((FLITNET_HOSTS - 1))
  # started: the last rank runs (so its proxy said PROXY), and sleeps
  cut_job "$TMP/started" sh -c "if [ \"\$FLIT_RANK\" = $((RANKS - 1)) ]; then touch $TMP/started; exec sleep 60; fi; exec $SCALE --mode job --count 20"
  [ "$RC" -ne 0 ] || fail "flitrun exited 0 with a host cut off"
  [ "$RC" -ne 124 ] || fail "flitrun waited for its --timeout: it never noticed the cut"
  [ "$TOOK" -lt 30 ] || fail "flitrun took $TOOK s to notice the cut"
  expect_in "$TMP/err" "flitrun: lost contact with ${WHO:-the proxy on} ${!ns}"
}

case_cut_boot_direct() {
  # block placement: the last host's other rank is the one before the last;
  # the cut waits until flitrun has its HELLO (-v says so), else it may
  # land while that rank waits for flitrun's answer, and the rank, which
  # gives flitrun up after the same FLIT_PEER_TIMEOUT, may exit first
  FLITRUN_OPTS="--no-proxy -v" SAID="rank $((RANKS - 2)) (pid " \
    WHO="rank $((RANKS - 2)) on" case_cut_boot
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
