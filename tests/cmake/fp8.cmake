# FP8 and MXFP8 formats (core/backend/kernels/fp8.h, mx.h; the CPU kernels
# of core/backend/cpu_fp8.h). The reference files under tests/data come from
# scripts/fp8_reference.py (torch + torchao, run by hand).
# The casts and decodes against PyTorch's float8_e4m3fn / float8_e5m2.
amp_unit_test(test_fp8_torch numerics fp8)
# MXFP8 scales and elements against torchao's to_mx, on every CPU path.
amp_unit_test(test_mx_torchao numerics fp8)
# Every CPU path's quantize (codes, amax, counts) and dequantize against the
# scalar reference: a random sample here, all 2^32 FP32 patterns under the
# label long.
amp_unit_test(test_fp8_kernels numerics fp8)
target_link_libraries(test_fp8_kernels PRIVATE OpenMP::OpenMP_C)
add_test(NAME test_fp8_kernels_all COMMAND test_fp8_kernels --all)
set_tests_properties(test_fp8_kernels_all PROPERTIES LABELS "long;fp8" TIMEOUT 900)
# The CUDA backend's "scaled" family and fp8_gemm against the CPU backend's
# (77 without a device); the same rows CPU against CPU where there is no GPU,
# and with one scaled op of the second CPU broken on purpose exactly the rows
# using it fail.
amp_unit_test(test_gpu_fp8 gpu fp8)
# cuBLASLt's block-scaled MXFP8 GEMM (sm_100 and later; 77 on older GPUs and
# without a device): fp8_gemm on MX32 operands against the CPU's composition,
# and the path each shape must take.
amp_unit_test(test_gpu_mx_gemm gpu fp8)
if(AMP_HAVE_CUDA) # the module's test hooks (cuda_testing.h)
  target_link_libraries(test_gpu_fp8 PRIVATE amptrain_cuda CUDA::cudart)
  target_link_libraries(test_gpu_mx_gemm PRIVATE amptrain_cuda CUDA::cudart)
endif()
add_test(NAME gpu_rows_self_check_test_gpu_fp8 COMMAND test_gpu_fp8 --self-check)
add_test(NAME gpu_rows_perturbed_fp8_quantize
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_fail.sh 1
                 "^test_gpu_fp8: 4 of 14 op row\\(s\\) failed \\([0-9]+ check\\(s\\)\\): fp8_quantize e4m3 n1048653 random bit patterns; fp8_quantize e5m2 n1048653 random bit patterns; fp8_quantize e4m3 n1048653 values in \\[-500,500\\); fp8_quantize e5m2 n1048653 values in \\[-500,500\\)$"
                 $<TARGET_FILE:test_gpu_fp8> --self-check --perturb fp8_quantize)
add_test(NAME gpu_rows_perturbed_mx_qdq
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_fail.sh 1
                 "^test_gpu_fp8: 2 of 14 op row\\(s\\) failed \\([0-9]+ check\\(s\\)\\): mx_qdq e4m3 300x1000 along rows; mx_qdq e5m2 1000x300 down columns$"
                 $<TARGET_FILE:test_gpu_fp8> --self-check --perturb mx_qdq)
set_tests_properties(gpu_rows_self_check_test_gpu_fp8 gpu_rows_perturbed_fp8_quantize
                     gpu_rows_perturbed_mx_qdq PROPERTIES LABELS "cli;fp8")
