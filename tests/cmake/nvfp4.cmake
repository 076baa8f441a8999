# NVFP4 formats (core/backend/kernels/nvfp4.h): the E2M1 cast against its
# definition computed independently.
amp_unit_test(test_nvfp4_format numerics nvfp4)
# Stochastic rounding (unbiased, keyed), the Hadamard transform (H H^T = 16 I,
# the weight-gradient GEMM unchanged), 16x16 tiles (W and W^T alike) and the
# CPU backend's nvfp4 ops against a scalar reference on the header's functions.
amp_unit_test(test_nvfp4_kernels numerics nvfp4)
add_test(NAME test_nvfp4_kernels_broken COMMAND test_nvfp4_kernels --break-sr)
set_tests_properties(test_nvfp4_kernels_broken PROPERTIES LABELS "nvfp4" WILL_FAIL TRUE)
