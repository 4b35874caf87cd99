#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-format.sh [BASE]: the C lines changed since BASE follow .clang-format
# (`make format-check`, run by `make test`). Only changed lines are checked:
# the tree as a whole is not formatted yet.
#
# BASE: the argument, else $FLIT_FORMAT_BASE, else the merge base of HEAD
# with its upstream branch (what a branch adds), else HEAD (what is not
# committed yet). Changed means `git diff -U0 BASE` (staged or not) plus new
# files git does not ignore. Prints what clang-format would change, and
# changes nothing. Exit 0 clean (or skipped: git, clang-format or
# clang-format-diff missing, or not a git checkout), 1 not formatted.
set -u
cd "$(dirname "$0")/.." || exit 1

skip() { echo "format-check: skipped: $*"; exit 0; }
command -v git >/dev/null 2>&1 || skip "git not found (Debian: git)"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || skip "not a git checkout"
command -v clang-format >/dev/null 2>&1 || skip "clang-format not found (Debian: clang-format)"
diff_tool=$(command -v clang-format-diff ||
    find /usr/bin -maxdepth 1 -name 'clang-format-diff-*' 2>/dev/null | sort -V | tail -n 1)
[ -n "$diff_tool" ] || skip "clang-format-diff not found (Debian: clang-format)"
command -v python3 >/dev/null 2>&1 || skip "python3 not found (Debian: python3)"

base=${1:-${FLIT_FORMAT_BASE:-}}
if [ -z "$base" ]; then
    upstream=$(git rev-parse --abbrev-ref --symbolic-full-name '@{upstream}' 2>/dev/null)
    base=HEAD
    [ -n "$upstream" ] && base=$(git merge-base HEAD "$upstream")
fi
git rev-parse --verify -q "$base^{commit}" >/dev/null || { echo "format-check: no commit '$base'"; exit 1; }

tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
git diff -U0 --no-color --no-ext-diff "$base" -- '*.c' '*.h' >"$tmp"
git ls-files -z --others --exclude-standard -- '*.c' '*.h' |
    xargs -0 -r -n 1 git diff -U0 --no-color --no-index /dev/null >>"$tmp"
n=$(grep -c '^+++ ' "$tmp")
out=$("$diff_tool" -p1 -binary "$(command -v clang-format)" <"$tmp") || {
    echo "format-check: $diff_tool failed"
    exit 1
}
if [ -n "$out" ]; then
    echo "$out"
    echo "format-check: changed lines since $base do not follow .clang-format (above: what"
    echo "clang-format would make of them; clang-format-diff -p1 -i applies it)"
    exit 1
fi
echo "format-check: changed lines in $n C file(s) since $(git rev-parse --short "$base") follow .clang-format"