# The Linear under per-tensor FP8 operands (the MLP's two layers) against a
# scalar reference of FP8_SPEC's math: gradients, working-copy codes, stats.
amp_unit_test(test_linear_fp8 numerics fp8 kit)
add_test(NAME test_linear_fp8_broken COMMAND test_linear_fp8 --break-role)
set_tests_properties(test_linear_fp8_broken PROPERTIES LABELS "fp8;kit" WILL_FAIL TRUE)
# The same with the forwards on a fused fp8_gemm (the Linear's FP8-GEMM path
# that a GPU takes, here with the composed GEMM on the CPU).
add_test(NAME test_linear_fp8_gemm COMMAND test_linear_fp8 --fp8-gemm)
set_tests_properties(test_linear_fp8_gemm PROPERTIES LABELS "numerics;fp8;kit")
# The same under MX32 (blocks of 32 along each GEMM's reduction dimension).
add_test(NAME test_linear_mxfp8 COMMAND test_linear_fp8 --mx)
set_tests_properties(test_linear_mxfp8 PROPERTIES LABELS "numerics;fp8;kit")
add_test(NAME test_linear_mxfp8_broken COMMAND test_linear_fp8 --mx-break)
set_tests_properties(test_linear_mxfp8_broken PROPERTIES LABELS "fp8;kit" WILL_FAIL TRUE)
# MX32 with the forwards on a fused fp8_gemm: the codes and block scales a
# GPU's block-scaled GEMM gets, composed on the CPU.
add_test(NAME test_linear_mxfp8_gemm COMMAND test_linear_fp8 --mx-fp8-gemm)
set_tests_properties(test_linear_mxfp8_gemm PROPERTIES LABELS "numerics;fp8;kit")
# The Conv2d under scaled operands (the CNN's two convs; its im2col GEMMs)
# against a scalar reference with its own im2col and double GEMMs, per
# tensor and MX32, each with a broken reference that must fail.
amp_unit_test(test_conv_fp8 numerics fp8 kit)
add_test(NAME test_conv_fp8_broken COMMAND test_conv_fp8 --break)
set_tests_properties(test_conv_fp8_broken PROPERTIES LABELS "fp8;kit" WILL_FAIL TRUE)
add_test(NAME test_conv_mxfp8 COMMAND test_conv_fp8 --mx)
set_tests_properties(test_conv_mxfp8 PROPERTIES LABELS "numerics;fp8;kit")
add_test(NAME test_conv_mxfp8_broken COMMAND test_conv_fp8 --mx-break)
set_tests_properties(test_conv_mxfp8_broken PROPERTIES LABELS "fp8;kit" WILL_FAIL TRUE)
# The fp8 and mxfp8 policies: operand formats per layer and role, every
# key's checks, the scale_update rule.
amp_unit_test(test_fp8_policy plugins fp8)
add_dependencies(test_fp8_policy amp_precision_fp8 amp_precision_mxfp8)
# The host's scaled-operand state: checkpoint bytes round trip bit for bit,
# another policy's state refused, a bad scale_update named.
amp_unit_test(test_scaled_state fp8 checkpoint)

# The shipped FP8 configs load and train a few steps from the CLI (on the CNN
# the fp8 and mxfp8 policies put scaled operands on its convs and fc layers).
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)
set(AMP_FP8_RUNS ${CMAKE_BINARY_DIR}/tests/fp8_runs)
foreach(cfg gpt_shakespeare_fp8 gpt_shakespeare_fp8_current gpt_shakespeare_mxfp8 cnn_fashion_fp8)
  amp_expect_fail(fp8_config_${cfg} LABELS fp8 cli
    CODE 0
    REGEX "${cfg}: (test_acc [0-9.]+ test_loss|val_loss) [0-9.]+, 3 steps \\(0 skipped\\)"
    COMMAND $<TARGET_FILE:amptrain> train ${PROJECT_SOURCE_DIR}/configs/${cfg}.ini
            --set run.device=cpu --set train.steps=3 --set train.log_every=1
            --out ${AMP_FP8_RUNS}/${cfg})
endforeach()
# The same three GPT configs on the GPU (label gpu; 77 without a device):
# they train, and the log names the scaled GEMMs' path (cuBLASLt FP8 or
# emulated, and why; MX32 block-scaled on sm_100 and later, or emulated and why).
foreach(cfg gpt_shakespeare_fp8 gpt_shakespeare_fp8_current gpt_shakespeare_mxfp8)
  if(cfg STREQUAL gpt_shakespeare_mxfp8)
    set(_path "cuda: fp8_gemm MX32 (runs on cuBLASLt block-scaled|emulated)")
  else()
    set(_path "cuda: fp8_gemm (runs on cuBLASLt FP8 tensor cores|emulated)")
  endif()
  add_test(NAME fp8_config_${cfg}_cuda
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/gpu_train_run.sh $<TARGET_FILE:amptrain>
                   ${PROJECT_SOURCE_DIR}/configs/${cfg}.ini ${AMP_FP8_RUNS}/${cfg}_cuda
                   "${cfg}: val_loss [0-9.]+, 3 steps \\(0 skipped\\)" "${_path}"
                   -- --set train.steps=3 --set train.log_every=1)
  set_tests_properties(fp8_config_${cfg}_cuda PROPERTIES LABELS "gpu;fp8" SKIP_RETURN_CODE 77)
