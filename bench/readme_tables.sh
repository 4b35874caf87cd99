#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The tables of docs/performance.md, measured on this machine
# (make bench-readme):
#
#     bench/readme_tables.sh BUILD_DIR [--runs N] [--quick] [--keep DIR]
#                            [--write FILE]
#
# Runs N rounds (default 3), each of: flit-bench on shared memory, then the
# Open MPI ping-pong of bench/compare.sh (when Open MPI is installed), then
# bench/udp_bench.sh --csv (UDP on loopback, across two network namespaces,
# and under loss; the last two need root and nftables). Then it prints the
# tables as markdown on standard output, headed by a line naming the date
# and the machine (CPU model, CPUs, kernel): each cell is the median of the
# N runs with their range, each ratio the median of the runs' own ratios
# (bench/readme_tables.awk). --write FILE puts them into FILE instead, in
# place of the lines between "<!-- bench-readme: begin -->" and
# "<!-- bench-readme: end -->" (docs/performance.md has them; FILE is checked
# for them before anything runs). What it is doing goes to standard error;
# --keep DIR keeps every run's CSV there.
#
# A run takes minutes (--quick: about one); the machine should be otherwise
# idle: flit-bench measures again a figure during which a rank lost its
# CPU, and prints it as noisy when that keeps happening.
set -u

build=${1:-build}
[ $# -gt 0 ] && shift
runs=3
quick=
keep=
write=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --quick) quick=--quick; shift ;;
    --keep) keep=$2; shift 2 ;;
    --write) write=$2; shift 2 ;;
    *) echo "readme_tables.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
case $runs in '' | *[!0-9]* | 0) echo "readme_tables.sh: --runs wants a count" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
begin='<!-- bench-readme: begin -->' end='<!-- bench-readme: end -->'
if [ -n "$write" ]; then
  [ "$(grep -cxF -e "$begin" -e "$end" "$write" 2>/dev/null)" = 2 ] || {
    echo "readme_tables.sh: $write lacks the lines '$begin' and '$end'" >&2
    exit 2
  }
fi
bench=$build/bench/flit-bench
flitrun=$build/tools/flitrun
[ -x "$bench" ] && [ -x "$flitrun" ] || {
  echo "readme_tables.sh: $bench or $flitrun missing: build first" >&2
  exit 1
}

if [ -n "$keep" ]; then
  mkdir -p "$keep" || exit 1
  dir=$(cd "$keep" && pwd)
else
  dir=$(mktemp -d /tmp/flit-readme-XXXXXX) || exit 1
  trap 'rm -rf "$dir"' EXIT
fi
trap 'exit 130' INT
trap 'exit 143' TERM

mpi=
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
  mpicc -O2 -o "$dir/mpi_pingpong" "$here/mpi_pingpong.c" && mpi=$dir/mpi_pingpong
else
  echo "readme_tables.sh: no Open MPI (apt-get install openmpi-bin libopenmpi-dev):" \
    "no Open MPI rows" >&2
fi
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root

load=$(cut -d ' ' -f 1-3 /proc/loadavg)
machine=
for ((r = 1; r <= runs; r++)); do
  out=$dir/$r
  mkdir -p "$out"
  echo "readme_tables.sh: round $r of $runs: flit-bench on shared memory ..." >&2
  "$flitrun" -n 2 --timeout 1800 "$bench" --csv $quick >"$out/shm.csv" 2>"$out/shm.err" ||
    { cat "$out/shm.err" >&2; exit 1; }
  [ -n "$machine" ] || machine=$(sed -n 's/^flit-bench: measured //p' "$out/shm.err")
  if [ -n "$mpi" ]; then
    # as bench/compare.sh: pml ob1 keeps the messages on the vader BTL
    echo "readme_tables.sh: round $r of $runs: Open MPI ..." >&2
    mpirun $root --oversubscribe -n 2 --mca pml ob1 --mca btl self,vader "$mpi" $quick \
      >"$out/mpi.csv" 2>"$out/mpi.err" || { cat "$out/mpi.err" >&2; exit 1; }
  fi
  echo "readme_tables.sh: round $r of $runs: UDP (loopback, veth, loss) ..." >&2
  "$here/udp_bench.sh" "$build" $quick --sizes 8,1M --csv "$out" >"$out/udp.log" 2>&1 ||
    { cat "$out/udp.log" >&2; exit 1; }
  grep -h 'skipped' "$out/udp.log" >&2
done

mpi_version=
[ -n "$mpi" ] && mpi_version=$(mpirun --version 2>/dev/null | head -n 1 |
  sed 's/^mpirun (Open MPI) /Open MPI /')
awk -f "$here/readme_tables.awk" -v machine="$machine" -v load="$load" \
  -v mpi_version="$mpi_version" \
  -v command="make bench-readme (bench/readme_tables.sh --runs $runs${quick:+ --quick})" \
  "$dir"/*/*.csv >"$dir/tables.md" || exit 1
[ -n "$write" ] || { cat "$dir/tables.md"; exit 0; }
# FILE's lines up to the begin marker, the tables, FILE's lines from the end
# marker on; written beside FILE, then moved over it.
awk -v begin="$begin" -v end="$end" -v tables="$dir/tables.md" '
  $0 == end { skip = 0 }
  !skip { print }
  $0 == begin { while ((getline l < tables) > 0) print l; skip = 1 }' \
  "$write" >"$write.new" && mv "$write.new" "$write" || exit 1
echo "readme_tables.sh: wrote the tables into $write" >&2
