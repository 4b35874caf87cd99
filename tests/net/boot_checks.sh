#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# flitrun's boot port across hosts, on the test network (run by `netns.sh
# run`, FLITNET_* set): flitrun runs in host 0 and starts one rank in each
# host with `--launch 'ip netns exec {host} unshare --ipc boot_flood ...'`.
# Before its rank, boot_flood opens 60 idle connections to flitrun's port
# from that host, 10 that send garbage, 4 HELLOs that never end and one
# HELLO naming the rank without the job's key, and keeps them open while
# the rank runs; it also checks that the port is refused at 127.0.0.1
# (flitrun, given no --boot-addr, listens only on host 0's address on the
# route to the other hosts, not on every interface: in host 0 this is the
# check, elsewhere it holds trivially).
#
#   boot_checks.sh FLITRUN BOOT_FLOOD HELLO
#
# The job (examples/hello) must pass with every rank answered, refusals
# told once a kind and counted, and no process left in any host. Exit 0
# pass, 1 fail, 77 skip.
set -u
FLITRUN=$1
FLOOD=$2
HELLO=$3
FAILS=0
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/net/hosts_lib.sh disable=SC1091
. "$(dirname "$0")/hosts_lib.sh"

command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not found (Debian: util-linux)"; exit 77; }

ip netns exec "$FLITNET_NS0" "$FLITRUN" -n "$FLITNET_HOSTS" --hosts "$FLITNET_NSLIST" \
  --launch "ip netns exec {host} unshare --ipc $FLOOD --idle 60 --garbage 10 --slow 4 --impostor --refused-at 127.0.0.1 --" \
  --timeout 80 "$HELLO" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 0 ] || fail "flitrun exited $rc"
answered=$(grep -c answered "$TMP/out")
[ "$answered" -eq "$FLITNET_HOSTS" ] || fail "$answered of $FLITNET_HOSTS ranks answered"
told=$(grep -c "rejected a connection" "$TMP/err")
[ "$told" -ge 1 ] && [ "$told" -le 6 ] || fail "$told refusals told one by one"
grep -q "connections in all that did not prove they were this job's" "$TMP/err" ||
  fail "no count of the refused connections"
check_hosts_empty
if [ "$FAILS" -gt 0 ]; then
  echo "--- flitrun's stdout:" >&2; cat "$TMP/out" >&2
  echo "--- flitrun's stderr:" >&2; head -c 8000 "$TMP/err" >&2
  exit 1
fi
grep "in all" "$TMP/err"
echo "PASS: boot_checks"
