#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# install_test.sh MODE BUILD_DIR SOURCE_DIR WORK_DIR [ARGS...]
# Proves an installed flit is usable as the README says, with no
# LD_LIBRARY_PATH anywhere. Every mode installs the build tree into a prefix
# of its own under WORK_DIR, compiles every public header alone (twice
# included) with -Wall -Wextra -Werror -pedantic, and builds programs
# against the installed tree:
#
#   tree CC SOVERSION   the installed flitrun runs the installed flit-bench
#                       (their RUNPATH finds libflit.so, also once the tree
#                       is moved); libflit.so's soname is libflit.so.SOVERSION
#                       and it exports flit_* only; headers as C with CC; C
#                       programs built with pkg-config (plus the rpath the
#                       README adds) and with find_package(flit), against
#                       libflit.so and libflit.a, start alone and under flitrun
#   cxx CXX             headers as C++; the program as C++ with pkg-config
#                       and find_package (CXX: the C++ compiler CMake found)
#   compilers CC CXX PACKAGE
#                       headers as C with CC and as C++ with CXX; the program
#                       as C and as C++ linked against libflit.so and against
#                       libflit.a (which must need no LTO plugin: a non-GCC
#                       linker cannot read GCC's slim LTO objects)
#
# Exit 0 pass, 1 fail, 77 skip: a tool is missing (the message names the
# Debian package to install).
set -eu
mode=$1 build=$2 src=$3 work=$4
shift 4

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

case $mode in
tree) [ $# -eq 2 ] || fail "usage: tree CC SOVERSION"; cc=$1 soversion=$2 ;;
cxx) [ $# -eq 1 ] || fail "usage: cxx CXX"; cxx=$1 ;;
compilers) [ $# -eq 3 ] || fail "usage: compilers CC CXX PACKAGE"; cc=$1 cxx=$2 ;;
*) fail "no mode '$mode'" ;;
esac
have pkg-config || skip "pkg-config not installed (Debian: pkg-config)"
have cmake || skip "cmake not installed (Debian: cmake)"
case $mode in
cxx)
    case $cxx in '' | *NOTFOUND) skip "no C++ compiler found (Debian: g++)" ;; esac
    have "$cxx" || skip "C++ compiler $cxx not installed (Debian: g++)"
    ;;
compilers)
    have "$cc" || skip "$cc not installed (Debian: $3)"
    have "$cxx" || skip "$cxx not installed (Debian: $3)"
    ;;
esac
have readelf || skip "readelf not installed (Debian: binutils)"

# Whatever the caller's environment holds, the programs must find the
# library by themselves.
unset LD_LIBRARY_PATH
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/flit/flit.h include/flit/am.h lib/pkgconfig/flit.pc \
         lib/cmake/flit/flitConfig.cmake lib/libflit.a bin/flitrun bin/flit-bench \
         share/doc/flit/LICENSE lib/pkgconfig/flit-static.pc share/man/man7/flit.7 \
         share/man/man1/flitrun.1 share/man/man1/flit-bench.1 share/man/man3/flit_am_short.3; do
    [ -e "$prefix/$f" ] || fail "$f not installed"
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
libdir=$(pkg-config --variable=libdir flit)

run() {     # run PROGRAM: a job of one rank, then two ranks under flitrun
    "$1" >/dev/null || fail "$1 alone"
    "$prefix/bin/flitrun" -n 2 --timeout 60 "$1" >/dev/null || fail "flitrun -n 2 $1"
}

# headers LANG COMPILER [FLAGS...]: every installed public header, alone and
# included twice, compiles cleanly.
headers() {
    lang=$1 comp=$2
    shift 2
    n=0
    for h in "$prefix"/include/flit/*.h; do
        h=${h##*/}
        printf '#include <flit/%s>\n#include <flit/%s>\nint flit_header_check;\n' \
            "$h" "$h" >"$work/header.$lang"
        "$comp" "$@" -Wall -Wextra -Werror -pedantic -I"$prefix/include" \
            -c "$work/header.$lang" -o "$work/header.o" ||
            fail "<flit/$h> does not compile with $comp $*"
        n=$((n + 1))
    done
    [ "$n" -ge 5 ] || fail "only $n public headers installed"
    echo "ok: $n headers compile with $comp $*"
}

