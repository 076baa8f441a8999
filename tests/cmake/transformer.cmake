# The transformer ops of the CPU backend (embedding, layernorm, attention,
# GELU tanh, residual add): references and finite differences.
amp_unit_test(test_transformer_ops numerics)
# CPU-vs-CUDA parity of the same ops; label `gpu`, skipped (77) without a device.
amp_unit_test(test_gpu_transformer gpu)
# The same ops threaded: layernorm bit for bit against the shared row
# functions, every op at 1, 2 and 3 threads bit for bit (and the counts).
amp_unit_test(test_transformer_threads numerics)
target_link_libraries(test_transformer_threads PRIVATE OpenMP::OpenMP_C)
