#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# flit beside Open MPI and UCX on shared memory, run by run (make
# bench-compare):
#
#     bench/compare.sh BUILD_DIR [--rounds N] [--quick] [--max-size BYTES]
#                                [--retries N]
#
# A round runs each program once between two processes of this host:
# flit-bench --csv under flitrun; bench/mpi_pingpong.c, compiled with mpicc,
# under mpirun with pml ob1 and btl self,vader (Open MPI 4.1's shared-memory
# path); and UCX's own ucx_perftest over UCX_TLS=sm (ucp_am_lat, tag_lat,
# ucp_am_bw, tag_bw, ucp_put_bw, a server and a client per figure). N
# rounds (default 3), the programs in a rotated order each round, since on
# this VM two runs a minute apart can differ by 2x: every figure is printed
# as the median of the rounds with their range, and each ratio is the
# median of the rounds' own ratios (flit's figure over the peer's of the
# same round). A peer that is not installed is left out and named
# (Debian: openmpi-bin libopenmpi-dev; ucx-utils); with neither, it says so
# and exits 0. --retries N goes to flit-bench: how often it measures again a
# figure during which a rank lost its CPU before it leaves it out as noisy
# (a figure left out in every round reads n/a).
#
# ucx_perftest's MB is 2^20 bytes: its bandwidths are converted to flit's
# MB/s (1e6 B/s). Its latencies, like flit's and the MPI ping-pong's, are
# half a round trip, averaged over the iterations.
set -eu

build=${1:-build}
[ $# -gt 0 ] && shift
rounds=3
quick=
pass=
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --quick) quick=1; pass="$pass --quick"; shift ;;
    --max-size) pass="$pass --max-size $2"; shift 2 ;;
    --retries) pass="$pass --retries $2"; shift 2 ;;
    *) echo "compare.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
case $rounds in '' | *[!0-9]* | 0) echo "compare.sh: --rounds wants a count" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
bench=$build/bench/flit-bench
flitrun=$build/tools/flitrun

if [ ! -x "$bench" ]; then
    echo "compare.sh: $bench not found: build first (cmake --build $build)" >&2
    exit 1
fi
if [ ! -x "$flitrun" ]; then
    flitrun=$(command -v flitrun || true)
    if [ -z "$flitrun" ]; then
        echo "compare.sh: no flitrun in $build/tools or on PATH" >&2
        exit 1
    fi
fi

tmp=$(mktemp -d /tmp/flit-compare-XXXXXX)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

peers=
mpi_version=
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1 &&
    mpicc -O2 -o "$tmp/mpi_pingpong" "$here/mpi_pingpong.c"; then
    peers="$peers mpi"
    mpi_version=$(mpirun --version 2>/dev/null | head -n 1)
else
    echo "compare.sh: no Open MPI (apt-get install openmpi-bin libopenmpi-dev): no Open MPI column" >&2
fi
ucx_version=
if command -v ucx_perftest >/dev/null 2>&1 && command -v ss >/dev/null 2>&1; then
    peers="$peers ucx"
    ucx_version=$(ucx_info -v 2>/dev/null | sed -n 's/^# Library version: /UCX /p')
    [ -n "$ucx_version" ] || ucx_version=UCX
else
    echo "compare.sh: no ucx_perftest (apt-get install ucx-utils; ss from iproute2): no UCX column" >&2
fi
if [ -z "$peers" ]; then
    echo "compare.sh: neither Open MPI nor UCX is installed, so there is nothing to compare with."
    echo "  On Debian or Ubuntu: apt-get install openmpi-bin libopenmpi-dev ucx-utils"
    exit 0
fi

root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root

run_flit() {
    # shellcheck disable=SC2086 # the options, split
    "$flitrun" -n 2 "$bench" --csv $pass >"$1"
}

# Open MPI 4.1 calls its shared-memory BTL "vader" ("sm" is only an alias
# from 5.0 on). Debian's build also has UCX, whose PML would take the
# messages itself and make the BTL choice moot: pml ob1 keeps them on vader.
run_mpi() {
    # shellcheck disable=SC2086
    mpirun $root --oversubscribe -n 2 --mca pml ob1 --mca btl self,vader \
        "$tmp/mpi_pingpong" $pass >"$1"
}

