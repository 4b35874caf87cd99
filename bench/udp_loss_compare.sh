#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Two builds (or one build under two settings) side by side under packet
# loss, run by run in turn, so that the machine's moods fall on both alike:
# 1 MiB long AM goodput between two network namespaces joined by veth while
# nftables drops PCT% of the UDP frames each receives (tests/net/netns.sh).
#
#   bench/udp_loss_compare.sh [--mtu BYTES] [--rounds N] [--loss "0 1 5 10"]
#                             SPEC SPEC...
#
# SPEC is a build folder, optionally with one environment setting after an
# @: build, build@FLIT_UDP_WINDOW_KB=1024. Prints, per loss and SPEC, the
# median, least and most MB/s of the rounds and the median's ratio to the
# same SPEC's lossless median (when 0 is among the losses). --mtu 65535
# gives 64 KiB datagrams, 1500 (the default) 1472-byte ones. Needs root,
# `ip netns` and nftables; exits 77 without them.
set -u

mtu=1500
rounds=5
losses="0 1 5 10"
while [ $# -gt 0 ]; do
  case $1 in
    --mtu) mtu=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --loss) losses=$2; shift 2 ;;
    -*) echo "udp_loss_compare.sh: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/../tests/net/netns.sh

# ---- inside the network: one line "LOSS SPEC MB/s" per run
if [ -n "${FLITNET_PREFIX:-}" ]; then
  for pct in $losses; do
    "$netns" set-loss "$FLITNET_PREFIX" "$pct" >/dev/null || exit 1
    for _ in $(seq "$rounds"); do
      for spec in "$@"; do
        b=${spec%%@*} e=
        [ "$spec" != "$b" ] && e=${spec#*@}
        v=$(ip netns exec "$FLITNET_NS0" env $e "$b/tools/flitrun" -n 2 \
          --hosts "$FLITNET_NSLIST" --launch 'ip netns exec {host} unshare --ipc' \
          --timeout 120 "$b/bench/flit-bench" --csv --no-baselines --only bandwidth \
          --sizes 1M 2>/dev/null | awk -F, '$1 == "bandwidth_long" { print $3 }')
        echo "$pct $spec ${v:-failed}"
      done
    done
  done
  exit 0
fi

specs=()
for spec in "$@"; do
  b=${spec%%@*}
  [ -x "$b/bench/flit-bench" ] && [ -x "$b/tools/flitrun" ] || {
    echo "udp_loss_compare.sh: $b/bench/flit-bench or $b/tools/flitrun missing" >&2
    exit 1
  }
  specs+=("$(cd "$b" && pwd)${spec#"$b"}")
done
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$netns" run "flc-$$" 2 --mtu "$mtu" --timeout 3600 -- \
  "$0" --mtu "$mtu" --rounds "$rounds" --loss "$losses" "${specs[@]}" >"$out"
rc=$?
[ $rc -eq 0 ] || { cat "$out" >&2; exit $rc; }
echo "1 MiB long AM goodput, MB/s, veth MTU $mtu, $rounds runs each in turn"
awk -v losses="$losses" '
  NF == 3 && $3 != "failed" { v[$1 " " $2] = v[$1 " " $2] " " $3; seen[$2] = 1 }
  NF == 3 && $3 == "failed" { bad[$1 " " $2]++ }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
      if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    lo = a[1]; hi = a[n]
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    for (k in v) { m[k] = median(v[k]); l[k] = lo; h[k] = hi }
    n = split(losses, p, " ")
    for (i = 1; i <= n; i++) for (s in seen) {
      k = p[i] " " s
      if (!(k in m)) { printf "%3s%%  %-50s failed\n", p[i], s; continue }
      r = ("0 " s) in m && m["0 " s] > 0 ? sprintf("x%.2f", m[k] / m["0 " s]) : ""
      printf "%3s%%  %-50s median %8.1f (%.1f-%.1f) %s%s\n", p[i], s, m[k], l[k], h[k], r,
             bad[k] ? sprintf(", %d failed", bad[k]) : ""
    }
  }' "$out"
