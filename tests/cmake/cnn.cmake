# Convolutional-network ops (conv2d, max_pool2d, batch_norm) on the CPU:
# forward against direct references, every backward against finite
# differences on odd shapes.
amp_unit_test(test_cnn_ops numerics cnn)
# The same ops on CUDA (cuDNN convolutions, own pooling/batch-norm kernels)
# against the CPU, per op and dtype. Label `gpu`; 77 (skipped) without a device.
amp_unit_test(test_gpu_cnn gpu cnn)
