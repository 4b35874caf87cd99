#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Debian packages the build and the test suite use beyond a C compiler,
# make and CMake; `make test` runs this before it configures anything.
#
# As root, with apt-get, installs those that are missing (apt-get update
# first, quietly); nothing to do is a quick check (one dpkg-query). Not
# root, no apt-get, or FLIT_NO_APT=1: installs nothing and names what is
# missing; every test that needs it then reports itself skipped, naming the
# package, and the suite still passes. Never fails: a failed install is a
# warning (the tests that needed it skip).
#
# What needs what:
#   g++                   install_cxx, install_gcc (headers and programs as C++)
#   clang libclang-rt-dev fuzz_* (libFuzzer), make test-tsan (ThreadSanitizer),
#                         install_clang
#   ninja-build           faster builds (make falls back to Makefiles)
#   pkg-config            PMIx detection, the install tests
#   libpmix-dev           flit_init under mpirun (pmix_*), with
#   openmpi-bin libopenmpi-dev
#                         mpirun (pmix_*), make bench-compare
#   ucx-utils             make bench-compare (ucx_perftest), bench_compare_smoke
#   slurm-wlm munge       slurm_* (a one-node Slurm cluster on localhost: srun
#                         --mpi=pmix and --mpi=pmi2, sbatch, salloc), make
#                         bench-launch
#   libpmi2-0-dev         make bench-launch's bare PMI-2 client (Slurm's libpmi2)
#   iproute2 nftables util-linux
#                         net.* (hosts as network namespaces, loss and
#                         duplication as nftables rules, unshare, setsid)
#   clang-format python3 git
#                         make format-check (clang-format-diff on changed lines)
#   mandoc                man_lint (mandoc -T lint on the pages of man/)
#   libxdp-dev libbpf-dev the AF_XDP transport (FLIT_TRANSPORT=xdp; its XDP
#                         program is compiled by clang), conformance.xdp, xdp.*
#   ethtool               xdp.mixed (checksum offload off for a plain UDP peer
#                         on veth)
#   xdp-tools             by hand: xdp-loader status shows what is attached
#                         to an interface
#   libfabric-dev libfabric-bin
#                         the libfabric transport (FLIT_TRANSPORT=ofi),
#                         conformance.ofi_*, ofi.*; fi_info names the providers
set -u

PACKAGES="g++ clang libclang-rt-dev ninja-build pkg-config libpmix-dev openmpi-bin
          libopenmpi-dev ucx-utils slurm-wlm munge libpmi2-0-dev iproute2 nftables util-linux
          clang-format python3 git mandoc libxdp-dev libbpf-dev xdp-tools ethtool
          libfabric-dev libfabric-bin"

say() { echo "deps: $*"; }

if ! command -v dpkg-query >/dev/null 2>&1; then
    say "not a Debian system: tests that need a missing tool say so and are skipped"
    exit 0
fi
# shellcheck disable=SC2086 # a list of names
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' $PACKAGES 2>/dev/null |
    awk '$2 == "installed" { print $1 }')
missing=
for p in $PACKAGES; do
    echo "$installed" | grep -qx -- "$p" || missing="$missing $p"
done
[ -n "$missing" ] || exit 0

why=
case ${FLIT_NO_APT:-0} in
0 | '') ;;
*) why="FLIT_NO_APT=$FLIT_NO_APT" ;;
esac
[ -n "$why" ] || [ "$(id -u)" -eq 0 ] || why="not root"
[ -n "$why" ] || command -v apt-get >/dev/null 2>&1 || why="no apt-get"
if [ -n "$why" ]; then
    say "missing:$missing"
    say "not installing them ($why); the tests that need them will be skipped."
    say "to run them: sudo apt-get install$missing"
    exit 0
fi

say "installing:$missing"
export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
apt_opts="-qq -o DPkg::Lock::Timeout=300"
# shellcheck disable=SC2086 # options and names
if apt-get $apt_opts update >/dev/null &&
    apt-get $apt_opts install -y --no-install-recommends $missing >/dev/null; then
    say "installed:$missing"
else
    say "warning: apt-get could not install:$missing; the tests that need them will be skipped"
fi
exit 0
