# SPDX-License-Identifier: BSD-3-Clause
# Runs a job that is meant to fail in a given way, and checks how it failed.
#
#   cmake -DCMD=a|b|c -DEXPECT_RC=137 [-DSTDERR_RE_0=regex ...]
#         [-DSTDOUT_RE_0=regex ...] [-DSTDERR_NOT_RE_0=regex ...]
#         [-DMAX_SECONDS=n] [-DPID_DIR=dir] [-DSTDOUT_EACH_LINE_RE=regex]
#         [-DSTDOUT_LINES=n] [-DSTDERR_EACH_LINE_RE=regex] -P expect_job.cmake
#
# CMD is the command with its arguments separated by '|'. Each STDERR_RE_i /
# STDOUT_RE_i (i = 0..9) must match the job's standard error / output; no
# STDERR_NOT_RE_i may match its standard error.
# STDOUT_EACH_LINE_RE / STDERR_EACH_LINE_RE must match every line of the
# output / error (lines of ranks spliced together fail it), and STDOUT_LINES
# is the number of lines the output must have.
# MAX_SECONDS bounds how long the job may take. With PID_DIR, the directory
# is emptied first and "--pid-dir PID_DIR" is appended to the command; the
# ranks write their pids there, and none of them may still be running after
# the job's exit.
if(NOT DEFINED CMD OR NOT DEFINED EXPECT_RC)
  message(FATAL_ERROR "expect_job.cmake: CMD and EXPECT_RC are required")
endif()
string(REPLACE "|" ";" cmd "${CMD}")
if(DEFINED PID_DIR)
  file(REMOVE_RECURSE "${PID_DIR}")
  file(MAKE_DIRECTORY "${PID_DIR}")
  list(APPEND cmd --pid-dir "${PID_DIR}")
endif()

string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 280)
string(TIMESTAMP t1 "%s")
math(EXPR took "${t1} - ${t0}")
message("---- exit status: ${rc}, ${took} s\n---- stdout:\n${out}---- stderr:\n${err}----")

set(failures "")
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  string(APPEND failures "exit status ${rc}, expected ${EXPECT_RC}\n")
endif()
foreach(i RANGE 0 9)
  if(DEFINED STDERR_RE_${i} AND NOT err MATCHES "${STDERR_RE_${i}}")
    string(APPEND failures "stderr does not match: ${STDERR_RE_${i}}\n")
  endif()
  if(DEFINED STDERR_NOT_RE_${i} AND err MATCHES "${STDERR_NOT_RE_${i}}")
    string(APPEND failures "stderr matches: ${STDERR_NOT_RE_${i}} (${CMAKE_MATCH_0})\n")
  endif()
  if(DEFINED STDOUT_RE_${i} AND NOT out MATCHES "${STDOUT_RE_${i}}")
    string(APPEND failures "stdout does not match: ${STDOUT_RE_${i}}\n")
  endif()
endforeach()
foreach(stream STDOUT STDERR)
  if(NOT DEFINED ${stream}_EACH_LINE_RE)
    continue()
  endif()
  if(stream STREQUAL "STDOUT")
    set(text "${out}")
  else()
    set(text "${err}")
  endif()
  # each line, ';' kept out of the list's way
  string(REPLACE ";" "<semicolon>" text "${text}")
  string(REGEX REPLACE "\n$" "" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "${${stream}_EACH_LINE_RE}")
      string(APPEND failures "a line of ${stream} does not match ${${stream}_EACH_LINE_RE}: '${line}'\n")
    endif()
  endforeach()
  list(LENGTH lines n)
  if(stream STREQUAL "STDOUT" AND DEFINED STDOUT_LINES AND NOT n EQUAL STDOUT_LINES)
    string(APPEND failures "stdout has ${n} lines, expected ${STDOUT_LINES}\n")
  endif()
endforeach()
if(DEFINED MAX_SECONDS AND took GREATER MAX_SECONDS)
  string(APPEND failures "took ${took} s, at most ${MAX_SECONDS} s expected\n")
endif()

if(DEFINED PID_DIR)
  file(GLOB pidfiles "${PID_DIR}/rank.*")
  if(NOT pidfiles)
    string(APPEND failures "no rank wrote its pid to ${PID_DIR}\n")
  endif()
  foreach(f ${pidfiles})
    file(STRINGS "${f}" pid LIMIT_COUNT 1)
    if(NOT pid MATCHES "^[0-9]+$" OR NOT EXISTS "/proc/${pid}/stat")
      continue()
    endif()
    file(READ "/proc/${pid}/stat" stat)
    file(READ "/proc/${pid}/cmdline" cmdline)
    # A zombie has exited; only a running rank of this job is left behind.
    if(stat MATCHES "^[0-9]+ \\(.*\\) [^ZX] " AND cmdline MATCHES "mp_")
      string(APPEND failures "${f}: pid ${pid} is still running\n")
      execute_process(COMMAND kill -9 ${pid})
    endif()
  endforeach()
endif()

if(failures)
  message(FATAL_ERROR "${failures}")
endif()
message("expect_job: OK")
