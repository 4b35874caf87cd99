# shellcheck shell=bash
# SPDX-License-Identifier: BSD-3-Clause
# Helpers for the scripts that run jobs on the test network (sourced; bash;
# FLITNET_* set by netns.sh run). The sourcing script sets FAILS=0 first.
#
#   fail MSG             counts a failure and says it on stderr
#   host_pids            the pids of every process in every host
#   check_hosts_empty    fails unless the hosts are empty within ~10 s
#   expect_in FILE TEXT  fails unless FILE holds TEXT (fixed string)

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }

host_pids() {
  local i ns
  for ((i = 0; i < FLITNET_HOSTS; i++)); do
    ns=FLITNET_NS$i
    ip netns pids "${!ns}"
  done
}

# The ranks are reaped by flitrun before it exits; a bounded look for strays.
check_hosts_empty() {
  local i
  for ((i = 0; i < 100; i++)); do
    [ -z "$(host_pids)" ] && return 0
    sleep 0.1
  done
  fail "processes left in the hosts: $(host_pids | tr '\n' ' ')"
}

expect_in() {
  grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks '$2'"
}
