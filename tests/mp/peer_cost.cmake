# SPDX-License-Identifier: BSD-3-Clause
# What a peer never contacted costs: two idle jobs (mp_scale --mode idle) of
# SMALL and LARGE ranks each print every rank's heap growth over flit_init
# and flit_ep_create; the largest of each job, differenced and divided by
# the ranks added, is what one more peer costs an endpoint that never talks
# to it. It must stay within LIMIT bytes.
#
#   cmake -DFLITRUN=... -DPROG=... -DSMALL=16 -DLARGE=128 -DLIMIT=1024
#         -P peer_cost.cmake
#
# The environment (FLIT_TRANSPORT) comes from the test. Under an allocator
# that mallinfo2 does not see (a sanitizer's), both jobs read 0: SKIP.
foreach(v FLITRUN PROG SMALL LARGE LIMIT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "peer_cost.cmake: ${v} is required")
  endif()
endforeach()

function(largest_heap n out_var)
  execute_process(COMMAND ${FLITRUN} -n ${n} --timeout 200 ${PROG} --mode idle
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 240)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the job of ${n} ranks exited ${rc}:\n${out}${err}")
  endif()
  string(REGEX MATCHALL "idle: rank [0-9]+ heap [0-9]+" lines "${out}")
  list(LENGTH lines got)
  if(NOT got EQUAL n)
    message(FATAL_ERROR "${got} of ${n} ranks said their heap:\n${out}${err}")
  endif()
  set(most 0)
  foreach(l IN LISTS lines)
    string(REGEX REPLACE ".* heap " "" b "${l}")
    if(b GREATER most)
      set(most ${b})
    endif()
  endforeach()
  set(${out_var} ${most} PARENT_SCOPE)
endfunction()

largest_heap(${SMALL} small)
largest_heap(${LARGE} large)
message("heap over creation, the largest rank's: ${small} bytes at ${SMALL} ranks, "
        "${large} at ${LARGE}")
if(small EQUAL 0 AND large EQUAL 0)
  message("SKIP: mallinfo2 sees nothing of this allocator")
  return()
endif()
if(large LESS small)
  set(large ${small})
endif()
math(EXPR per_peer "(${large} - ${small}) / (${LARGE} - ${SMALL})")
message("a peer never contacted: ${per_peer} bytes (at most ${LIMIT})")
if(per_peer GREATER LIMIT)
  message(FATAL_ERROR "a peer never contacted costs ${per_peer} bytes of heap, more "
                      "than ${LIMIT}")
endif()
