# CUDA backend: GEMMs against an FP64 reference, every other op against the
# CPU backend. Label `gpu`; both exit 77 (skipped) when no device is visible
# or amptrain was built without CUDA.
amp_unit_test(test_gpu_gemm gpu)
amp_unit_test(test_gpu_kernels gpu)
if(AMP_HAVE_CUDA) # calls the module's test hook (cuda_testing.h)
  target_link_libraries(test_gpu_kernels PRIVATE amptrain_cuda CUDA::cudart)
endif()

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