# One ucx_perftest figure: a server, which listens on a TCP port for the
# client's set-up, then the client; waits (bounded) until the port listens
# rather than for a fixed time. Prints ucx_perftest's CSV result line
# (iterations, p50 latency, average latency, overall latency, average and
# overall bandwidth, average and overall message rate), or nothing.
ucx_port=$((20000 + $$ % 20000))
ucx_one() {
    test=$1 size=$2 iters=$3
    ucx_port=$((ucx_port + 1))
    UCX_TLS=sm UCX_WARN_UNUSED_ENV_VARS=n ucx_perftest -t "$test" -p "$ucx_port" \
        >"$tmp/ucx_server.log" 2>&1 &
    server=$!
    i=0
    until ss -ltnH "sport = :$ucx_port" 2>/dev/null | grep -q .; do
        i=$((i + 1))
        if [ $i -gt 200 ] || ! kill -0 "$server" 2>/dev/null; then
            echo "compare.sh: ucx_perftest -t $test did not listen on port $ucx_port" >&2
            kill "$server" 2>/dev/null || true
            wait "$server" 2>/dev/null || true
            server=
            return 0
        fi
        sleep 0.05
    done
    UCX_TLS=sm UCX_WARN_UNUSED_ENV_VARS=n timeout 120 ucx_perftest 127.0.0.1 -t "$test" \
        -p "$ucx_port" -s "$size" -n "$iters" -w $((iters / 10 + 1)) -f -v 2>/dev/null |
        awk -F, 'NR > 1 && $1 ~ /^[0-9]+$/ { print; exit }' || true
    wait "$server" 2>/dev/null || true
    server=
}

# UCX's figures as name,size,value lines named like flit-bench's.
run_ucx() {
    n=1
    [ -n "$quick" ] && n=5
    {
        echo "name,size,value"
        ucx_one ucp_am_lat 8 $((200000 / n)) | awk -F, '{ printf "latency_am,8,%s\n", $4 }'
        ucx_one tag_lat 8 $((200000 / n)) | awk -F, '{ printf "latency_tagged,8,%s\n", $4 }'
        ucx_one ucp_am_bw 8 $((2000000 / n)) |
            awk -F, '{ printf "rate_am,8,%.4f\n", $8 / 1e6 }'
        for s in 16 1024 65536 1048576; do
            ucx_one tag_bw "$s" $((s >= 65536 ? 20000 / n : 400000 / n)) |
                awk -F, -v s="$s" '{ printf "bandwidth_tagged,%s,%.2f\n", s, $6 * 1.048576 }'
        done
        for s in 65536 1048576; do
            ucx_one ucp_put_bw "$s" $((20000 / n)) |
                awk -F, -v s="$s" '{ printf "bandwidth_put,%s,%.2f\n", s, $6 * 1.048576 }'
        done
    } >"$1"
}

