#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Dependencies point down: a file of one layer may include headers of its
# own folder and of the layers below it, never above. The order, bottom up
# (docs/architecture.md):
#
#   util platform boot transport channel core am stream rma
#
# Above those, layers built on the public API alone (tagged, and rpc,
# group, object, compat when they exist) include nothing from src/: only
# <flit/...> and headers of their own folder. Lower layers also may not
# name an upper layer's internals (its fl_ functions, types, FL_ constants,
# opcodes) even without the include. src/flit.c, which lists what the build
# is made of, is the top, and the only file outside a transport's folder
# that names the transport.
#
#   check_layers.sh [SRC_DIR]     exit 0: clean; 1: a violation (each
#                                 printed as file:line: what is wrong)
set -u
src=${1:-$(dirname "$0")/../../src}
order="util platform boot transport channel core am stream rma"
public_only="tagged rpc group object compat"
# Of those, the ones seated as layers (<flit/layer.h>): they log through
# flit_log and read the clock with flit_clock_ns, never by hand, so that
# the log's prefix, its levels and FLIT_VERBOSE are the library's.
seated="group object tagged rpc"

rank() {
    i=0
    for l in $order; do
        [ "$l" = "$1" ] && { echo $i; return; }
        i=$((i + 1))
    done
    echo -1
}

# What names an upper layer's internals.
names_of() {
    case $1 in
    am) echo 'fl_am_|FL_AMF?_|FL_OP_AM_|FL_OP_RETURN|fl_handler_slot|FL_TOKEN_POOL' ;;
    stream) echo 'fl_stream|fl_st_|FL_STF?_|FL_OP_STREAM' ;;
    rma) echo 'fl_rma|FL_RMA|FL_OP_RMA' ;;
    esac
}

bad=0
report() {
    echo "$1"
    bad=1
}

# Code only: line with its comments dropped (c: inside a comment that
# spans lines; reset at each file's first line).
code_of='
function code_of(line,    code, k, s2) {
    code = ""
    while (line != "") {
        if (c) {
            k = index(line, "*/")
            if (!k) return code
            line = substr(line, k + 2); c = 0
        } else {
            k = index(line, "/*"); s2 = index(line, "//")
            if (s2 && (!k || s2 < k)) return code substr(line, 1, s2 - 1)
            if (!k) return code line
            code = code substr(line, 1, k - 1); line = substr(line, k + 2); c = 1
        }
    }
    return code
}'

