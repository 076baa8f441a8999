# NVFP4 formats (core/backend/kernels/nvfp4.h): the E2M1 cast against its
# definition computed independently.
amp_unit_test(test_nvfp4_format numerics nvfp4)
# Stochastic rounding (unbiased, keyed), the Hadamard transform (H H^T = 16 I,
# the weight-gradient GEMM unchanged), 16x16 tiles (W and W^T alike) and the
# CPU backend's nvfp4 ops against a scalar reference on the header's functions,
# on every instruction-set path the CPU has (each has its own NVFP4 kernels).
amp_unit_test(test_nvfp4_kernels numerics nvfp4)
add_test(NAME test_nvfp4_kernels_broken COMMAND test_nvfp4_kernels --break-sr)
set_tests_properties(test_nvfp4_kernels_broken PROPERTIES LABELS "nvfp4" WILL_FAIL TRUE)

# The nvfp4 policy from the CLI: the shipped configs (the full recipe and the
# four ablation arms) train, and summary.json shows what each key asked for,
# per layer and role; the all-NVFP4 working copy is half a byte per weight.
add_test(NAME nvfp4_telemetry
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/nvfp4/telemetry.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${CMAKE_BINARY_DIR}/tests/nvfp4_runs/telemetry)
set_tests_properties(nvfp4_telemetry PROPERTIES LABELS "nvfp4;cli" TIMEOUT 300)

# Bad keys exit 2 naming the key (a file's line, or the --set).
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)
set(AMP_NVFP4_RUNS ${CMAKE_BINARY_DIR}/tests/nvfp4_runs)
amp_expect_fail(nvfp4_bad_blocks LABELS nvfp4 cli
  CODE 2
  REGEX [=[bad_nvfp4_blocks\.ini:14: \[precision\] weight_blocks: unknown value '3d'. use 2d \| 1d]=]
  OPTIONS --no-outputs ${AMP_NVFP4_RUNS}/bad_blocks
  COMMAND $<TARGET_FILE:amptrain> train ${CMAKE_CURRENT_SOURCE_DIR}/configs/bad_nvfp4_blocks.ini
          --out ${AMP_NVFP4_RUNS}/bad_blocks)
# NVFP4 on a convolution is refused at config time (exit 2, naming the layer
# and the key that keeps it out): a Conv2d's im2col GEMMs put the forward's
# input where the recipe's weight-gradient transform applies, so the convs
# computed a randomly rotated input (the CNN learned far worse with
# hadamard = 1 than 0). With the convs in bf16 the CNN trains under nvfp4,
# its loss finite, fc1 and fc2 with their three NVFP4 operands and the
# convs with none.
amp_expect_fail(nvfp4_cnn_conv_refused LABELS nvfp4 cli
  CODE 2
  REGEX [=[^amptrain: precision plugin 'nvfp4' gives layer 'conv1' \(input operand\) NVFP4 on a convolution: amptrain runs NVFP4 on Linear layers only. keep the convolutions out of it \(layer\.conv1 = bf16\)$]=]
  OPTIONS --no-outputs ${AMP_NVFP4_RUNS}/cnn_conv
  COMMAND $<TARGET_FILE:amptrain> train ${PROJECT_SOURCE_DIR}/configs/cnn_fashion_bf16.ini
          --set precision.plugin=nvfp4 --set train.steps=1 --out ${AMP_NVFP4_RUNS}/cnn_conv)
amp_expect_fail(nvfp4_cnn_linear LABELS nvfp4 cli
  OPTIONS --stdout
          --also [=["final_train_loss": [0-9]]=]
          --also [=["test_loss": [0-9]]=]
          --also [=["layer":"fc1","role":"input","format":"nvfp4","scaling":"nvfp4_1d"]=]
          --also [=["layer":"fc1","role":"weight","format":"nvfp4","scaling":"nvfp4_2d"]=]
          --also [=["layer":"fc2","role":"grad_output","format":"nvfp4","scaling":"nvfp4_1d"]=]
          --not [=["layer":"conv[12]","role"]=]
  CODE 0
  REGEX [=["layer":"fc1","role":"grad_output","format":"nvfp4","scaling":"nvfp4_1d".*"stochastic":true,"hadamard":true]=]
  COMMAND sh -c "\"$1\" train \"$2\" --set run.device=cpu --set train.steps=2 --set precision.plugin=nvfp4 --set \"precision.layer.conv*=bf16\" --out \"$3\" >/dev/null && cat \"$3/summary.json\""
          sh $<TARGET_FILE:amptrain> ${PROJECT_SOURCE_DIR}/configs/cnn_fashion_bf16.ini
          ${AMP_NVFP4_RUNS}/cnn_linear)
