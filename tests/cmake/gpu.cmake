# CUDA backend: GEMMs against an FP64 reference, every other op against the
# CPU backend, each op and shape a row of tests/gpu_rows.h. Label `gpu`; both
# exit 77 (skipped) when no device is visible or amptrain was built without
# CUDA.
amp_unit_test(test_gpu_gemm gpu)
amp_unit_test(test_gpu_kernels gpu)
if(AMP_HAVE_CUDA) # calls the module's test hook (cuda_testing.h)
  target_link_libraries(test_gpu_kernels PRIVATE amptrain_cuda CUDA::cudart)
endif()

# The row harness itself where there is no GPU: every op table with the CPU
# on both sides (--self-check) passes, and with one op of the second CPU
# broken on purpose (--perturb) exactly the rows using it fail, named in the
# summary, while every other row still runs and passes.
foreach(_t test_gpu_gemm test_gpu_kernels test_gpu_transformer test_gpu_cnn)
  add_test(NAME gpu_rows_self_check_${_t} COMMAND ${_t} --self-check)
  set_tests_properties(gpu_rows_self_check_${_t} PROPERTIES LABELS cli)
endforeach()
unset(_t)
add_test(NAME gpu_rows_perturbed_act_forward
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_fail.sh 1
                 "^test_gpu_kernels: 1 of 18 op row\\(s\\) failed \\([0-9]+ check\\(s\\)\\): act n100003$"
                 $<TARGET_FILE:test_gpu_kernels> --self-check --perturb act_forward)
add_test(NAME gpu_rows_perturbed_scale
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_fail.sh 1
                 "^test_gpu_kernels: 1 of 18 op row\\(s\\) failed \\([0-9]+ check\\(s\\)\\): scale n2097169$"
                 $<TARGET_FILE:test_gpu_kernels> --self-check --perturb scale)
set_tests_properties(gpu_rows_perturbed_act_forward gpu_rows_perturbed_scale PROPERTIES LABELS cli)

# The op-row harness the GPU op tests share (tests/op_rows.h), checked on the
# CPU, and once more built with one row broken on purpose (AMP_TEST_BREAK_OP:
# tests/CMakeLists.txt builds the `gpu` tests so when it is set).
amp_unit_test(test_op_rows cli)
add_executable(test_op_rows_break ${CMAKE_CURRENT_SOURCE_DIR}/test_op_rows.c)
target_compile_options(test_op_rows_break PRIVATE ${AMP_C_WARNINGS})
target_compile_definitions(test_op_rows_break PRIVATE AMP_TEST_BREAK_OP="pass first")
add_test(NAME test_op_rows_break COMMAND test_op_rows_break)
set_tests_properties(test_op_rows_break PROPERTIES LABELS cli)

# ptxas spills no register of any CUDA kernel at sm_90 (nvcc only, no GPU).
if(AMP_HAVE_CUDA)
  add_test(NAME cuda_no_spills COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/cuda-no-spills.sh 90)
  set_tests_properties(cuda_no_spills PROPERTIES ENVIRONMENT AMP_NVCC=${CMAKE_CUDA_COMPILER}
                       LABELS cli TIMEOUT 900)
endif()

# Host round trips inside forward/backward on the CUDA backend
# (backend.host_round_trips_per_step), the tiny GPT a few steps each: none
# under fp8's delayed scaling; under fp8 current and nvfp4 exactly the CPU
# backend's count for the same run (the amaxes and NVFP4 tensor scales that
# still come back to the host, nothing else). tests/gpu_host_trips.sh; exits
# 77 without a GPU. scripts/gpu-check.sh runs it in its ctest part.
add_test(NAME gpu_host_round_trips
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/gpu_host_trips.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/configs/gpt_scaled_tiny.ini
                 ${CMAKE_BINARY_DIR}/tests/gpu_host_trips)
set_tests_properties(gpu_host_round_trips PROPERTIES LABELS "gpu;fp8;nvfp4" SKIP_RETURN_CODE 77)
