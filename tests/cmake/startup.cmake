# The start-up step (core/process/startup.c): one restart at most, the executable
# found when started through the dynamic loader or without /proc, a stop
# signal while starting carried across the restart (tests/startup/).
function(amp_startup_test name)
  add_test(NAME startup_${name}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/startup/${name}.sh ${ARGN}
                   ${CMAKE_BINARY_DIR}/tests/startup_runs/${name})
  set_tests_properties(startup_${name} PROPERTIES LABELS "cli;startup" TIMEOUT 300
                       SKIP_RETURN_CODE 77)
endfunction()
amp_startup_test(restart_once $<TARGET_FILE:amptrain>)
amp_startup_test(loader $<TARGET_FILE:amptrain>)
amp_startup_test(signal $<TARGET_FILE:amptrain_testmodels>)
