# Metrics where people look: metrics.csv beside metrics.jsonl, and with
# [run] tensorboard = true TensorBoard event files, read back record by
# record by tb_decode (framing, masked CRC-32C, Event protobufs) and
# compared with metrics.jsonl; through resumes and a failed run.
add_executable(tb_decode ${CMAKE_CURRENT_SOURCE_DIR}/tensorboard/tb_decode.c)
target_link_libraries(tb_decode PRIVATE amp_core)
target_compile_options(tb_decode PRIVATE ${AMP_C_WARNINGS})
add_test(NAME output_tensorboard
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tensorboard/tensorboard.sh $<TARGET_FILE:amptrain>
                 $<TARGET_FILE:tb_decode> ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/tiny_sgd.ini
                 ${CMAKE_CURRENT_SOURCE_DIR}/configs/gpt_scaled_tiny.ini
                 ${CMAKE_BINARY_DIR}/tests/tensorboard_runs)
set_tests_properties(output_tensorboard PROPERTIES LABELS "output;cli" TIMEOUT 300)
