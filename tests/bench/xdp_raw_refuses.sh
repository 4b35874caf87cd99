#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# flit-xdp-raw (bench/xdp_raw.c) refuses cleanly, with a line saying why:
# a bad command line (exit 2); an address no interface holds, and, as an
# unprivileged user, an interface it may not attach to (exit 1). The last
# two run in a network namespace of their own (unshare -n, holding only a
# veth pair made there), so no interface of the machine is touched, and it
# goes with the process.
#
#     xdp_raw_refuses.sh FLIT_XDP_RAW
set -u
raw=$1
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT

# STATUS TEXT CMD...: CMD exits with STATUS and says TEXT
expect() {
  want=$1 text=$2
  shift 2
  "$@" >"$out" 2>&1
  got=$?
  if [ "$got" -ne "$want" ] || ! grep -q "$text" "$out"; then
    echo "FAIL: '$*' exited $got (want $want, saying '$text'); it said:"
    cat "$out"
    exit 1
  fi
}

expect 2 usage "$raw"
expect 2 usage "$raw" client --addr 10.0.0.1 --port 47002
expect 2 usage "$raw" server --addr nonsense --port 47001
expect 2 usage "$raw" server --addr 10.0.0.1 --port 70000

if [ "$(id -u)" -ne 0 ] || ! unshare -n true 2>/dev/null; then
  echo "SKIP: needs root and network namespaces (unshare -n)"
  exit 77
fi
expect 1 "no Ethernet interface that is up holds 198.51.100.1" \
  unshare -n "$raw" server --addr 198.51.100.1 --port 47001
# shellcheck disable=SC2016 # expanded by the inner shell
expect 1 "not permitted" unshare -n sh -c '
  ip link add v0 type veth peer name v1 && ip addr add 198.51.100.1/24 dev v0 &&
  ip link set v1 up && ip link set v0 up &&
  exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
    "$0" server --addr 198.51.100.1 --port 47001' "$raw"
echo "ok: flit-xdp-raw refuses with a reason"
