# Numerics: FP16/BF16 conversions and rounding telemetry (core/backend/kernels/convert.h).
amp_unit_test(test_convert numerics)
# The unscale check counts what its multiply produces (issue 15).
amp_unit_test(test_unscale numerics)
