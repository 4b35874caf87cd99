#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# snippets.sh README WRAPPERS OUT INCLUDE LIBFLIT CC [FLAGS...]
#
# Compiles every ```c block of README.md against the public headers, with
# -Wall -Wextra -Werror, so that the examples there cannot drift from the
# API. Each block follows a marker, an HTML comment that renders as nothing:
#
#   <!-- snippet: program NAME [SAME_AS] -->
#       A complete program: compiled and linked against LIBFLIT as OUT/NAME
#       (the readme_NAME tests run it). SAME_AS, a path relative to the
#       README's directory, must hold the same program below its leading
#       comment.
#   <!-- snippet: fragment WRAPPER -->
#       Part of a program: compiled, not linked, inside WRAPPERS/WRAPPER.c,
#       which declares what the part uses. The block's lines before a line
#       "..." replace the wrapper's line "/* README: file scope */", the
#       lines after it (all of them when there is no "...") its line
#       "/* README: body */".
#
# A block with no marker, or a marker with no block, is an error too, and so
# is a ```c line with words after it (it would escape this check). At least
# one complete program is required unless SNIPPETS_NO_PROGRAM_OK=1 (the
# docs/ pages, docs_snippets.sh). The
# generated sources carry #line directives, so the compiler's messages name
# README.md's lines. Every failure is reported, then the status is 1.
set -u
readme=$1 wrappers=$2 out=$3 include=$4 lib=$5
shift 5
[ $# -ge 1 ] || { echo "usage: snippets.sh README WRAPPERS OUT INCLUDE LIBFLIT CC [FLAGS...]"; exit 2; }
rm -rf "$out"
mkdir -p "$out" || exit 1
flags="-std=c11 -Wall -Wextra -Werror"

# Split the README: OUT/K.top and OUT/K.body per block (K counts from 1),
# and one line per block on stdout: K LINE KIND NAME [SAME_AS].
awk -v out="$out" -v readme="$readme" '
function fail(line, msg) { printf "%s:%d: %s\n", readme, line, msg > "/dev/stderr"; bad = 1 }
# write(FILE, FIRST, LAST): block lines FIRST..LAST, after a #line naming
# the README line of FIRST.
function write(file, first, last,    i) {
    printf "#line %d \"%s\"\n", start + first, readme > file
    for (i = first; i <= last; i++) print text[i] > file
    close(file)
}
/^<!-- snippet:/ {
    if (marker) fail(marker_line, "snippet marker with no ```c block after it")
    n = split($0, w, " ")
    if (w[n] != "-->" || (w[3] != "program" && w[3] != "fragment") || n < 5 ||
        (w[3] == "fragment" && n != 5) || n > 6) {
        fail(NR, "not <!-- snippet: program NAME [SAME_AS] --> or <!-- snippet: fragment WRAPPER -->")
        next
    }
    marker = w[3] " " w[4] (n == 6 ? " " w[5] : ""); marker_line = NR
    next
}
/^```c[ \t]+[^ \t]/ { fail(NR, "```c with words after it: write ```c alone, after a snippet marker") }
/^```c[ \t]*$/ {
    if (!marker) fail(NR, "```c block with no <!-- snippet: ... --> line before it")
    k++
    print k, NR + 1, (marker ? marker : "fragment unmarked")
    marker = ""
    inblock = 1; start = NR; lines = 0; sep = 0
    next
}
inblock && /^```[ \t]*$/ {
    # text[1..sep-1] is the file-scope part, text[sep+1..lines] the body.
    inblock = 0
    if (sep) write(out "/" k ".top", 1, sep - 1)
    else printf "" > (out "/" k ".top")
    write(out "/" k ".body", sep + 1, lines)
    next
}
inblock && /^\.\.\.[ \t]*$/ && !sep { text[++lines] = ""; sep = lines; next }
inblock { text[++lines] = $0; next }
marker && !/^[ \t]*$/ { fail(marker_line, "snippet marker not right before a ```c block"); marker = "" }
END {
    if (inblock) fail(NR, "```c block never closed")
    if (marker) fail(marker_line, "snippet marker with no ```c block after it")
    exit bad
}' "$readme" >"$out/blocks" || exit 1
[ -s "$out/blocks" ] || { echo "FAIL: no \`\`\`c block in $readme"; exit 1; }

fails=0
failed() { echo "FAIL: $*"; fails=$((fails + 1)); }
# wrap WRAPPER K: WRAPPER with block K's parts put in, on stdout.
wrap() {
    awk -v top="$out/$2.top" -v body="$out/$2.body" -v self="$1" '
    function put(file) {
        while ((getline l < file) > 0) print l
        close(file)
        printf "#line %d \"%s\"\n", NR + 1, self
        seen++
    }
    /^[ \t]*\/\* README: file scope \*\/[ \t]*$/ { put(top); next }
    /^[ \t]*\/\* README: body \*\/[ \t]*$/ { put(body); next }
    { print }
    END { if (seen != 2) { print "#error wrapper " self " lacks a README: placeholder"; exit 1 } }' "$1"
}
programs=0
while read -r k line kind name same; do
    if [ "$kind" = program ]; then
        programs=$((programs + 1))
        if [ -s "$out/$k.top" ]; then
            failed "$readme:$line: a complete program cannot have a \"...\" line: mark it a fragment"
            continue
        fi
        cp "$out/$k.body" "$out/$name.c"
        if [ -n "$same" ]; then
            # Below the file's leading comments (licence, header) and the
            # blank lines between and after them.
            awk '!s && /^\/\*/ { c = 1 }
                 c { if (/\*\//) c = 0; next }
                 !s && /^$/ { next }
                 { s = 1; print }' "$(dirname "$readme")/$same" >"$out/$name.same"
            sed 1d "$out/$name.c" | diff -u --label "$same" --label "$readme:$line" "$out/$name.same" - >"$out/$name.diff" ||
                { cat "$out/$name.diff"; failed "$readme:$line: the program differs from $same"; }
        fi
        "$@" $flags -I"$include" -o "$out/$name" "$out/$name.c" "$lib" -Wl,-rpath,"$(dirname "$lib")" ||
            failed "$readme:$line: program $name does not build"
    else
        wrapper=$wrappers/$name.c
        [ -f "$wrapper" ] || { failed "$readme:$line: no wrapper $wrapper"; continue; }
        wrap "$wrapper" "$k" >"$out/$k-$name.c" &&
            "$@" $flags -I"$include" -c -o "$out/$k-$name.o" "$out/$k-$name.c" ||
            failed "$readme:$line: fragment in $name.c does not compile"
    fi
done <"$out/blocks"
[ "$programs" -ge 1 ] || [ "${SNIPPETS_NO_PROGRAM_OK:-0}" = 1 ] ||
    failed "no <!-- snippet: program ... --> in $readme"
n=$(wc -l <"$out/blocks")
[ "$fails" -eq 0 ] || { echo "$fails of $n C blocks failed"; exit 1; }
echo "PASS: $n C blocks of $readme compile ($programs complete program(s))"
