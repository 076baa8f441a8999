# CPU/CUDA parity of whole training runs (fp32, fp16 + dynamic, bf16 + none):
# per-step loss curves, skipped steps and the final evaluation, a row per
# model and policy (tests/gpu_rows.h). This test runs the mlp rows; the gpt
# ones are test_gpu_gpt_parity (tests/cmake/gpt.cmake). Label `gpu`; exits
# 77 (skipped) when no device is visible.
amp_unit_test(test_gpu_parity gpu ARGS --only mlp)
add_dependencies(test_gpu_parity amp_precision_fp32 amp_precision_fp16 amp_precision_bf16
                 amp_precision_fp8 amp_precision_mxfp8 amp_precision_nvfp4
                 amp_scaler_none amp_scaler_dynamic)

# The CLI on a machine WITHOUT a GPU: `--set run.device=cuda` must fail with
# exit 1 and say why: cudaGetDeviceCount's error and the driver and runtime
# versions. Skipped (77) where nvidia-smi -L lists a GPU. A build without
# CUDA answers with the stub backend's message instead.
if(AMP_HAVE_CUDA)
  set(_amp_no_gpu_re "no CUDA device is visible: cudaGetDeviceCount.*; driver: .*; runtime: CUDA [0-9]+\\.[0-9]")
else()
  set(_amp_no_gpu_re "built without CUDA")
endif()
add_test(NAME train_cuda_without_gpu
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_no_gpu.sh "${_amp_no_gpu_re}"
                 $<TARGET_FILE:amptrain> ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_dynamic.ini)
set_tests_properties(train_cuda_without_gpu PROPERTIES
  SKIP_RETURN_CODE 77
  LABELS "gpu;cli")
unset(_amp_no_gpu_re)