# link COMPILER OUT shared|static [FLAGS...]: tests/install/user.c built
# against the installed libflit.so (pkg-config, plus the rpath the README
# adds) or libflit.a (pkg-config flit-static, as a user writes it), then run.
link() {
    comp=$1 out=$2 kind=$3
    shift 3
    if [ "$kind" = shared ]; then
        # shellcheck disable=SC2046 # pkg-config's words
        "$comp" "$@" -o "$out" "$src/user.c" -x none $(pkg-config --cflags --libs flit) \
            -Wl,-rpath,"$libdir" || fail "$comp $*: linking against libflit.so"
    else
        # As users write it: flit-static names the archive and what it needs.
        # shellcheck disable=SC2046 # pkg-config's words
        "$comp" "$@" -o "$out" "$src/user.c" -x none \
            $(pkg-config --static --cflags --libs flit-static) ||
            fail "$comp $*: linking against libflit.a (pkg-config flit-static)"
        ! readelf -d "$out" | grep -q 'NEEDED.*libflit' ||
            fail "$out linked against libflit.a needs libflit.so"
    fi
    run "$out"
    lib=libflit.so
    [ "$kind" = static ] && lib=libflit.a
    echo "ok: $comp $* against $lib: runs alone and under flitrun"
}

# compat: the compatibility libraries installed as users take them: each
# header alone as C (and C++ when CXX is given), each library exporting its
# API's names only, a program each built through pkg-config (flit-NAME) and
# through find_package(flit) (flit::NAME), run under flitrun; the AMUDP one
# also started AMUDP's way, `prog 2 L`.
compat_libs="amudp:AM_|_AM_|AMUDP_ fm:FM_ vmmc:VMMC_|SendMsg"
compat() {
    cc=$1 cxx=${2:-}
    for entry in $compat_libs; do
        lib=${entry%%:*} names=${entry#*:}
        [ -e "$prefix/lib/pkgconfig/flit-$lib.pc" ] || fail "flit-$lib.pc not installed"
        extra=$(nm -D --defined-only "$prefix/lib/libflit-$lib.so" |
            awk '$2 != "A" {print $3}' | grep -Ev "^($names)" || true)
        [ -z "$extra" ] || fail "libflit-$lib.so exports more than its API: $extra"
        # shellcheck disable=SC2046 # pkg-config's words
        "$cc" -std=c11 -Wall -Wextra -Werror -o "$work/${lib}_pc" "$src/compat_$lib.c" \
            -x none $(pkg-config --cflags --libs "flit-$lib") -Wl,-rpath,"$libdir" ||
            fail "a flit-$lib program through pkg-config"
        "$prefix/bin/flitrun" -n 2 --timeout 60 "$work/${lib}_pc" >/dev/null ||
            fail "flitrun -n 2 ${lib}_pc"
    done
    for h in "$prefix"/include/flit/compat/*.h; do
        printf '#include <%s>\n#include <%s>\nint compat_header_check;\n' "${h##*/}" \
            "${h##*/}" >"$work/compat.c"
        "$cc" -std=c11 -Wall -Wextra -Werror -pedantic -I"$prefix/include/flit/compat" \
            -I"$prefix/include" -c "$work/compat.c" -o "$work/compat.o" ||
            fail "<${h##*/}> does not compile as C"
        [ -z "$cxx" ] || "$cxx" -x c++ -std=c++11 -Wall -Wextra -Werror -pedantic \
            -I"$prefix/include/flit/compat" -I"$prefix/include" -c "$work/compat.c" \
            -o "$work/compat.o" || fail "<${h##*/}> does not compile as C++"
    done
    AMUDP_FLITRUN="$prefix/bin/flitrun" "$work/amudp_pc" 2 L >/dev/null ||
        fail "amudp_pc 2 L (AMUDP's own start-up)"
    cmake -S "$src/compat_project" -B "$work/cproj" -DCMAKE_PREFIX_PATH="$prefix" \
          -DCMAKE_C_COMPILER="$cc" -DSRC="$src" >/dev/null
    cmake --build "$work/cproj" >/dev/null
    for entry in $compat_libs; do
        "$prefix/bin/flitrun" -n 2 --timeout 60 "$work/cproj/${entry%%:*}_cmake" \
            >/dev/null || fail "flitrun -n 2 ${entry%%:*}_cmake (find_package)"
    done
    echo "ok: compat libraries (${compat_libs}): headers, exports, pkg-config, find_package"
}

case $mode in
tree)
    soname=$(readelf -d "$prefix/lib/libflit.so" | sed -n 's/.*SONAME.*\[\(.*\)\].*/\1/p')
    [ "$soname" = "libflit.so.$soversion" ] ||
        fail "soname '$soname', expected libflit.so.$soversion"
    [ -e "$prefix/lib/$soname" ] || fail "$soname not installed"
    # Defined dynamic symbols other than flit_* and the version node (type A).
    extra=$(nm -D --defined-only "$prefix/lib/$soname" | awk '$2 != "A" && $3 !~ /^flit_/')
    [ -z "$extra" ] || fail "libflit.so exports more than flit_*: $extra"
    echo "ok: soname $soname, $(nm -D --defined-only "$prefix/lib/$soname" |
        grep -c ' flit_') symbols exported, all flit_*"

    # bench PREFIX: that tree's flitrun starts two ranks of its flit-bench,
    # one figure at one size (a second or two); the CSV line proves both ran.
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
    echo "ok: installed flitrun -n 2 flit-bench, also from a moved tree"

    headers c "$cc" -std=c11
    link "$cc" "$work/pc_c" shared -std=c11 -Wall -Wextra -Werror
    link "$cc" "$work/pc_c_static" static -std=c11 -Wall -Wextra -Werror

    # find_package(flit): from the build tree (CMake's build RPATH names the
    # imported library's directory), then installed into a prefix of its own
    # (CMAKE_INSTALL_RPATH_USE_LINK_PATH keeps it).
    cmake -S "$src/project" -B "$work/proj" -DCMAKE_PREFIX_PATH="$prefix" \
          -DCMAKE_C_COMPILER="$cc" -DUSER_SOURCE="$src/user.c" >/dev/null
    cmake --build "$work/proj" >/dev/null
    run "$work/proj/user_c"
    run "$work/proj/user_c_static"
    cmake --install "$work/proj" --prefix "$work/user" >/dev/null
    run "$work/user/bin/user_c"
    run "$work/user/bin/user_c_static"
    echo "ok: find_package(flit): flit::flit and flit::flit_static, built and installed"
    compat "$cc"
    ;;
