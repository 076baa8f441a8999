# Convolutional-network ops (conv2d, max_pool2d, batch_norm) on the CPU:
# forward against direct references, every backward against finite
# differences on odd shapes.
amp_unit_test(test_cnn_ops numerics cnn)
# The same ops on CUDA (cuDNN convolutions, own pooling/batch-norm kernels)
# against the CPU, per op and dtype. Label `gpu`; 77 (skipped) without a device.
amp_unit_test(test_gpu_cnn gpu cnn)
# The CNN model against PyTorch (tests/data/cnn_reference.safetensors from
# scripts/cnn_reference.py): logits, loss, every gradient, 5 SGD steps with
# the BatchNorm buffers, evaluation mode; FP32, FP16 and BF16.
amp_unit_test(test_cnn_reference cnn)
target_include_directories(test_cnn_reference PRIVATE ${PROJECT_SOURCE_DIR}/models)
# The same on the CUDA backend (77 without a GPU).
add_test(NAME test_cnn_reference_cuda COMMAND test_cnn_reference --device cuda)
set_tests_properties(test_cnn_reference_cuda PROPERTIES SKIP_RETURN_CODE 77 LABELS "gpu;cnn")
