# CUDA backend: GEMMs against an FP64 reference, every other op against the
# CPU backend. Label `gpu`; both exit 77 (skipped) when no device is visible
# or amptrain was built without CUDA.
amp_unit_test(test_gpu_gemm gpu)
amp_unit_test(test_gpu_kernels gpu)
