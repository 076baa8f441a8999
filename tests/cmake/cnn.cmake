# Convolutional-network ops (conv2d, max_pool2d, batch_norm) on the CPU:
# forward against direct references, every backward against finite
# differences on odd shapes.
amp_unit_test(test_cnn_ops numerics cnn)
# again on the avx2 path (oneDNN fixes its ISA once per process), so its
# compiled loops are compared with the generic path's too
add_test(NAME test_cnn_ops_avx2 COMMAND test_cnn_ops)
set_tests_properties(test_cnn_ops_avx2 PROPERTIES LABELS "numerics;cnn" SKIP_RETURN_CODE 77
                     ENVIRONMENT "AMPTRAIN_ISA=avx2")
# The one-pass 16-bit forms of the CNN's steps (batch norm on a 16-bit x,
# round_act, conv2d_forward_round, conv2d_backward_round) against the ops
# they replace, bit for bit and count for count, on every ISA path here.
amp_unit_test(test_cnn_fused numerics cnn)
# Synchronised batch norm ([dist] sync_batchnorm): two threads as two ranks
# with half a batch each, against one call over the whole batch.
amp_unit_test(test_sync_bn numerics cnn)
target_link_libraries(test_sync_bn PRIVATE Threads::Threads)
# The same ops on CUDA (cuDNN convolutions, own pooling/batch-norm kernels)
# against the CPU, per op and dtype. Label `gpu`; 77 (skipped) without a device.
amp_unit_test(test_gpu_cnn gpu cnn)
# The CNN model against PyTorch (tests/data/cnn_reference.safetensors from
# scripts/cnn_reference.py): logits, loss, every gradient, 5 SGD steps with
# the BatchNorm buffers, evaluation mode; FP32, FP16 and BF16.
amp_unit_test(test_cnn_reference cnn)
# The same on the CUDA backend (77 without a GPU).
add_test(NAME test_cnn_reference_cuda COMMAND test_cnn_reference --device cuda)
set_tests_properties(test_cnn_reference_cuda PROPERTIES SKIP_RETURN_CODE 77 LABELS "gpu;cnn")

# Bad layer strings: exit 2 and file:line (or --set) pointing at the token.
set(AMP_CNN_BAD ${CMAKE_CURRENT_SOURCE_DIR}/configs/bad_cnn_layers.ini)
set(AMP_CNN_OUT ${CMAKE_CURRENT_BINARY_DIR}/cnn_out)
amp_expect_fail(cnn_bad_layer_file LABELS cnn cli
  CODE 2
  REGEX [=[^amptrain: [^ ]*/bad_cnn_layers\.ini:10: \[model\] layers: 'pol\(2\)' at character 25: unknown layer. the layers are: conv\(out,k]=]
  COMMAND $<TARGET_FILE:amptrain> train ${AMP_CNN_BAD} --out ${AMP_CNN_OUT}/file)
# name | layers | what the message must say after "--set model.layers: [model] layers: "
foreach(case
    "paren|conv(8,3 relu fc|'conv\\(8,3 relu fc' at character 1: missing '\\)'"
    "args|conv(8) fc|'conv\\(8\\)' at character 1: conv needs the output channels and the kernel size"
    "zero|conv(8,0) fc|'conv\\(8,0\\)' at character 1: k = '0' must be an integer in \\[1, 64\\]"
    "key|conv(8,3,strde=2) fc|'conv\\(8,3,strde=2\\)' at character 1: unknown argument 'strde'"
    "window|conv(8,3) pool(40) fc|'pool\\(40\\)' at character 11: the 40x40 window does not fit the 26x26 input here"
    "tail|conv(8,3) relu|must end with the classifier `fc` \\(10 classes\\)"
    "classes|conv(8,3) fc(7)|'fc\\(7\\)' at character 11: the last fc gives the class scores: write `fc` \\(or fc\\(10\\)\\)"
    "after_fc|fc(16) conv(3,3) fc|'conv\\(3,3\\)' at character 8: conv after fc or flatten"
    "relu_args|conv(8,3) relu(2) fc|'relu\\(2\\)' at character 11: takes no arguments"
    # shapes past 2^31 - 1 elements (they wrapped around in int: undefined
    # behaviour, then a memory estimate of the wrapped sizes)
    "big_output|conv(30000,1,pad=64) conv(30000,1,pad=64) fc|'conv\\(30000,1,pad=64\\)' at character 22: its output per example is 30000x284x284 = 2419680000 values, more than the 2147483647 a tensor may hold"
    "big_conv_weight|conv(65536,64,pad=64) conv(65536,64) fc|'conv\\(65536,64\\)' at character 23: its weight is 65536x65536x64x64 = 17592186044416 values"
    "big_fc_weight|conv(65536,1,pad=64) flatten fc|'fc' at character 30: its weight is 10x1594884096 = 15948840960 values"
    "big_fc_width|fc(65536) fc(65536) fc|'fc\\(65536\\)' at character 11: its weight is 65536x65536 = 4294967296 values"
    # pooling windows: up to 256 (the argmax is a 2-byte offset in the window)
    "pool_k|pool(257) fc|'pool\\(257\\)' at character 1: k = '257' must be an integer in \\[1, 256\\]"
    "pool_pad|pool(256,pad=129) fc|'pool\\(256,pad=129\\)' at character 1: pad = '129' must be an integer in \\[0, 128\\]"
    "pool_stride|pool(2,stride=257) fc|'pool\\(2,stride=257\\)' at character 1: stride = '257' must be an integer in \\[1, 256\\]")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 layers)
  list(GET parts 2 regex)
  amp_expect_fail(cnn_bad_layers_${name} LABELS cnn cli
    CODE 2
    REGEX "^amptrain: --set model\\.layers: \\[model\\] layers.*${regex}"
    COMMAND $<TARGET_FILE:amptrain> train ${AMP_CNN_BAD} --set "model.layers=${layers}"
            --out ${AMP_CNN_OUT}/${name})