endforeach()
unset(_path)
amp_expect_fail(fp8_bad_history LABELS fp8 cli
  CODE 2
  REGEX [=[bad_fp8_history\.ini:13: \[precision\] amax_history_len: 1e\+12 is not an integer in 1\.\.65536]=]
  OPTIONS --no-outputs ${AMP_FP8_RUNS}/bad_history
  COMMAND $<TARGET_FILE:amptrain> train ${CMAKE_CURRENT_SOURCE_DIR}/configs/bad_fp8_history.ini
          --out ${AMP_FP8_RUNS}/bad_history)
# On the CNN from the CLI the convs carry scaled operands (their telemetry in
# summary.json), under fp8 and mxfp8, and `layer.conv1 = bf16` keeps conv1 out.
amp_expect_fail(fp8_cnn_conv LABELS fp8 cli
  OPTIONS --stdout
          --also [=["layer":"conv2","role":"grad_output","format":"e5m2","scaling":"delayed"]=]
          --also [=["layer":"fc1","role":"input"]=]
          --not [=["layer":"conv1","role"]=]
  CODE 0
  REGEX [=["layer":"conv2","role":"input","format":"e4m3","scaling":"delayed"]=]
  COMMAND sh -c "\"$1\" train \"$2\" --set run.device=cpu --set train.steps=2 --set precision.layer.conv1=bf16 --out \"$3\" >/dev/null && cat \"$3/summary.json\""
          sh $<TARGET_FILE:amptrain> ${PROJECT_SOURCE_DIR}/configs/cnn_fashion_fp8.ini
          ${AMP_FP8_RUNS}/cnn_conv)
amp_expect_fail(mxfp8_cnn_conv LABELS fp8 cli
  OPTIONS --stdout --also [=["layer":"conv2","role":"grad_output","format":"e4m3","scaling":"mx32"]=]
  CODE 0
  REGEX [=["layer":"conv1","role":"input","format":"e4m3","scaling":"mx32"]=]
  COMMAND sh -c "\"$1\" train \"$2\" --set run.device=cpu --set train.steps=2 --set precision.plugin=mxfp8 --out \"$3\" >/dev/null && cat \"$3/summary.json\""
          sh $<TARGET_FILE:amptrain> ${PROJECT_SOURCE_DIR}/configs/cnn_fashion_bf16.ini
          ${AMP_FP8_RUNS}/cnn_conv_mx)
# The GPT's tied head: under fp8 the slots are exactly the ones a GEMM reads.
# With lm_head in FP8 its three operands are there and move (its weight
# operand is transformer.wte.weight's codes); transformer.wte, the lookup,
# has none, so no operand keeps its scale (`kept` stays 0) in the telemetry.
amp_expect_fail(fp8_gpt_tied_head LABELS fp8 cli
  OPTIONS --stdout
          --also [=["layer":"lm_head","role":"weight","format":"e4m3","scaling":"delayed"]=]
          --also [=["layer":"lm_head","role":"grad_output","format":"e5m2"]=]
          --not [=["layer":"transformer.wte"]=]
          --not [=["kept":[1-9]]=]
  CODE 0
  REGEX [=["layer":"lm_head","role":"input","format":"e4m3","scaling":"delayed"]=]
  COMMAND sh -c "\"$1\" train \"$2\" --set run.device=cpu --out \"$3\" >/dev/null && cat \"$3/summary.json\""
          sh $<TARGET_FILE:amptrain> ${CMAKE_CURRENT_SOURCE_DIR}/configs/gpt_fp8_tied_head.ini
          ${AMP_FP8_RUNS}/gpt_tied_head)
# The shipped config (lm_head bf16): no lm_head or wte operand at all.
amp_expect_fail(fp8_gpt_no_dead_slots LABELS fp8 cli
  OPTIONS --stdout --not [=["layer":"transformer.wte"]=] --not [=["layer":"lm_head"]=]
          --not [=["kept":[1-9]]=]
  CODE 0
  REGEX [=["layer":"transformer.h.3.mlp.c_proj","role":"grad_output","format":"e5m2"]=]
  COMMAND sh -c "\"$1\" train \"$2\" --set run.device=cpu --set train.steps=3 --out \"$3\" >/dev/null && cat \"$3/summary.json\""
          sh $<TARGET_FILE:amptrain> ${PROJECT_SOURCE_DIR}/configs/gpt_shakespeare_fp8.ini
          ${AMP_FP8_RUNS}/gpt_no_dead_slots)