foreach(bad "hadamard=2|hadamard: 2 is not an integer in 0\\.\\.1"
            "stochastic_rounding=yes|stochastic_rounding = 'yes': not a finite number"
            "stochastic_rounding=0.5|stochastic_rounding: 0\\.5 is not an integer in 0\\.\\.1"
            "hadamrd=1|unknown key 'hadamrd' in \\[precision\\]; did you mean 'hadamard'"
            "layer.transformer.h.9.*=bf16|layer\\.transformer\\.h\\.9\\.\\*: the pattern 'transformer\\.h\\.9\\.\\*' matches no layer")
  string(REPLACE "|" ";" parts "${bad}")
  list(GET parts 0 set)
  list(GET parts 1 regex)
  string(REGEX REPLACE "[^a-z0-9_]" "_" tag "${set}")
  amp_expect_fail(nvfp4_bad_${tag} LABELS nvfp4 cli
    CODE 2
    REGEX "--set precision\\.[^:]*: .*${regex}"
    OPTIONS --no-outputs ${AMP_NVFP4_RUNS}/bad_${tag}
    COMMAND $<TARGET_FILE:amptrain> train ${PROJECT_SOURCE_DIR}/configs/gpt_shakespeare_nvfp4.ini
            --set precision.${set} --out ${AMP_NVFP4_RUNS}/bad_${tag})
endforeach()
# What nvfp4_gemm hands cuBLASLt's block-scaled FP4 GEMM: the E4M3 scales in
# its tiled layout (1x16 rows and a weight's 16x16 tiles, padded shapes) and
# the packed codes read K-major, against the layout written from the cuBLAS
# documentation and a decode written in the test; --break must fail.
amp_unit_test(test_nvfp4_tiled numerics nvfp4)
add_test(NAME test_nvfp4_tiled_broken COMMAND test_nvfp4_tiled --break)
set_tests_properties(test_nvfp4_tiled_broken PROPERTIES LABELS "nvfp4" WILL_FAIL TRUE)
# The quantizer (1x16 rows and 16x16 tiles) against PyTorch's reference from
# the format's definition (tests/data/nvfp4_reference.txt, scripts/nvfp4_reference.py),
# on every instruction-set path the CPU has.
amp_unit_test(test_nvfp4_torch numerics nvfp4)

# The CUDA backend's NVFP4 ops against the CPU backend's, bit for bit (77
# without a device); the same rows CPU against CPU where there is no GPU,
# and with the second CPU's nvfp4_qdq broken on purpose exactly the rows
# using it fail.
amp_unit_test(test_gpu_nvfp4 gpu nvfp4)
# cuBLASLt's block-scaled FP4 GEMM (sm_100 and later; 77 on older GPUs and
# without a device): nvfp4_gemm against the CPU's composition within the
# tolerance derived in tests/nvfp4_gemm_rows.h, and the path each shape must
# take. test_gpu_nvfp4 runs the same rows on any GPU, whichever path.
amp_unit_test(test_gpu_nvfp4_gemm gpu nvfp4)
if(AMP_HAVE_CUDA) # the module's test hooks (cuda_testing.h)
  target_link_libraries(test_gpu_nvfp4 PRIVATE amptrain_cuda CUDA::cudart)
  target_link_libraries(test_gpu_nvfp4_gemm PRIVATE amptrain_cuda CUDA::cudart)
endif()
add_test(NAME gpu_rows_self_check_test_gpu_nvfp4 COMMAND test_gpu_nvfp4 --self-check)
add_test(NAME gpu_rows_perturbed_nvfp4_qdq
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_fail.sh 1
                 "^test_gpu_nvfp4: 16 of 24 op row\\(s\\) failed \\([0-9]+ check\\(s\\)\\): nvfp4_qdq ties 2x16 rows; .*nvfp4_qdq 300x1000 cols sr hadamard$"
                 $<TARGET_FILE:test_gpu_nvfp4> --self-check --perturb nvfp4_qdq)
set_tests_properties(gpu_rows_self_check_test_gpu_nvfp4 gpu_rows_perturbed_nvfp4_qdq
                     PROPERTIES LABELS "cli;nvfp4")
# The full recipe and the 1x16-weight arm train 3 steps from the CLI on the
# GPU (label gpu; 77 without a device), and the log names the forward GEMM's
# path (nvfp4_gemm: block-scaled on sm_100 and later, else emulated, and why).
foreach(cfg gpt_shakespeare_nvfp4 gpt_shakespeare_nvfp4_1d_weights)
  add_test(NAME nvfp4_config_${cfg}_cuda
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/gpu_train_run.sh $<TARGET_FILE:amptrain>
                   ${PROJECT_SOURCE_DIR}/configs/${cfg}.ini ${AMP_NVFP4_RUNS}/${cfg}_cuda
                   "${cfg}: val_loss [0-9.]+, 3 steps \\(0 skipped\\)"
                   "cuda: nvfp4_gemm (runs on cuBLASLt block-scaled FP4|emulated .* where )"
                   -- --set train.steps=3 --set train.log_every=1)
  set_tests_properties(nvfp4_config_${cfg}_cuda PROPERTIES LABELS "gpu;nvfp4" SKIP_RETURN_CODE 77)
endforeach()
