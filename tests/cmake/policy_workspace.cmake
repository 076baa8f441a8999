# A 16-bit policy's workspace plus backend scratch is no larger than
# fp32's on the nanoGPT Shakespeare GPT, and per-tensor FP8's activations
# at most 0.83x bf16's (tests/policy_workspace.sh).
add_test(NAME policy_workspace
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/policy_workspace.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs)
set_tests_properties(policy_workspace PROPERTIES LABELS "train;cli" TIMEOUT 300)