cxx)
    headers cxx "$cxx" -x c++ -std=c++11
    link "$cxx" "$work/pc_cxx" shared -x c++ -std=c++11 -Wall -Wextra -Werror
    cmake -S "$src/project" -B "$work/proj" -DCMAKE_PREFIX_PATH="$prefix" \
          -DCMAKE_CXX_COMPILER="$cxx" -DUSER_CXX=ON -DUSER_SOURCE="$src/user.c" >/dev/null
    cmake --build "$work/proj" >/dev/null
    run "$work/proj/user_cxx"
    cmake --install "$work/proj" --prefix "$work/user" >/dev/null
    run "$work/user/bin/user_cxx"
    echo "ok: find_package(flit) from C++, built and installed"
    compat cc "$cxx"
    ;;
compilers)
    headers c "$cc" -std=c11
    headers cxx "$cxx" -x c++ -std=c++11
    flags="-Wall -Wextra -Werror"
    # shellcheck disable=SC2086 # flags are words
    {
        link "$cc" "$work/c_shared" shared -std=c11 $flags
        link "$cc" "$work/c_static" static -std=c11 $flags
        link "$cxx" "$work/cxx_shared" shared -x c++ -std=c++11 $flags
        link "$cxx" "$work/cxx_static" static -x c++ -std=c++11 $flags
    }
    # GCC reads its own LTO objects through the linker plugin; without it
    # the archive must still link, as it does for any other linker.
    if "$cc" --version 2>/dev/null | grep -q 'Free Software Foundation'; then
        # shellcheck disable=SC2086
        link "$cc" "$work/c_static_noplugin" static -std=c11 $flags -fno-use-linker-plugin
    fi
    ;;
esac
rm -rf "$work"      # kept only when something failed, to look at
echo "PASS: install $mode"