endforeach()
# The same from a file: its file:line.
amp_expect_fail(cnn_big_layers_file LABELS cnn cli
  CODE 2
  REGEX [=[^amptrain: [^ ]*/big_cnn_layers\.ini:11: \[model\] layers: 'conv\(65536,1,pad=64\)' at character 18: its output per example is 65536x284x284 = 5285871616 values]=]
  COMMAND $<TARGET_FILE:amptrain> train ${CMAKE_CURRENT_SOURCE_DIR}/configs/big_cnn_layers.ini
          --out ${AMP_CNN_OUT}/big_file)
# Windows past the old limit of 64 train: pool(100, pad=50) on 28x28, and
# the largest, pool(256, pad=128) (one step each).
foreach(layers "pool(100,pad=50) fc" "conv(2,3) pool(256,pad=128) fc")
  string(REGEX REPLACE "[^a-z0-9]+" "_" name "${layers}")
  amp_expect_fail(cnn_pool_${name} LABELS cnn cli
    CODE 0
    REGEX [=[: test_acc [0-9.]+ test_loss [0-9.]+, 1 steps]=]
    COMMAND $<TARGET_FILE:amptrain> train ${AMP_CNN_BAD} --set "model.layers=${layers}"
            --set train.steps=1 --set run.device=cpu --out ${AMP_CNN_OUT}/pool_${name})
endforeach()
# 20 training steps of the CNN on the CPU and on CUDA, per policy, with
# deterministic and default cuDNN algorithms (77 without a GPU).
amp_unit_test(test_gpu_cnn_parity gpu cnn)
# layer.conv1 = f32 and op.conv = f32 reach the CNN (read from its telemetry).
add_test(NAME cnn_precision_overrides COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cnn/overrides.sh $<TARGET_FILE:amptrain>)
set_tests_properties(cnn_precision_overrides PROPERTIES LABELS "cnn;train")
# Determinism of the CNN on the CPU: repeatable per path and thread count,
# 1 against 2 threads and every ISA path within 2e-3 (tests/cnn/paths.sh).
add_test(NAME cnn_cpu_paths COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cnn/paths.sh $<TARGET_FILE:amptrain>)
set_tests_properties(cnn_cpu_paths PROPERTIES LABELS "cnn;train;pin")
