# The code builds with warnings as errors under clang too (clang 14 failed on
# core/plugins/loader.c, bench/bench_peak.c and gcc's -Wno-format-truncation):
# tests/clang_build.sh. Label `clang`; only where clang is installed.
find_program(AMP_CLANG clang)
if(AMP_CLANG)
  add_test(NAME build_clang
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/clang_build.sh ${CMAKE_COMMAND} ${PROJECT_SOURCE_DIR}
                   ${CMAKE_BINARY_DIR}/tests/build_clang ${CMAKE_GENERATOR} ${AMP_CLANG}
                   "${CMAKE_C_COMPILER_LAUNCHER}")
  set_tests_properties(build_clang PROPERTIES LABELS clang TIMEOUT 900)
endif()
