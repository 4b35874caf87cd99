#!/bin/sh
# install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
# Proves an installed flit is usable as the README says, with no
# LD_LIBRARY_PATH anywhere: the installed flitrun runs the installed
# flit-bench (their RUNPATH finds the installed libflit.so, also once the
# tree is moved), and programs built against the installed tree with
# pkg-config (plus the rpath the README adds) and with find_package(flit),
# as C and as C++, start alone and under flitrun.
set -eu
build=$1 src=$2 work=$3
for tool in pkg-config c++ cmake; do
    command -v $tool >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done
# Whatever the caller's environment holds, the programs must find the
# library by themselves.
unset LD_LIBRARY_PATH
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null

for f in include/flit/flit.h include/flit/am.h lib/pkgconfig/flit.pc \
         lib/cmake/flit/flitConfig.cmake bin/flitrun bin/flit-bench; do
    [ -e "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
ls "$prefix"/lib/libflit.so.* >/dev/null && ls "$prefix"/lib/libflit.a >/dev/null

fail() { echo "FAIL: $*"; exit 1; }

# bench PREFIX: that tree's flitrun starts two ranks of its flit-bench, one
# figure at one size (a second or two); the CSV line proves both ranks ran.
bench() {
    "$1/bin/flitrun" -n 2 --timeout 60 "$1/bin/flit-bench" --quick --csv \
        --no-baselines --only latency --sizes 8 >"$work/bench.csv" 2>"$work/bench.err" ||
        { cat "$work/bench.err"; fail "installed flitrun -n 2 flit-bench (in $1)"; }
    grep -q '^latency_short,8,' "$work/bench.csv" ||
        { cat "$work/bench.csv" "$work/bench.err"; fail "flit-bench printed no figure"; }
}
bench "$prefix"
# The RUNPATH is relative to the programs: a moved tree still works.
mv "$prefix" "$work/moved"
bench "$work/moved"
mv "$work/moved" "$prefix"

run() {     # run PROGRAM: a job of one rank, then two ranks under flitrun
    "$1" >/dev/null || fail "$1 alone"
    "$prefix/bin/flitrun" -n 2 --timeout 60 "$1" >/dev/null || fail "flitrun -n 2 $1"
}

# pkg-config, as C and as C++. --libs carries no rpath (pkg-config has no
# portable way to), so the program records libdir itself, as the README says.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
flags="$(pkg-config --cflags --libs flit) -Wl,-rpath,$(pkg-config --variable=libdir flit)"
cc -std=c11 -Wall -Wextra -Werror -o "$work/pc_c" "$src/user.c" $flags
c++ -std=c++11 -Wall -Wextra -Werror -x c++ -o "$work/pc_cxx" "$src/user.c" $flags
run "$work/pc_c"
run "$work/pc_cxx"

# find_package(flit), as C and as C++: from the build tree (CMake's build
# RPATH names the imported library's directory), then installed into a
# prefix of their own (CMAKE_INSTALL_RPATH_USE_LINK_PATH keeps it).
cmake -S "$src/project" -B "$work/proj" -DCMAKE_PREFIX_PATH="$prefix" \
      -DUSER_SOURCE="$src/user.c" >/dev/null
cmake --build "$work/proj" >/dev/null
run "$work/proj/user_c"
run "$work/proj/user_cxx"
cmake --install "$work/proj" --prefix "$work/user" >/dev/null
run "$work/user/bin/user_c"
run "$work/user/bin/user_cxx"
rm -rf "$work"      # kept only when something failed, to look at
echo "PASS: installed flitrun and flit-bench; pkg-config and find_package, C and C++"
