# FP8 and MXFP8 formats (core/backend/kernels/fp8.h, mx.h; the CPU kernels
# of core/backend/cpu_fp8.h). The reference files under tests/data come from
# scripts/fp8_reference.py (torch + torchao, run by hand).
# The casts and decodes against PyTorch's float8_e4m3fn / float8_e5m2.
amp_unit_test(test_fp8_torch numerics fp8)
# MXFP8 scales and elements against torchao's to_mx, on every CPU path.
amp_unit_test(test_mx_torchao numerics fp8)