# One awk pass per folder: includes by rank, then names outside comments.
check=$code_of'
BEGIN { n = split(order, o, " "); for (i = 1; i <= n; i++) rk[o[i]] = i - 1 }
FNR == 1 { c = 0 }
{
    line = $0
    if (match(line, /^[ \t]*#[ \t]*include[ \t]*"[a-z_]+\//)) {
        d = substr(line, RSTART, RLENGTH)
        sub(/^[^"]*"/, "", d); sub(/\/$/, "", d)
        if (d != "flit") {
            if (!(d in rk))
                printf "%s:%d: %s includes %s/, which is not below it\n", FILENAME, FNR, me, d
            else if (rk[d] > rk[me])
                printf "%s:%d: %s includes %s/, a layer above it\n", FILENAME, FNR, me, d
        }
    }
    code = code_of(line)
    if (pat != "" && match(code, "(^|[^A-Za-z0-9_])(" pat ")"))
        printf "%s:%d: %s names the internals of a layer above: %s\n", FILENAME, FNR, me, code
}'

for layer in $order; do
    [ -d "$src/$layer" ] || continue
    me=$(rank "$layer")
    pat=""
    for up in $order; do
        [ "$(rank "$up")" -gt "$me" ] || continue
        n=$(names_of "$up")
        [ -n "$n" ] && pat="${pat:+$pat|}$n"
    done
    find "$src/$layer" -name '*.[ch]' | sort |
        xargs awk -v order="$order" -v me="$layer" -v pat="$pat" "$check"
done > /tmp/check_layers.$$

# A quoted include there names flit/... or a header of the layer's own
# folder (no slash: the including file's directory is searched first).
for layer in $public_only; do
    [ -d "$src/$layer" ] || continue
    grep -rn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$src/$layer" |
        grep -v 'include[[:space:]]*"flit/' |
        grep -v 'include[[:space:]]*"[^"/]*"' |
        while IFS= read -r hit; do
            echo "${hit%%:*}:$(echo "$hit" | cut -d: -f2): $layer is built on the public API alone: include <flit/...> only"
        done
done >> /tmp/check_layers.$$

for layer in $seated; do
    [ -d "$src/$layer" ] || continue
    grep -rnE '(^|[^a-z_])(fprintf[[:space:]]*\([[:space:]]*stderr|perror[[:space:]]*\(|clock_gettime[[:space:]]*\()' \
        "$src/$layer" --include='*.[ch]' |
        while IFS= read -r hit; do
            echo "${hit%%:*}:$(echo "$hit" | cut -d: -f2): $layer writes its own log or clock: flit_log / flit_clock_ns (<flit/layer.h>)"
        done
done >> /tmp/check_layers.$$

# A transport is named only in its own folder and in src/flit.c, the list
# of what the build is made of: elsewhere no code (comments aside) includes
# its headers, writes its name as a string, or names its descriptor or
# datagram ops (fl_tp_<name>, fl_dgram_<name>), so that adding one touches
# nothing shared.
tp_check=$code_of'
FNR == 1 { c = 0 }
{
    code = code_of($0)
    if (index(code, "\"transport/" tp "/") || index(code, "\"" tp "\"") ||
        match(code, "(^|[^A-Za-z0-9_])fl_(tp|dgram)_" tp "([^A-Za-z0-9_]|$)"))
        printf "%s:%d: names the %s transport outside its folder and src/flit.c: %s\n", FILENAME, FNR, tp, code
}'
for dir in "$src"/transport/*/; do
    tp=$(basename "$dir")
    find "$src" -name '*.[ch]' ! -path "$src/transport/$tp/*" ! -path "$src/flit.c" | sort |
        xargs awk -v tp="$tp" "$tp_check"
done >> /tmp/check_layers.$$

# compat/: a quoted include names a file of the library's own folder (no
# slash) or flit/...; an angled one names no folder of src/; no internals.
compat=$src/../compat
if [ -d "$compat" ]; then
    dirs=$(echo "$order tagged rpc group object src" | sed 's/ /|/g')
    find "$compat" -name '*.[ch]' | sort | while IFS= read -r f; do
        awk -v dirs="$dirs" '
        /^[ \t]*#[ \t]*include[ \t]*"/ {
            d = $0; sub(/^[^"]*"/, "", d); sub(/".*$/, "", d)
            if (index(d, "/") && d !~ /^flit\//)
                printf "%s:%d: compat is built on the public API alone: include <flit/...> only, not \"%s\"\n", FILENAME, FNR, d
        }
        /^[ \t]*#[ \t]*include[ \t]*</ {
            d = $0; sub(/^[^<]*</, "", d); sub(/>.*$/, "", d)
            if (d ~ ("^(" dirs ")/"))
                printf "%s:%d: compat includes <%s>, which is inside src/\n", FILENAME, FNR, d
        }
        /(^|[^A-Za-z0-9_])(fl_[a-z]|FL_[A-Z])/ && !/^[ \t]*(\/?\*|\/\/)/ {
            printf "%s:%d: compat names flit internals: %s\n", FILENAME, FNR, $0
        }' "$f"
    done >> /tmp/check_layers.$$
fi

if [ -s /tmp/check_layers.$$ ]; then
    cat /tmp/check_layers.$$
    rm -f /tmp/check_layers.$$
    exit 1
fi
rm -f /tmp/check_layers.$$
echo "layers: dependencies point down in $src${compat:+ and $compat}"
exit 0
