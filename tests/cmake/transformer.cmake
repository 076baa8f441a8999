# The transformer ops of the CPU backend (embedding, layernorm, attention,
# GELU tanh, residual add): references and finite differences.
amp_unit_test(test_transformer_ops numerics)
# CPU-vs-CUDA parity of the same ops; label `gpu`, skipped (77) without a device.
amp_unit_test(test_gpu_transformer gpu)
