#!/bin/sh
# install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
# Proves an installed flit is usable: pkg-config --cflags --libs flit and
# find_package(flit) both build a program, as C and as C++, and it runs.
set -eu
build=$1 src=$2 work=$3
for tool in pkg-config c++ cmake; do
    command -v $tool >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null

for f in include/flit/flit.h include/flit/am.h lib/pkgconfig/flit.pc \
         lib/cmake/flit/flitConfig.cmake bin/flitrun; do
    [ -e "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
ls "$prefix"/lib/libflit.so.* >/dev/null && ls "$prefix"/lib/libflit.a >/dev/null

run() {     # run PROGRAM: a job of one rank, then two ranks under flitrun
    LD_LIBRARY_PATH=$prefix/lib "$1" >/dev/null
    LD_LIBRARY_PATH=$prefix/lib "$prefix/bin/flitrun" -n 2 --timeout 60 "$1" >/dev/null
}

# pkg-config, as C and as C++
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
flags=$(pkg-config --cflags --libs flit)
cc -std=c11 -Wall -Wextra -Werror -o "$work/pc_c" "$src/user.c" $flags
c++ -std=c++11 -Wall -Wextra -Werror -x c++ -o "$work/pc_cxx" "$src/user.c" $flags
run "$work/pc_c"
run "$work/pc_cxx"

# find_package(flit), as C and as C++
cmake -S "$src/project" -B "$work/proj" -DCMAKE_PREFIX_PATH="$prefix" \
      -DUSER_SOURCE="$src/user.c" >/dev/null
cmake --build "$work/proj" >/dev/null
run "$work/proj/user_c"
run "$work/proj/user_cxx"
echo "PASS: pkg-config and find_package, C and C++"
