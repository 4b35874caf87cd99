#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# amudp_prefix.sh BUILD_DIR SOURCE_DIR WORK_DIR CC
# flit-amudp installed under a prefix that is not the configured one (as
# `make install PREFIX=/some/dir` does), with only the libraries and
# flitrun installed (the install scripts of the top directory, tools/ and
# compat/, not the whole tree): an AMUDP program built against it, started
# the AMUDP way with no flitrun on $PATH and no AMUDP_FLITRUN, finds the
# flitrun installed beside its library; `prog 2 L` and `prog 2` with
# AMUDP_SPAWNFN=L. AMUDP_FLITRUN still wins when set: naming a flitrun that
# is not there fails, and says so.
#
# Exit 0 pass, 1 fail, 77 skip (pkg-config missing: Debian pkg-config).
set -eu
build=$1 src=$2 work=$3 cc=$4

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
command -v pkg-config >/dev/null 2>&1 || skip "pkg-config not installed (Debian: pkg-config)"
command -v cmake >/dev/null 2>&1 || skip "cmake not installed (Debian: cmake)"

unset LD_LIBRARY_PATH AMUDP_FLITRUN AMUDP_SPAWNFN
rm -rf "$work"
mkdir -p "$work/nobin"
prefix=$work/prefix
configured=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
[ "$configured" != "$prefix" ] || fail "the scratch prefix is the configured one"
for dir in . tools compat; do
    cmake -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LOCAL_ONLY=ON \
          -P "$build/$dir/cmake_install.cmake" >/dev/null || fail "installing $dir"
done
[ -x "$prefix/bin/flitrun" ] || fail "bin/flitrun not installed"
[ -e "$prefix/include/flit/compat/amudp.h" ] || fail "amudp.h not installed"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
libdir=$(pkg-config --variable=libdir flit-amudp)
# shellcheck disable=SC2046 # pkg-config's words
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/prog" "$src/amudp_prefix.c" -x none \
    $(pkg-config --cflags --libs flit-amudp) -Wl,-rpath,"$libdir" ||
    fail "an AMUDP program through pkg-config flit-amudp"

# What the program finds on its own: a PATH with no flitrun (an empty
# folder), the program started from its folder as ./prog.
cd "$work"
job() {
    env -i HOME="${HOME:-/}" PATH="$work/nobin" EXPECT_FLITRUN="$prefix/bin/flitrun" \
        EXPECT_ARGV0=./prog "$@"
}
out=$(job ./prog 2 L 2>&1) || { rc=$?; echo "$out"; fail "./prog 2 L (exit $rc)"; }
out=$(job AMUDP_SPAWNFN=L ./prog 2 2>&1) ||
    { rc=$?; echo "$out"; fail "AMUDP_SPAWNFN=L ./prog 2 (exit $rc)"; }
echo "ok: ./prog 2 L and AMUDP_SPAWNFN=L ./prog 2 start the installed flitrun"

rc=0
out=$(job AMUDP_FLITRUN="$work/nobin/flitrun" ./prog 2 L 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "AMUDP_FLITRUN naming no flitrun was passed over"
echo "$out" | grep -q "cannot run $work/nobin/flitrun" ||
    { echo "$out"; fail "AMUDP_FLITRUN naming no flitrun: not said"; }
echo "ok: AMUDP_FLITRUN wins, and a wrong one is named"
cd /
rm -rf "$work"
echo "PASS: amudp_prefix"
