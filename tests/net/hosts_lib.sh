# shellcheck shell=bash
# SPDX-License-Identifier: BSD-3-Clause
# Helpers for the scripts that run jobs on the test network (sourced; bash;
# FLITNET_* set by netns.sh run). The sourcing script sets FAILS=0 first.
#
#   fail MSG             counts a failure and says it on stderr
#   host_pids            the pids of every process in every host
#   check_hosts_empty    fails unless the hosts are empty within ~10 s
#   expect_in FILE TEXT  fails unless FILE holds TEXT (fixed string)
#   mpirun_agent DIR H PER  writes DIR/agent, Open MPI's rsh agent for the
#                        first H hosts, and sets MPIRUN_HOSTS to mpirun's
#                        --host list, PER slots a host

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

# Open MPI's rsh agent for the test network. mpirun calls it as AGENT NODE
# COMMAND... (where it would run ssh); the nodes are named nodeI (Open MPI
# takes no '_' in a node name, as the namespaces have). It logs the node to
# DIR/calls and runs the command (Open MPI's daemon) in that host's
# namespaces, with NODE for hostname: Open MPI takes ranks of one hostname
# for one node, and would have them share memory across hosts.
mpirun_agent() {
  local dir=$1 hosts=$2 per=$3 i ns map=""
  MPIRUN_HOSTS=""
  for ((i = 0; i < hosts; i++)); do
    ns=FLITNET_NS$i
    MPIRUN_HOSTS="$MPIRUN_HOSTS${MPIRUN_HOSTS:+,}node$i:$per"
    map="$map  node$i) ns=${!ns} ;;
"
  done
  cat >"$dir/agent" <<SH
#!/bin/sh
node=\$1
shift
case \$node in
$map  *) echo "agent: unknown node \$node" >&2; exit 1 ;;
esac
echo "\$node" >>"$dir/calls"
exec ip netns exec "\$ns" unshare --ipc --uts sh -c "hostname \$node && exec \$*"
SH
  chmod +x "$dir/agent"
}
