#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# doc_check.sh README DOCS
#
# Holds README.md to what a newcomer reads in ten minutes, and every page's
# links to files that exist:
#   - README is at most 400 lines;
#   - it has a "## Contents" list whose every link is "#anchor" naming one of
#     its headings, and every "## " heading (but Contents) is in that list;
#   - every relative link of README and of DOCS/*.md, outside ``` blocks,
#     names a file or folder that exists (relative to the page), and its
#     "#anchor", if any, a heading of that page (a .md file).
# Anchors are made from headings as GitHub makes them: lower case, every
# character but letters, digits, blanks, '-' and '_' dropped, blanks turned
# into '-'. Links to http(s) and mailto addresses are not followed; man
# pages are named as text, e.g. flitrun(1), not linked, and not checked.
# Every problem is reported, then the status is 1.
set -u
[ $# -eq 2 ] || { echo "usage: doc_check.sh README DOCS"; exit 2; }
readme=$1 docs=$2
fails=0
failed() { echo "FAIL: $*"; fails=$((fails + 1)); }

# anchors FILE: the anchor of each heading of FILE, one a line.
anchors() {
    LC_ALL=C awk '/^```/ { code = !code; next }
        !code && /^#+ / {
            h = $0; sub(/^#+ /, "", h); h = tolower(h)
            gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); print h
        }' "$1"
}

# links FILE: "LINE TARGET" for each markdown link of FILE outside code.
links() {
    awk '/^```/ { code = !code; next }
        !code {
            s = $0
            while (match(s, /\]\([^) ]+\)/)) {
                print NR, substr(s, RSTART + 2, RLENGTH - 3)
                s = substr(s, RSTART + RLENGTH)
            }
        }' "$1"
}

lines=$(wc -l <"$readme")
[ "$lines" -le 400 ] || failed "$readme has $lines lines, more than 400"

# The table of contents: the list under "## Contents", to the next heading.
toc=$(awk '/^## / { in_toc = ($0 == "## Contents"); next }
           in_toc && /^- \[/ { if (match($0, /\]\([^)]*\)/)) print substr($0, RSTART + 2, RLENGTH - 3) }' "$readme")
[ -n "$toc" ] || failed "$readme: no \"## Contents\" list of links"
own=$(anchors "$readme")
for t in $toc; do
    case $t in
    \#*) printf '%s\n' "$own" | grep -qxF "${t#\#}" || failed "$readme: contents link $t names no heading" ;;
    *) failed "$readme: contents link $t is not an #anchor of this file" ;;
    esac
done
LC_ALL=C awk '/^```/ { code = !code; next }
    !code && /^## / && $0 != "## Contents" {
        h = $0; sub(/^## /, "", h); h = tolower(h)
        gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); print h
    }' "$readme" >"${TMPDIR:-/tmp}/doc_check.$$"
while read -r h; do
    printf '%s\n' "$toc" | grep -qxF "#$h" || failed "$readme: heading #$h is not in the contents"
done <"${TMPDIR:-/tmp}/doc_check.$$"
rm -f "${TMPDIR:-/tmp}/doc_check.$$"

checked=0
for page in "$readme" "$docs"/*.md; do
    [ -f "$page" ] || continue
    dir=$(dirname "$page")
    links "$page" >"${TMPDIR:-/tmp}/doc_links.$$"
    while read -r line target; do
        case $target in http://* | https://* | mailto:*) continue ;; esac
        checked=$((checked + 1))
        path=${target%%#*} anchor=
        case $target in *\#*) anchor=${target#*#} ;; esac
        file=$page
        if [ -n "$path" ]; then
            file=$dir/$path
            [ -e "$file" ] || { failed "$page:$line: $target: no file $file"; continue; }
        fi
        [ -n "$anchor" ] || continue
        case $file in *.md) ;; *) continue ;; esac
        anchors "$file" | grep -qxF "$anchor" || failed "$page:$line: $target: no heading #$anchor in $file"
    done <"${TMPDIR:-/tmp}/doc_links.$$"
    rm -f "${TMPDIR:-/tmp}/doc_links.$$"
done

[ "$fails" -eq 0 ] || { echo "$fails problem(s)"; exit 1; }
echo "PASS: $readme: $lines lines, contents match its headings; $checked relative links resolve"
