# FP8 and MXFP8 formats (core/backend/kernels/fp8.h, mx.h; the CPU kernels
# of core/backend/cpu_fp8.h). The reference files under tests/data come from
# scripts/fp8_reference.py (torch + torchao, run by hand).
# The casts and decodes against PyTorch's float8_e4m3fn / float8_e5m2.
amp_unit_test(test_fp8_torch numerics fp8)
# MXFP8 scales and elements against torchao's to_mx, on every CPU path.
amp_unit_test(test_mx_torchao numerics fp8)
# Every CPU path's quantize (codes, amax, counts) and dequantize against the
# scalar reference: a random sample here, all 2^32 FP32 patterns under the
# label long.
amp_unit_test(test_fp8_kernels numerics fp8)
target_link_libraries(test_fp8_kernels PRIVATE OpenMP::OpenMP_C)
add_test(NAME test_fp8_kernels_all COMMAND test_fp8_kernels --all)
set_tests_properties(test_fp8_kernels_all PROPERTIES LABELS "long;fp8" TIMEOUT 900)
# The CUDA quantize-with-amax against the CPU reference (77 without a device).
amp_unit_test(test_gpu_fp8 gpu fp8)
if(AMP_HAVE_CUDA) # calls the module's quantize and the runtime itself
  target_link_libraries(test_gpu_fp8 PRIVATE amptrain_cuda CUDA::cudart)
endif()
# The fp8 and mxfp8 policies: operand formats per layer and role, every
# key's checks, the scale_update rule.
amp_unit_test(test_fp8_policy plugins fp8)
add_dependencies(test_fp8_policy amp_precision_fp8 amp_precision_mxfp8)
# The host's scaled-operand state: checkpoint bytes round trip bit for bit,
# another policy's state refused, a bad scale_update named.
amp_unit_test(test_scaled_state fp8 checkpoint)
