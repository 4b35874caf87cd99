#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# docs_snippets.sh DOCS WRAPPERS OUT INCLUDE LIBFLIT CC [FLAGS...]
#
# Compiles every ```c block of every DOCS/*.md page as snippets.sh does the
# README's (its header says how blocks are marked: a complete program is
# compiled and linked, and compared with its file under examples/ when the
# marker names one; a fragment is compiled inside a wrapper of WRAPPERS that
# declares what it uses). A page may hold no program, or no C at all; a page
# with a ```c block or a snippet marker is checked, each into OUT/PAGE. The
# pages are listed when the test runs, so a new page is covered at once.
# Every page is checked, then the status is 1 if any failed.
set -u
[ $# -ge 6 ] || { echo "usage: docs_snippets.sh DOCS WRAPPERS OUT INCLUDE LIBFLIT CC [FLAGS...]"; exit 2; }
docs=$1 wrappers=$2 out=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out" || exit 1
fails=0 pages=0
for page in "$docs"/*.md; do
    [ -f "$page" ] || continue
    grep -q -e '^```c' -e '^<!-- snippet:' "$page" || continue
    pages=$((pages + 1))
    name=$(basename "$page" .md)
    SNIPPETS_NO_PROGRAM_OK=1 "$here/snippets.sh" "$page" "$wrappers" "$out/$name" "$@" ||
        fails=$((fails + 1))
done
[ "$pages" -ge 1 ] || { echo "FAIL: no page of $docs holds a C block"; exit 1; }
[ "$fails" -eq 0 ] || { echo "FAIL: $fails of $pages pages"; exit 1; }
echo "PASS: the C blocks of $pages pages of $docs compile"
