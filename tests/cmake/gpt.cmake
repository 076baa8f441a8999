# The GPT against PyTorch: tests/data/gpt_reference.safetensors, written by
# scripts/gpt_reference.py (by hand, never here).
amp_unit_test(test_gpt_reference train)
# Text data, SHA-256, the text batcher, whole-GPT finite differences, a GPT session.
amp_unit_test(test_gpt train)
add_dependencies(test_gpt amp_precision_fp32 amp_scaler_none)
# The GPT through the CLI: bitwise resume, val_loss, vocab.json, sample, refusals.
add_test(NAME gpt_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpt/gpt_cli.sh $<TARGET_FILE:amptrain>
                              ${PROJECT_SOURCE_DIR}/configs ${CMAKE_BINARY_DIR}/tests/gpt_runs)
set_tests_properties(gpt_cli PROPERTIES LABELS "train;cli;checkpoint" TIMEOUT 300)
# CPU-vs-CUDA parity of 20 GPT steps per policy: the gpt rows of
# test_gpu_parity (tests/cmake/gpu_parity.cmake; label gpu, 77 without a
# device), and the same comparison CPU-vs-CPU (--self-check) so its code
# runs everywhere.
add_test(NAME test_gpu_gpt_parity COMMAND test_gpu_parity --only gpt)
set_tests_properties(test_gpu_gpt_parity PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
add_test(NAME gpt_parity_cpu_vs_cpu COMMAND test_gpu_parity --self-check --only gpt)
set_tests_properties(gpt_parity_cpu_vs_cpu PROPERTIES LABELS train)
# [model] activation: both GELUs train, a bad value is exit 2, a checkpoint
# (also one from before the key) resumes only with the GELU it ran.
add_executable(drop_config_key ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/drop_config_key.c)
target_link_libraries(drop_config_key PRIVATE amp_core)
target_compile_options(drop_config_key PRIVATE ${AMP_C_WARNINGS})
add_test(NAME gpt_activation
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpt/activation.sh $<TARGET_FILE:amptrain>
                 $<TARGET_FILE:drop_config_key> ${CMAKE_BINARY_DIR}/tests/gpt_activation)
set_tests_properties(gpt_activation PROPERTIES LABELS "train;cli;checkpoint" TIMEOUT 300)
# [model] init with a nanoGPT state_dict: the tied LM head under either name,
# or both when equal; two different copies refused.
add_executable(make_tied_init ${CMAKE_CURRENT_SOURCE_DIR}/gpt/make_tied_init.c)
target_link_libraries(make_tied_init PRIVATE amp_core)
target_compile_options(make_tied_init PRIVATE ${AMP_C_WARNINGS})
add_test(NAME gpt_init_tied
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpt/init_tied.sh $<TARGET_FILE:amptrain>
                 $<TARGET_FILE:make_tied_init> ${CMAKE_BINARY_DIR}/tests/gpt_init_tied)
set_tests_properties(gpt_init_tied PROPERTIES LABELS "train;cli" TIMEOUT 300)
# sample on the folder of an MLP run (finished, or its checkpoint alone)
# says what the folder holds; it used to blame "--set data.path", an
# option the user never gave (here the folder held a text run before, whose
# vocab.json the MLP run left behind).
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)
set(AMP_SAMPLE_MLP ${CMAKE_BINARY_DIR}/tests/gpt_runs/sample_mlp)
amp_expect_fail(sample_not_text_finished LABELS cli
  CODE 2
  REGEX [=[^amptrain sample: .*/mlp holds a \[model\] name = mlp run on \[data\] dataset = tiny \(.*config\.ini:[0-9]+\), not a text model]=]
  OPTIONS --not [=[--set]=]
  COMMAND sh -c [=[rm -rf "$1" && "$0" train "$3" --set train.steps=2 --set train.checkpoint_every=0 --out "$1" 2>/dev/null &&
                  "$0" train "$2" --set train.steps=2 --out "$1" 2>/dev/null && exec "$0" sample "$1"]=]
          $<TARGET_FILE:amptrain> ${AMP_SAMPLE_MLP}/mlp ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_dynamic.ini
          ${CMAKE_CURRENT_SOURCE_DIR}/gpt/tiny_gpt.ini)
amp_expect_fail(sample_not_text_checkpoint LABELS cli
  CODE 2
  REGEX [=[^amptrain sample: .*/mlp_ckpt holds a \[model\] name = mlp run on \[data\] dataset = tiny \(.*ckpt-00000002\.amp:[0-9]+\), not a text model]=]
  OPTIONS --not [=[--set]=]
  COMMAND sh -c [=[rm -rf "$1" && "$0" train "$2" --set train.steps=2 --set train.checkpoint_every=2 --out "$1" 2>/dev/null &&
                  rm "$1/config.ini" "$1/weights.safetensors" && exec "$0" sample "$1"]=]
          $<TARGET_FILE:amptrain> ${AMP_SAMPLE_MLP}/mlp_ckpt ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_dynamic.ini)
