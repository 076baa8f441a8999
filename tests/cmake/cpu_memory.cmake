# A CPU run maps no CUDA library and reports its peak RSS beside the arena
# bytes (tests/cpu_run_memory.sh), at the nanoGPT shape.
add_test(NAME cpu_run_memory
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cpu_run_memory.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs/gpt_shakespeare_fp32.ini)
set_tests_properties(cpu_run_memory PROPERTIES LABELS "train;cli" TIMEOUT 300)
