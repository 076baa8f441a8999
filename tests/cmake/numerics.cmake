# Numerics: FP16/BF16 conversions and rounding telemetry (core/backend/kernels/convert.h).
amp_unit_test(test_convert numerics)
# The fixed order of the CUDA reductions (core/backend/kernels/reduce.h), on the CPU.
amp_unit_test(test_reduce numerics)
