#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# missing_tool_test.sh TOOL PACKAGE WORK_DIR -- COMMAND [ARGS...]
#
# Proves that a test which needs TOOL is skipped, not failed, where TOOL is
# not installed: runs COMMAND with a PATH that has everything the real PATH
# has but TOOL (a directory of links, WORK_DIR), and expects exit 77 and a
# message naming the Debian PACKAGE to install ("Debian: PACKAGE").
#
# Exit 0 pass, 1 fail, 77 skip: COMMAND skipped first for a reason of this
# machine (not root, no network namespaces), so the path was not reached.
set -u
if [ $# -lt 5 ] || [ "$4" != -- ]; then
    echo "usage: missing_tool_test.sh TOOL PACKAGE WORK_DIR -- COMMAND..."
    exit 2
fi
tool=$1 pkg=$2 farm=$3
shift 4

rm -rf "$farm"
mkdir -p "$farm" || exit 1
# Earlier PATH entries win, as they do for the shell (-n: no overwrite).
old_ifs=$IFS
IFS=:
for d in $PATH; do
    [ -d "$d" ] && cp -s -n "$d"/* "$farm"/ 2>/dev/null
done
IFS=$old_ifs
rm -f "$farm/$tool"
PATH=$farm command -v "$tool" >/dev/null 2>&1 && { echo "FAIL: $tool still found"; exit 1; }

out=$(PATH=$farm "$@" 2>&1)
rc=$?
rm -rf "$farm"
echo "$out" | sed 's/^/  | /'
if [ $rc -ne 77 ]; then
    echo "FAIL: '$*' without $tool exited $rc, not 77 (skipped)"
    exit 1
fi
case $out in
*"Debian: $pkg"*)
    echo "PASS: without $tool, '$1' is skipped and names the package $pkg"
    exit 0
    ;;
*"needs root"* | *namespaces*)
    echo "SKIP: '$1' skipped before it could look for $tool (see above)"
    exit 77
    ;;
esac
echo "FAIL: '$*' without $tool skipped but did not name the package (Debian: $pkg)"
exit 1
