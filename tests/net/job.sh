#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A flit job across the hosts of the test network (run by `netns.sh run`,
# FLITNET_* set): flitrun in host 0 starts rank i in host i with
# `--launch 'ip netns exec {host} unshare --ipc'`, so every pair of ranks
# talks over UDP through the veth pairs, where the network's nftables rules
# drop or duplicate packets.
#
#   job.sh [--rc N] [--out TEXT]... [--err TEXT]... FLITRUN [flitrun options]
#          PROGRAM [args]
#
#   --rc N      flitrun must exit N (default 0)
#   --out TEXT  flitrun's stdout must contain TEXT (fixed string)
#   --err TEXT  the same for stderr
#
# Every check fails the test with flitrun's output; so does a process left in
# any host afterwards. Exit 0 pass, 1 fail, 77 skip.
set -u

RC=0
OUT=()
ERR=()
while [ $# -gt 0 ]; do
  case $1 in
    --rc) RC=$2; shift 2 ;;
    --out) OUT+=("$2"); shift 2 ;;
    --err) ERR+=("$2"); shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: job.sh [--rc N] [--out T] [--err T] FLITRUN PROGRAM..." >&2; exit 2; }
FLITRUN=$1
shift

command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not found (Debian: util-linux)"; exit 77; }
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }

start=$(date +%s%N)
ip netns exec "$FLITNET_NS0" "$FLITRUN" -n "$FLITNET_HOSTS" --hosts "$FLITNET_NSLIST" \
  --launch 'ip netns exec {host} unshare --ipc' "$@" >"$TMP/out" 2>"$TMP/err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))

[ "$rc" -eq "$RC" ] || fail "flitrun exited $rc, expected $RC"
for t in "${OUT[@]+"${OUT[@]}"}"; do
  grep -qF -- "$t" "$TMP/out" || fail "stdout lacks '$t'"
done
for t in "${ERR[@]+"${ERR[@]}"}"; do
  grep -qF -- "$t" "$TMP/err" || fail "stderr lacks '$t'"
done

# Nothing left behind in any host (give exiting processes ~10 s).
left=
for ((k = 0; k < 100; k++)); do
  left=
  for ((i = 0; i < FLITNET_HOSTS; i++)); do
    ns=FLITNET_NS$i
    left+=$(ip netns pids "${!ns}" | tr '\n' ' ')
  done
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] || fail "processes left in the hosts: $left"

# The job's own report is the test's log, failed or not.
cat "$TMP/out"
if [ "$FAILS" -gt 0 ]; then
  echo "--- flitrun's stderr:" >&2
  cat "$TMP/err" >&2
  exit 1
fi
echo "PASS: $FLITNET_HOSTS hosts, loss ${FLITNET_LOSS:-0}%, dup ${FLITNET_DUP:-0}%: flitrun exited $rc in $((ms / 1000)).$(printf %03d $((ms % 1000))) s"
exit 0
