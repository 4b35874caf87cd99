#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A flit job over libfabric (FLIT_TRANSPORT=ofi) on one provider, all ranks
# on this host, then checks that libfabric carried it.
#
#   ofi_job.sh --have ON|OFF PROVIDER [--rc N] [--out RE]... FLITRUN
#              [flitrun options] PROGRAM [args]
#
#   --have  whether the build has the transport (FLIT_WITH_OFI): OFF skips
#   --rc N  the exit status flitrun must give (a rank killed: 137); 0 else
#   --out RE  a line of the job's output (stdout and stderr) must match RE
#   --absent  PROVIDER is one libfabric does not have: the job must fail
#             (--rc, --out say how), and nothing was carried
#
# Checks: the status; with FLIT_STATS=1, rank 0 says its peers were in
# contact over "ofi" (no other transport could have served: shm and udp
# stand aside under FLIT_TRANSPORT=ofi). Exit 0 pass, 1 fail, 77 skip.
set -u
HAVE=OFF
[ "${1:-}" = --have ] && { HAVE=$2; shift 2; }
PROV=${1:?usage: ofi_job.sh --have ON|OFF PROVIDER [--rc N] [--out RE] FLITRUN...}
shift
RC=0
OUTS=
ABSENT=0
while [ $# -gt 0 ]; do
  case $1 in
    --absent) ABSENT=1; shift ;;
    --rc) RC=$2; shift 2 ;;
    --out) OUTS="$OUTS
$2"; shift 2 ;;
    *) break ;;
  esac
done

[ "$HAVE" = ON ] ||
  { echo "SKIP: this flit was built without libfabric (Debian: libfabric-dev)"; exit 77; }
command -v fi_info >/dev/null 2>&1 ||
  { echo "SKIP: fi_info not found (Debian: libfabric-bin)"; exit 77; }
[ "$ABSENT" = 1 ] || fi_info -p "$PROV" -t FI_EP_RDM >/dev/null 2>&1 ||
  { echo "SKIP: libfabric has no provider '$PROV' for FI_EP_RDM here (fi_info -p $PROV)"; exit 77; }

LOG=$(mktemp) || exit 1
trap 'rm -f "$LOG"' EXIT
FLIT_TRANSPORT=ofi FLIT_OFI_PROVIDER=$PROV FLIT_STATS=1 "$@" >"$LOG" 2>&1
got=$?
cat "$LOG"
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
[ "$got" -eq "$RC" ] || fail "the job's status is $got, not $RC"
[ "$ABSENT" = 1 ] || grep -Eq 'flit\[0\] +ofi: peers_in_contact [1-9]' "$LOG" ||
  fail "rank 0's counters do not show peers reached over ofi"
echo "$OUTS" | while IFS= read -r re; do
  [ -z "$re" ] || grep -Eq -- "$re" "$LOG" || { echo "FAIL: no line matches '$re'" >&2; exit 1; }
done || FAILS=$((FAILS + 1))
[ "$FAILS" -eq 0 ] && echo "ofi_job: $PROV OK"
[ "$FAILS" -eq 0 ]