# The GPT under the fp8 policy against PyTorch: tests/data/gpt_fp8_reference.safetensors,
# written by scripts/gpt_fp8_reference.py (by hand, never here).
amp_unit_test(test_gpt_fp8_reference train fp8)
add_dependencies(test_gpt_fp8_reference amp_precision_fp8 amp_scaler_none)
# The GPT under the nvfp4 policy against PyTorch: tests/data/gpt_nvfp4_reference.safetensors,
# written by scripts/gpt_nvfp4_reference.py (by hand, never here). The test must fail on a
# reference a little off: every loss times 1 + 2e-5, or one gradient value moved.
amp_unit_test(test_gpt_nvfp4_reference train nvfp4)
add_dependencies(test_gpt_nvfp4_reference amp_precision_nvfp4 amp_scaler_none)
# The same with block 0's forwards on a composed nvfp4_gemm (the kit's path to
# a GPU's block-scaled FP4 GEMM: X's codes and scales, W's 16x16 tiles).
add_test(NAME test_gpt_nvfp4_reference_nvfp4_gemm COMMAND test_gpt_nvfp4_reference --nvfp4-gemm)
set_tests_properties(test_gpt_nvfp4_reference_nvfp4_gemm PROPERTIES LABELS "train;nvfp4")
amp_expect_fail(test_gpt_nvfp4_reference_perturbed_loss LABELS train nvfp4
  CODE 1
  REGEX [=[step 0: loss [0-9.]+, torch [0-9.]+ \(rel [0-9.e-]+ > 1e-05\)]=]
  COMMAND $<TARGET_FILE:test_gpt_nvfp4_reference> --perturb loss)
amp_expect_fail(test_gpt_nvfp4_reference_perturbed_grad LABELS train nvfp4
  CODE 1
  REGEX [=[nvfp4\.step0\.grad\.transformer\.h\.0\.attn\.c_attn\.weight: max \|amptrain - torch\| = ]=]
  COMMAND $<TARGET_FILE:test_gpt_nvfp4_reference> --perturb grad)
# The decoder's Llama keys (norm = rmsnorm, mlp = swiglu, intermediate):
# they train, telemetry and precision.layer globs reach the SwiGLU Linears,
# bad values are exit 2.
add_test(NAME gpt_decoder_keys
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpt/decoder_keys.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_BINARY_DIR}/tests/gpt_decoder_keys)
set_tests_properties(gpt_decoder_keys PROPERTIES LABELS "train;cli" TIMEOUT 300)
# The shipped Llama configs in an A/B layer scan (bf16 vs fp8, 4 steps):
# the groups carry Hugging Face Llama's module names.
add_test(NAME llama_ab_scan
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpt/llama_ab_scan.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${CMAKE_BINARY_DIR}/tests/llama_ab_scan)
set_tests_properties(llama_ab_scan PROPERTIES LABELS "ab;train" TIMEOUT 600)
# A text run without [data] path reads the shipped corpus, looked for beside
# the executable (<prefix>/share/amptrain/data/) and in the source tree:
# amptrain_nodata is amptrain built against a source tree without it, so the
# error must say where the corpus is expected, and the run must find it once
# it is there.
add_executable(amptrain_nodata ${PROJECT_SOURCE_DIR}/core/cli/main.c ${PROJECT_SOURCE_DIR}/core/data/text.c)
target_link_libraries(amptrain_nodata PRIVATE amp_core)
target_compile_options(amptrain_nodata PRIVATE ${AMP_C_WARNINGS})
set(AMP_NODATA_SOURCE ${CMAKE_BINARY_DIR}/tests/no_source_tree/data)
target_compile_definitions(amptrain_nodata PRIVATE
  AMP_DATA_INSTALL_SUBDIR="${CMAKE_INSTALL_DATADIR}/amptrain/data"
  AMP_DATA_SOURCE_DIR="${AMP_NODATA_SOURCE}")
add_dependencies(amptrain_nodata amp_precision_fp16 amp_scaler_dynamic)
add_test(NAME gpt_shipped_corpus
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpt/shipped_corpus.sh $<TARGET_FILE:amptrain_nodata>
                 ${AMP_PLUGIN_BUILD_DIR} ${PROJECT_SOURCE_DIR}/data/tinyshakespeare.txt
                 ${AMP_NODATA_SOURCE} ${CMAKE_INSTALL_DATADIR}
                 ${CMAKE_CURRENT_SOURCE_DIR}/gpt/tiny_gpt.ini ${CMAKE_BINARY_DIR}/tests/gpt_shipped_corpus)
set_tests_properties(gpt_shipped_corpus PROPERTIES LABELS "train;cli" TIMEOUT 120)
# The GPT-2 small configs parse and build (2 steps at a shrunk width; the
# full model's runs are in docs/performance.md, too slow for the suite).
add_test(NAME gpt2_small_configs
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpt/gpt2_small_configs.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_BINARY_DIR}/tests/gpt2_small_configs ${PROJECT_SOURCE_DIR}/configs)
set_tests_properties(gpt2_small_configs PROPERTIES LABELS "train;config" TIMEOUT 300
                     ENVIRONMENT AMPTRAIN_THREADS=1)