# The tiled MX32 scale layout of cuBLASLt's block-scaled GEMM
# (core/backend/kernels/mx_tiled.h) against the documented layout written a
# second way, padded shapes included; --break lays the tiles out naively and
# must fail on the byte comparison (not, say, a crash).
amp_unit_test(test_mx_tiled numerics fp8)
add_test(NAME test_mx_tiled_broken
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_fail.sh
                 --also "FAIL .*300x33: [0-9]+ of 13824 bytes differ"
                 1 "^test_mx_tiled: [0-9]+ check\\(s\\) failed \\(as --break requires\\)$"
                 $<TARGET_FILE:test_mx_tiled> --break)
set_tests_properties(test_mx_tiled_broken PROPERTIES LABELS "fp8")
# FP8 working weights at one byte a value (half of a 2-byte bf16 copy), from
# summary.json's exact arena bytes; the head in bf16 must break the bound.
add_test(NAME fp8_working_bytes
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fp8/working_bytes.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/configs/gpt_fp8_tied_head.ini ${AMP_FP8_RUNS}/working_bytes)
set_tests_properties(fp8_working_bytes PROPERTIES LABELS "fp8;cli")
# The CUDA backend has no scaled convolution ops: a CNN with FP8 convs on
# device = cuda is refused before it trains (exit 1, as every backend
# refusal at model creation), naming the conv layer.
add_test(NAME fp8_cnn_conv_cuda_refused
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/gpu_train_run.sh --exit 1 $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs/cnn_fashion_fp8.ini ${AMP_FP8_RUNS}/cnn_fp8_cuda
                 "no scaled convolution ops \\(conv2d_im2col, conv2d_col2im\\): conv layer 'conv1'"
                 -- --set train.steps=1)
set_tests_properties(fp8_cnn_conv_cuda_refused PROPERTIES LABELS "gpu;fp8" SKIP_RETURN_CODE 77)
# FP8 gradient scales in unscaled units: a static or a growing loss scale
# trains with the same FP8 telemetry and weights as none, and a first-step
# overflow of the loss scale no longer collapses the gradients' scales for
# the history's length (tests/fp8/loss_scale.sh).
add_test(NAME fp8_loss_scale_units
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fp8/loss_scale.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/configs/gpt_scaled_tiny.ini ${AMP_FP8_RUNS}/loss_scale)
set_tests_properties(fp8_loss_scale_units PROPERTIES LABELS "fp8;cli" SKIP_RETURN_CODE 77)
# Evaluation never changes training under any scaled policy: eval_every 0
# and 10 give the same training lines and weights (tests/fp8/eval_free.sh).
add_test(NAME fp8_eval_free
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fp8/eval_free.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/configs/gpt_scaled_tiny.ini ${AMP_FP8_RUNS}/eval_free)
set_tests_properties(fp8_eval_free PROPERTIES LABELS "fp8;cli" SKIP_RETURN_CODE 77)
# A checkpoint with the version-1 FP8 state (loss-scaled gradient amaxes)
# resumes with a warning; version 2 without; an unknown one is refused
# (tests/fp8/state_v1.sh).
add_test(NAME fp8_state_v1_resume
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fp8/state_v1.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/configs/gpt_scaled_tiny.ini ${AMP_FP8_RUNS}/state_v1)
set_tests_properties(fp8_state_v1_resume PROPERTIES LABELS "fp8;cli;checkpoint" SKIP_RETURN_CODE 77)
# summary.json's host round trips inside forward/backward: 10 per step of the
# tiny GPT under fp8's current recipe and nvfp4 (the amaxes and tensor scales
# the CPU's ops hand back as a device would download them), none under
# delayed scaling and fp32 (tests/fp8/host_trips.sh).
add_test(NAME fp8_host_round_trips
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fp8/host_trips.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/configs/gpt_scaled_tiny.ini ${AMP_FP8_RUNS}/host_trips)
set_tests_properties(fp8_host_round_trips PROPERTIES LABELS "fp8;cli" SKIP_RETURN_CODE 77)
