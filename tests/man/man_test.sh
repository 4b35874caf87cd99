#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# man_test.sh MODE MAN_DIR ...: the manual pages of man/.
#
#   lint MAN_DIR        every page (not the .so links) passes `mandoc -T lint`
#                       with no warning or error; every .so link is one line
#                       naming a page of man/ in the section it is in
#   symbols MAN_DIR SRC_DIR FLITRUN FLIT_BENCH LIB...
#                       every function and variable each LIB exports (its
#                       version script's names: nm -D --defined-only) has a
#                       page NAME<sym>.3 whose NAME section lists it, itself
#                       or through its .so link; flit(7) has every FLIT_*
#                       setting of src/util/config.c, flit_strerror(3) every
#                       status of <flit/flit.h>, flitrun(1) every option
#                       `flitrun --help` prints, flit-bench(1) every option
#                       `flit-bench --help` prints
#
# Exit 0 pass, 1 fail, 77 skip (a tool missing: the message names the
# Debian package).
set -eu
mode=$1 man=$2
shift 2

skip() { echo "SKIP: $*"; exit 77; }
have() { command -v "$1" >/dev/null 2>&1; }
bad=0
fail() { echo "FAIL: $*"; bad=1; }

lint() {
    have mandoc || skip "mandoc not installed (Debian: mandoc)"
    pages=0 links=0
    for f in "$man"/*.[1-9]; do
        sec=${f##*.}
        if head -n 1 "$f" | grep -q '^\.so '; then
            [ "$(wc -l <"$f")" -eq 1 ] || fail "${f##*/}: a .so link of more than one line"
            target=$(sed -n '1s/^\.so //p' "$f")
            case $target in
            "man$sec"/*) ;;
            *) fail "${f##*/}: .so $target is not in man$sec/" ;;
            esac
            [ -e "$man/${target#*/}" ] || fail "${f##*/}: .so $target: no such page"
            links=$((links + 1))
            continue
        fi
        out=$(mandoc -T lint -W warning "$f" 2>&1) || true
        [ -z "$out" ] || fail "mandoc -T lint: $out"
        pages=$((pages + 1))
    done
    [ "$pages" -ge 3 ] || fail "only $pages pages in $man"
    echo "lint: $pages pages, $links .so links"
}

symbols() {
    src=$1 flitrun=$2 bench=$3
    shift 3
    have nm || skip "nm not installed (Debian: binutils)"
    # Defined dynamic symbols, less the version node (type A) and the
    # version suffix (flit_init@@FLIT_0.1).
    syms=$(for lib in "$@"; do
        nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }'
    done)
    n=$(echo "$syms" | grep -c .) || true
    [ "$n" -ge 100 ] || fail "only $n exported symbols found in $*"
    # One pass over the pages: .so links and the names each NAME section
    # lists; then every symbol must lead, through its file, to a page that
    # lists it.
    missing=$(echo "$syms" | awk -v man="$man" '
        FILENAME == "-" { want[$1] = 1; next }
        FNR == 1 { file = FILENAME; sub(/.*\//, "", file); on = 0 }
        FNR == 1 && /^\.so / { t = $2; sub(/.*\//, "", t); link[file] = t; nextfile }
        /^\.SH NAME/ { on = 1; next }
        /^\.SH/ { on = 0 }
        on {
            line = $0; sub(/ \\- .*/, "", line); gsub(/\\-/, "-", line)
            k = split(line, w, /[ ,]+/)
            for (i = 1; i <= k; i++) if (w[i] != "") listed[file SUBSEP w[i]] = 1
        }
        END {
            for (s in want) {
                f = s ".3"; p = (f in link) ? link[f] : f
                if (!((p SUBSEP s) in listed)) print s " (" f " -> " p ")"
            }
        }' - "$man"/*.3)
    [ -z "$missing" ] || fail "exported without a page listing it: $missing"
    echo "symbols: $n exported, each with a page"

    # The settings flit reads, as config.c's table names them.
    for var in $(sed -n 's/^ *{"\(FLIT_[A-Z0-9_]*\)", K_.*/\1/p' "$src/src/util/config.c"); do
        grep -q "^\.B $var\$" "$man/flit.7" || fail "flit.7 does not describe $var"
    done
    # Every status flit_strerror(3) can be asked about.
    for st in $(sed -n 's/^ *\(FLIT_ERR_[A-Z_]*\)[ ,].*/\1/p' "$src/include/flit/flit.h"); do
        grep -q "^\.B $st\$" "$man/flit_strerror.3" || fail "flit_strerror.3 does not list $st"
    done
    # The options each program's --help lists.
    for prog in "$flitrun:flitrun.1" "$bench:flit-bench.1"; do
        exe=${prog%%:*} page=${prog#*:}
        for opt in $("$exe" --help 2>&1 | grep -o -- '--[a-z][a-z-]*' | sort -u); do
            esc=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
            grep -q -- "$esc" "$man/$page" || fail "$page does not describe $opt"
        done
    done
    echo "settings and options: checked against config.c and --help"
}

[ -d "$man" ] || { echo "FAIL: no directory $man"; exit 1; }
case $mode in
lint) lint ;;
symbols) symbols "$@" ;;
*) echo "FAIL: no mode '$mode'"; exit 1 ;;
esac
[ "$bad" -eq 0 ] || exit 1
echo "PASS: man $mode"
