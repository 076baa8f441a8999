# amp_expect_fail(NAME [ENV var=value...] [OPTIONS driver-options...]
#                 CODE code REGEX regex COMMAND cmd args...)
# One CTest test that runs cmd through tests/expect_fail.sh: it passes when
# cmd exits with `code` and its stderr matches `regex` (see the script for
# the driver options). Pass regexes as bracket arguments ([=[...]=]) so
# backslashes reach grep untouched; avoid ';' in them (CMake list separator).
include_guard(GLOBAL)

set(AMP_EXPECT_FAIL ${CMAKE_CURRENT_LIST_DIR}/expect_fail.sh)

function(amp_expect_fail name)
  cmake_parse_arguments(PARSE_ARGV 1 EF "" "CODE;REGEX" "ENV;OPTIONS;COMMAND;LABELS")
  if(NOT DEFINED EF_CODE OR NOT DEFINED EF_REGEX OR NOT EF_COMMAND)
    message(FATAL_ERROR "amp_expect_fail(${name}): CODE, REGEX and COMMAND are required")
  endif()
  add_test(NAME ${name}
           COMMAND sh ${AMP_EXPECT_FAIL} ${EF_OPTIONS} ${EF_CODE} ${EF_REGEX} ${EF_COMMAND})
  if(EF_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${EF_ENV}")
  endif()
  if(EF_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${EF_LABELS}")
  endif()
endfunction()