r=1
while [ "$r" -le "$rounds" ]; do
    # Rotated: flit first in round 1, second in round 2, ...
    order="flit$peers"
    k=1
    while [ "$k" -lt "$r" ]; do
        first=${order%% *}
        rest=${order#* }
        [ "$rest" = "$order" ] || order="$rest $first"
        k=$((k + 1))
    done
    for p in $order; do
        echo "round $r of $rounds: $p ..." >&2
        "run_$p" "$tmp/r$r.$p.csv" || echo "compare.sh: the $p run of round $r failed" >&2
    done
    r=$((r + 1))
done

awk -F, -v rounds="$rounds" -v peers="$peers" -v mpi_version="$mpi_version" \
    -v ucx_version="$ucx_version" -v host="$(hostname)" '
function size(b) {
    if (b >= 1048576) return sprintf("%g MiB", b / 1048576)
    if (b >= 1024) return sprintf("%g KiB", b / 1024)
    return b " B"
}
# The median of the n values in v[1..n] (sorted here).
function median(v, n,    i, j, t) {
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
# "median (min-max)" of program p, figure k over the rounds; "n/a" if never.
function cell(p, k, fmt,    r, n, v, m) {
    n = 0
    for (r = 1; r <= rounds; r++)
        if ((p, k, r) in val) v[++n] = val[p, k, r]
    if (!n) return "n/a"
    m = median(v, n)
    return sprintf(fmt " (" fmt "-" fmt ")", m, v[1], v[n])
}
# The median over the rounds of flit / the peer, from the same round.
function ratio(fk, p, k,    r, n, v) {
    n = 0
    for (r = 1; r <= rounds; r++)
        if (("flit", fk, r) in val && (p, k, r) in val && val[p, k, r] + 0 > 0)
            v[++n] = val["flit", fk, r] / val[p, k, r]
    return n ? sprintf("%.2f", median(v, n)) : ""
}
function row(figure, b, unit, fmt, fk, mk, uk) {
    printf "  %-36s %7s %-6s %-26s", figure, size(b), unit, cell("flit", fk "@" b, fmt)
    if (has["mpi"]) printf " %-26s %6s", mk == "" ? "" : cell("mpi", mk "@" b, fmt),
                          mk == "" ? "" : ratio(fk "@" b, "mpi", mk "@" b)
    if (has["ucx"]) printf " %-26s %6s", uk == "" ? "" : cell("ucx", uk "@" b, fmt),
                          uk == "" ? "" : ratio(fk "@" b, "ucx", uk "@" b)
    printf "\n"
}
FNR == 1 {
    n = split(FILENAME, part, "/")
    split(part[n], f, ".")        # rN.PROG.csv
    round = substr(f[1], 2)
    prog = f[2]
    next                          # the header line
}
$3 ~ /^[0-9.]+([eE][-+]?[0-9]+)?$/ { val[prog, $1 "@" $2, round] = $3 + 0 }
END {
    n = split(peers, p, " ")
    for (i = 1; i <= n; i++) has[p[i]] = 1
    printf "flit beside"
    if (has["mpi"]) printf " %s (pml ob1, btl self,vader)", mpi_version
    if (has["mpi"] && has["ucx"]) printf " and"
    if (has["ucx"]) printf " %s (ucx_perftest, UCX_TLS=sm)", ucx_version
    printf "\non %s, 2 ranks, shared memory; %d rounds, programs rotated each round;\n", host, rounds
    printf "median (min-max) of the rounds; ratio: median over the rounds of flit / peer\n\n"
    printf "  %-36s %7s %-6s %-26s", "figure", "size", "unit", "flit"
    if (has["mpi"]) printf " %-26s %6s", "Open MPI", "ratio"
    if (has["ucx"]) printf " %-26s %6s", "UCX", "ratio"
    printf "\n"
    row("latency, one way (flit: short AM)", 8, "us", "%.3f", "latency_short", "latency",
        "latency_am")
    row("latency, one way (flit: tagged)", 8, "us", "%.3f", "latency_tagged", "latency",
        "latency_tagged")
    row("latency, one way (flit: stream)", 8, "us", "%.3f", "latency_stream", "latency", "")
    row("message rate (flit: short AM)", 8, "M/s", "%.2f", "rate_short", "rate", "rate_am")
    split("16 1024 65536 1048576", tsz, " ")
    for (i = 1; i <= 4; i++)
        row("bandwidth (flit: tagged)", tsz[i], "MB/s", "%.0f", "bandwidth_tagged",
            "bandwidth", "bandwidth_tagged")
    row("bandwidth (flit: medium AM)", 65536, "MB/s", "%.0f", "bandwidth_medium",
        "bandwidth", "")
    split("65536 1048576 4194304", big, " ")
    for (i = 1; i <= 3; i++)
        row("bandwidth (flit: long AM)", big[i], "MB/s", "%.0f", "bandwidth_long",
            "bandwidth", "")
    for (i = 1; i <= 2; i++)
        row("put bandwidth (flit: put)", big[i], "MB/s", "%.0f", "bandwidth_put", "",
            "bandwidth_put")
    printf "\n  latency: lower is better (ratio < 1: flit is faster); bandwidth and rate:\n"
    printf "  higher is better (ratio > 1: flit is faster). Peers: Open MPI runs\n"
    printf "  bench/mpi_pingpong.c (send/recv); UCX runs ucx_perftest: ucp_am_lat and\n"
    printf "  ucp_am_bw beside the short AM, tag_lat and tag_bw beside tagged messages,\n"
    printf "  ucp_put_bw beside puts.\n"
}' "$tmp"/r*.csv
