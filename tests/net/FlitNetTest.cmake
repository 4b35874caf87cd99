# SPDX-License-Identifier: BSD-3-Clause
# flit_net_test: a test whose command runs beside a network of hosts made of
# network namespaces (netns.sh), set up before it and torn down after it,
# whatever way it ends.
#
#   flit_net_test(NAME name HOSTS n
#                 [LOSS pct] [DUP | DUP_PCT pct] [DELAY ms] [MTU bytes]
#                 [TIMEOUT s] [LABELS label...]
#                 COMMAND cmd [args...])
#
# LOSS: each host drops pct% of the IPv4 UDP frames it receives. DUP: each
# host sends every IPv4 UDP packet twice; DUP_PCT: pct% of them. DELAY: netem
# delay on every host's egress (the test skips where the kernel has no netem).
# TIMEOUT (default 60): CTest's; the command itself gets 10 s less, so that a
# hang still ends in a teardown.
#
# The command runs in the caller's namespace (it can start processes in a
# host with `ip netns exec $FLITNET_NS<i> ...` or `$FLITNET_SH exec
# $FLITNET_PREFIX <i> ...`) with this environment:
#   FLITNET_PREFIX   namespaces are $FLITNET_PREFIX-h0 .. -h<n-1> (and -sw)
#   FLITNET_HOSTS    n
#   FLITNET_NS<i>    namespace of host i          FLITNET_NSLIST    comma list
#   FLITNET_ADDR<i>  IPv4 address of host i       FLITNET_ADDRLIST  comma list
#   FLITNET_SUBNET   A.B.C.0/24; FLITNET_IFNAME   eth0; FLITNET_MTU
#   FLITNET_LOSS, FLITNET_DUP (percent), FLITNET_DELAY (ms)
#   FLITNET_SH       netns.sh, e.g. "$FLITNET_SH set-loss $FLITNET_PREFIX 5"
#
# If the first word of COMMAND is an executable target (defined before the
# call), it is replaced by the target's file. Exit 77 means skipped: from the
# command, or from netns.sh where the machine cannot build the network (not
# root, no namespaces as in an unprivileged container, no nftables).
#
# The namespace prefix is fn-<name>-<hash of build tree and name>: distinct
# for every test, so tests run concurrently (ctest -j), and the same from
# run to run, so that a test killed outright is cleaned up by its next run
# (`netns.sh gc` cleans up after any).

set_property(GLOBAL PROPERTY FLIT_NETNS_SH ${CMAKE_CURRENT_LIST_DIR}/netns.sh)

function(flit_net_test)
  cmake_parse_arguments(PARSE_ARGV 0 A "DUP"
                        "NAME;HOSTS;LOSS;DUP_PCT;DELAY;MTU;TIMEOUT" "LABELS;COMMAND")
  if(NOT A_NAME OR NOT A_HOSTS OR NOT A_COMMAND OR A_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "flit_net_test(${A_NAME}): NAME, HOSTS and COMMAND "
                        "are required; unknown: ${A_UNPARSED_ARGUMENTS}")
  endif()
  get_property(netns GLOBAL PROPERTY FLIT_NETNS_SH)

  set(opts)
  if(DEFINED A_LOSS)
    list(APPEND opts --loss ${A_LOSS})
  endif()
  if(A_DUP)
    list(APPEND opts --dup)
  elseif(DEFINED A_DUP_PCT)
    list(APPEND opts --dup=${A_DUP_PCT})
  endif()
  if(DEFINED A_DELAY)
    list(APPEND opts --delay ${A_DELAY})
  endif()
  if(DEFINED A_MTU)
    list(APPEND opts --mtu ${A_MTU})
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 60)
  endif()
  math(EXPR inner "${A_TIMEOUT} - 10")
  if(inner LESS 5)
    set(inner 5)
  endif()

  string(MD5 hash "${CMAKE_BINARY_DIR}:${A_NAME}")
  string(SUBSTRING "${hash}" 0 6 hash)
  string(REGEX REPLACE "[^A-Za-z0-9_-]" "_" tag "${A_NAME}")
  string(SUBSTRING "${tag}" 0 24 tag)
  set(prefix "fn-${tag}-${hash}")

  list(GET A_COMMAND 0 cmd0)
  if(TARGET "${cmd0}")
    list(REMOVE_AT A_COMMAND 0)
    list(INSERT A_COMMAND 0 "$<TARGET_FILE:${cmd0}>")
  endif()

  add_test(NAME ${A_NAME}
           COMMAND ${netns} run ${prefix} ${A_HOSTS} ${opts} --timeout ${inner}
                   -- ${A_COMMAND})
  set(labels net ${A_LABELS})
  set_tests_properties(${A_NAME} PROPERTIES TIMEOUT ${A_TIMEOUT}
                       SKIP_RETURN_CODE 77 LABELS "${labels}")
endfunction()
