# Numerics: FP16/BF16 conversions and rounding telemetry (core/backend/kernels/convert.h).
amp_unit_test(test_convert numerics)
# The fixed order of the CUDA reductions (core/backend/kernels/reduce.h), on the CPU.
amp_unit_test(test_reduce numerics)
# The CPU backend's kernels on every instruction-set path this machine has:
# bit-identical to the scalar functions, fused ops equal to the separate
# ones, results independent of the thread count.
amp_unit_test(test_cpu_kernels numerics)
# amptrain's erf (the GELU's) against double-precision erf: max ulp bound.
amp_unit_test(test_erf numerics)
target_link_libraries(test_cpu_kernels PRIVATE OpenMP::OpenMP_C)
# GEMMs of every instruction-set path against an FP64 reference (77 where
# the CPU lacks the path); the generic path runs OpenBLAS, the others oneDNN.
add_executable(test_cpu_gemm ${CMAKE_CURRENT_SOURCE_DIR}/test_cpu_gemm.c)
target_link_libraries(test_cpu_gemm PRIVATE amp_core)
target_compile_options(test_cpu_gemm PRIVATE ${AMP_C_WARNINGS})
foreach(isa generic avx2 avx512 avx512_bf16)
  add_test(NAME test_cpu_gemm_${isa} COMMAND test_cpu_gemm)
  set_tests_properties(test_cpu_gemm_${isa} PROPERTIES LABELS numerics SKIP_RETURN_CODE 77
                       ENVIRONMENT "AMPTRAIN_ISA=${isa}")
endforeach()
add_test(NAME test_cpu_gemm_avx2_openblas COMMAND test_cpu_gemm)
set_tests_properties(test_cpu_gemm_avx2_openblas PROPERTIES LABELS numerics SKIP_RETURN_CODE 77
                     ENVIRONMENT "AMPTRAIN_ISA=avx2;AMPTRAIN_GEMM=openblas")
# The reference GEMM the pins run: one FP64 sum rounded once, at 3 threads.
add_test(NAME test_cpu_gemm_reference COMMAND test_cpu_gemm)
set_tests_properties(test_cpu_gemm_reference PROPERTIES LABELS numerics
                     ENVIRONMENT "AMPTRAIN_GEMM=reference;AMPTRAIN_THREADS=3")
# The unscale check counts what its multiply produces (issue 15).
amp_unit_test(test_unscale numerics)
