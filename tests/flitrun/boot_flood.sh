#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# boot_flood.sh FLITRUN BOOT_FLOOD HELLO: strangers at flitrun's boot port
# while the job starts must not keep its ranks out. Each rank is started
# behind boot_flood, which first opens idle connections, garbage-sending
# ones, HELLOs that never end, and a HELLO naming the rank without the
# job's key (an impostor, before the real rank), and keeps them all open
# while the rank runs. The job (examples/hello) must still pass, with every
# rank answered; flitrun tells each kind of refusal once and counts them
# all. Over TCP on loopback and on the abstract unix socket (strangers of
# the same user); and over TCP flitrun listens only on the address it was
# asked for: 127.0.0.2 at the same port is refused.
set -u
FLITRUN=$1
FLOOD=$2
HELLO=$3
NP=3
FAILS=0
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }

# run NAME FLITRUN-OPTIONS... -- FLOOD-OPTIONS...: the job passes; with
# strangers, each kind of refusal is told once (6 kinds) and all counted.
run() {
  local name=$1 rc answered told before=$FAILS
  shift
  local -a fr=()
  while [ "$1" != -- ]; do fr+=("$1"); shift; done
  shift
  "$FLITRUN" -n $NP --timeout 100 "${fr[@]}" "$FLOOD" "$@" -- "$HELLO" \
    >"$TMP/out" 2>"$TMP/err"
  rc=$?
  answered=$(grep -c answered "$TMP/out")
  told=$(grep -c "rejected a connection" "$TMP/err")
  [ "$rc" -eq 0 ] || fail "$name: flitrun exited $rc"
  [ "$answered" -eq $NP ] || fail "$name: $answered of $NP ranks answered"
  ! grep -q "unknown variable" "$TMP/err" || fail "$name: the library does not know a variable flitrun set"
  if [ "$name" != bound ]; then
    [ "$told" -ge 1 ] && [ "$told" -le 6 ] || fail "$name: $told refusals told one by one"
    grep -q "connections in all that did not prove they were this job's" "$TMP/err" ||
      fail "$name: no count of the refused connections"
  fi
  if [ "$FAILS" -gt "$before" ]; then
    echo "--- $name: stdout" >&2; cat "$TMP/out" >&2
    echo "--- $name: stderr" >&2; head -c 8000 "$TMP/err" >&2
  else
    echo "ok: $name $(grep "in all" "$TMP/err")"
  fi
}

FLOOD_OPTS=(--idle 60 --garbage 10 --slow 4 --impostor)
run tcp --boot-addr 127.0.0.1 -- "${FLOOD_OPTS[@]}"
run unix -- "${FLOOD_OPTS[@]}"
run bound --boot-addr 127.0.0.1 -- --refused-at 127.0.0.2
[ "$FAILS" -eq 0 ] || exit 1
echo "PASS: boot_flood"
