# NVFP4 formats (core/backend/kernels/nvfp4.h): the E2M1 cast against its
# definition computed independently.
amp_unit_test(test_nvfp4_format numerics nvfp4)
