# SPDX-License-Identifier: BSD-3-Clause
# Runs one libFuzzer target for a bounded time; fails on any crash, leak,
# undefined behaviour or input that runs too long.
#
#   cmake -DFUZZER=path -DTARGET=name -DWORK=dir -DSEEDS=dir -DREGRESS=dir
#         -DSECONDS=n -P run_fuzzer.cmake
#
# WORK/corpus collects what the fuzzer finds (kept between runs, so later
# runs start further along); SEEDS and REGRESS are read only. A crashing
# input lands in WORK/artifacts: copy it into REGRESS (tests/fuzz/regress/
# TARGET/) so that fuzz_replay_TARGET keeps it as a unit test.
foreach(v FUZZER TARGET WORK SEEDS SECONDS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzzer.cmake: ${v} is required")
  endif()
endforeach()
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
set(dirs ${WORK}/corpus ${SEEDS})
if(DEFINED REGRESS AND IS_DIRECTORY ${REGRESS})
  list(APPEND dirs ${REGRESS})
endif()
# -error_exitcode: libFuzzer's default, 77, would read as "skipped" to CTest.
execute_process(
  COMMAND ${FUZZER} ${dirs} -max_total_time=${SECONDS} -rss_limit_mb=2048
          -timeout=10 -max_len=65536 -error_exitcode=1 -timeout_exitcode=1
          -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
# What matters of libFuzzer's chatter: the last status line and the stats.
string(REGEX MATCHALL "#[0-9]+[^\n]*(DONE|pulse|NEW|REDUCE)[^\n]*" status "${err}")
list(LENGTH status n)
if(n GREATER 0)
  math(EXPR last "${n} - 1")
  list(GET status ${last} final)
  message("${TARGET}: ${final}")
endif()
string(REGEX MATCHALL "stat::[a-z_]+: *[0-9]+" stats "${err}")
foreach(s ${stats})
  message("${TARGET}: ${s}")
endforeach()
if(NOT rc EQUAL 0)
  file(GLOB found ${WORK}/artifacts/*)
  message("${err}")
  message(FATAL_ERROR "${TARGET}: the fuzzer failed (exit status ${rc}). Input(s): "
          "${found}\nCopy them into ${REGRESS}/ to keep them as unit tests "
          "(fuzz_replay_${TARGET}).")
endif()
