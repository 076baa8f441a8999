# GEMM paths chosen by measurement (core/backend/cpu_gemm_tune.h): measured
# once and cached, the cache followed, concurrent runs agreeing, damaged and
# unwritable caches, the pins (AMPTRAIN_GEMM, [run] gemm_path), and a resume
# that keeps its checkpoint's paths whatever the cache says now.
add_test(NAME gemm_paths_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gemm/paths_cli.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${CMAKE_BINARY_DIR}/tests/gemm_paths/cli)
set_tests_properties(gemm_paths_cli PROPERTIES LABELS "gemm;cli" TIMEOUT 300)
add_test(NAME gemm_paths_resume
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/gemm_paths_resume.sh
                 $<TARGET_FILE:amptrain> ${PROJECT_SOURCE_DIR}/configs
                 ${CMAKE_BINARY_DIR}/tests/gemm_paths/resume)
set_tests_properties(gemm_paths_resume PROPERTIES LABELS "gemm;checkpoint;cli" TIMEOUT 300)
