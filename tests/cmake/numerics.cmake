# Numerics: FP16/BF16 conversions and rounding telemetry (core/kernels/convert.h).
amp_unit_test(test_convert numerics)
