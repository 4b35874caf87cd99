#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# The layer check fails on each kind of upward dependency: a copy of src/
# with one deliberate violation at a time must be refused, naming the
# file; the untouched copy must pass.
set -u
here=$(dirname "$0")
src=${1:?usage: catches_test.sh SRC_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fresh() {
    rm -rf "$tmp/src" "$tmp/compat"
    cp -r "$src" "$tmp/src"
    if [ -d "$src/../compat" ]; then cp -r "$src/../compat" "$tmp/compat"; fi
}

expect() {   # expect WHAT FILE: the check must fail and name FILE
    out=$("$here/check_layers.sh" "$tmp/src" 2>&1)
    rc=$?
    if [ $rc -ne 1 ] || ! echo "$out" | grep -q "$2"; then
        echo "FAIL: $1 was not caught (rc $rc):"
        echo "$out"
        exit 1
    fi
    echo "caught: $1"
}

fresh
"$here/check_layers.sh" "$tmp/src" >/dev/null || { echo "FAIL: the clean tree is refused"; exit 1; }

fresh
echo '#include "am/am.h"' >> "$tmp/src/core/progress.c"
expect "core including am/" "core/progress.c"

fresh
echo '#include "core/ep.h"' >> "$tmp/src/transport/ring.c"
expect "a transport including core/" "transport/ring.c"

fresh
echo '#include "channel/channel.h"' >> "$tmp/src/transport/udp/udp.c"
expect "a transport including the channel" "transport/udp/udp.c"

fresh
echo '#include "transport/shm/shm.h"' >> "$tmp/src/core/ep.c"
expect "core including a transport's header" "core/ep.c"

fresh
echo 'static const char *const which = "udp";' >> "$tmp/src/core/stats.c"
expect "a transport's name outside its folder" "core/stats.c"

fresh
echo 'const void *fl_which(void) { return &fl_tp_self; }' >> "$tmp/src/rma/rma.c"
expect "a transport's descriptor named outside src/flit.c" "rma/rma.c"

fresh
echo 'void fl_peek(void) { fl_rma_of(0); }' >> "$tmp/src/core/stats.c"
expect "core naming rma's internals without the include" "core/stats.c"

fresh
sed -i '1i #include "stream/stream.h"' "$tmp/src/tagged/context.c"
expect "tagged including src/" "tagged/context.c"

fresh
sed -i '1i #include "../stream/stream.h"' "$tmp/src/tagged/context.c"
expect "tagged including src/ through its parent folder" "tagged/context.c"

fresh
echo 'static void say(void) { fprintf(stderr, "x\n"); }' >> "$tmp/src/group/out.c"
expect "a seated layer printing to stderr by hand" "group/out.c"

fresh
echo 'static void t(struct timespec *ts) { clock_gettime(CLOCK_MONOTONIC, ts); }' >> "$tmp/src/object/placement.c"
expect "a seated layer reading the clock by hand" "object/placement.c"

fresh
echo 'static void say(void) { fprintf(stderr, "x\n"); }' >> "$tmp/src/rpc/refuse.c"
expect "rpc printing to stderr by hand" "rpc/refuse.c"

fresh
echo 'static void t(struct timespec *ts) { clock_gettime(CLOCK_MONOTONIC, ts); }' >> "$tmp/src/tagged/progress.c"
expect "tagged reading the clock by hand" "tagged/progress.c"

fresh
echo 'static void say(void) { fprintf(stderr, "x\n"); }' >> "$tmp/src/tagged/layer.c"
expect "the tagged layer's seat printing to stderr by hand" "tagged/layer.c"

fresh
echo 'static void say(void) { perror("rpc"); }' >> "$tmp/src/rpc/layer.c"
expect "the rpc layer's seat calling perror" "rpc/layer.c"

if [ -d "$src/../compat" ]; then
    fresh
    echo '#include "core/ep.h"' >> "$tmp/compat/amudp/amudp_ep.c"
    expect "compat including src/ with quotes" "amudp/amudp_ep.c"

    fresh
    echo '#include <am/am.h>' >> "$tmp/compat/amudp/amudp_msg.c"
    expect "compat including src/ with angle brackets" "amudp/amudp_msg.c"

    fresh
    echo 'void amx_peek(void) { fl_ep_of(0); }' >> "$tmp/compat/amudp/amudp_stats.c"
    expect "compat naming flit's internals" "amudp/amudp_stats.c"
fi

echo "catches_test: every violation refused"
