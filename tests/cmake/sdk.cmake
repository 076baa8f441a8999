# The installed SDK, used as a new user would (tests/sdk_test.sh): install
# into a temporary prefix, build the examples and new-plugin's folders with
# find_package(amptrain) (and once with pkg-config), train with them through
# the installed binary. Each case installs on its own, so they run in any
# order or in parallel.
foreach(case examples scaler precision precision_fp8)
  add_test(NAME sdk_${case}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sdk_test.sh ${case} ${CMAKE_BINARY_DIR}
                   ${PROJECT_SOURCE_DIR} ${CMAKE_COMMAND} ${CMAKE_C_COMPILER})
  set_tests_properties(sdk_${case} PROPERTIES LABELS "sdk" TIMEOUT 300)
endforeach()
