# Hugging Face model folders through [model] init (core/config/hf_config.c,
# core/train/init_weights.c, core/io/name_map.c).
#
# Against transformers: tests/data/hf_gpt2_reference.safetensors, written
# with the fixture folders by scripts/hf_reference.py (by hand, never here).
amp_unit_test(test_hf_gpt2 train)
add_dependencies(test_hf_gpt2 amp_precision_fp32 amp_scaler_none)

# Through the CLI, one fault per folder (tests/hf/make_folders.sh damages
# copies of the committed ones): each is exit 2 with a message naming the
# file and the key or tensor; the good folders train.
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)
set(AMP_HF_OUT ${CMAKE_BINARY_DIR}/tests/hf_folders)
add_test(NAME hf_folders_generate
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hf/make_folders.sh ${PROJECT_SOURCE_DIR}/tests/data
                 ${AMP_HF_OUT})
set_tests_properties(hf_folders_generate PROPERTIES FIXTURES_SETUP amp_hf_folders LABELS bad_input)
# amp_hf_case(NAME CODE REGEX [args...]): train base_hf.ini on folder NAME.
function(amp_hf_case name code regex)
  set(opts)
  if(NOT code EQUAL 0)
    set(opts --no-outputs ${AMP_HF_OUT}/runs/${name})
  endif()
  amp_expect_fail(hf_init_${name} LABELS bad_input
    OPTIONS ${opts}
    CODE ${code}
    REGEX ${regex}
    COMMAND $<TARGET_FILE:amptrain> train ${CMAKE_CURRENT_SOURCE_DIR}/bad_inputs/base_hf.ini
            --set model.init=${AMP_HF_OUT}/${name} --out ${AMP_HF_OUT}/runs/${name} ${ARGN})
  set_tests_properties(hf_init_${name} PROPERTIES TIMEOUT 120 FIXTURES_REQUIRED amp_hf_folders)
endfunction()
set(F [=[[^ ]*/hf_folders]=])
amp_hf_case(good 0 [=[base_hf: val_loss [0-9.]+, ]=])
amp_hf_case(sharded 0 [=[sharded/model\.safetensors\.index\.json: skipped 4 buffers that are not parameters \(_orig_mod\.transformer\.h\.0\.attn\.bias, \.\.\.\)]=])
amp_hf_case(no_config 2 "^amptrain: ${F}/no_config: no config\\.json: \\[model\\] init takes a \\.safetensors file or a Hugging Face model folder")
amp_hf_case(no_weights 2 "^amptrain: ${F}/no_weights: no model\\.safetensors nor model\\.safetensors\\.index\\.json beside config\\.json")
amp_hf_case(unknown_type 2 "^amptrain: ${F}/unknown_type/config\\.json: model_type 'bert' is not one amptrain builds \\(it builds gpt2, llama\\)")
amp_hf_case(unknown_key 2 "^amptrain: ${F}/unknown_key/config\\.json: key 'rope_scaling' is not one amptrain's gpt \\(model_type gpt2\\) can express")
amp_hf_case(layer_norm_eps 2 "^amptrain: ${F}/layer_norm_eps/config\\.json: layer_norm_epsilon = 1e-06: amptrain's gpt computes with 1e-05 only")
amp_hf_case(activation 2 "^amptrain: ${F}/activation/config\\.json: activation_function 'relu' is not one amptrain computes")
amp_hf_case(shape 2 "^amptrain: ${F}/shape/model\\.safetensors: 'transformer\\.wpe\\.weight' has shape \\[32, 64\\] but the model expects \\[16, 64\\]")
amp_hf_case(n_ctx 2 "^amptrain: ${F}/n_ctx/config\\.json: n_[a-z]+: \\[model\\] block_size = [0-9]+ disagrees with ${F}/n_ctx/config\\.json: n_[a-z]+ = [0-9]+$")
amp_hf_case(bad_json 2 "^amptrain: ${F}/bad_json/config\\.json:1:[0-9]+: ")
amp_hf_case(truncated_shard 2 "^amptrain: ${F}/truncated_shard/model-00002-of-00002\\.safetensors: .* \\(the shard the index names for '_orig_mod\\.[a-z_.0-9]+'\\)")
amp_hf_case(missing_shard 2 "^amptrain: ${F}/missing_shard/model-00001-of-00002\\.safetensors: cannot read: No such file or directory \\(the shard the index names for '_orig_mod\\.[a-z_.0-9]+'\\)")
amp_hf_case(wrong_shard 2 "^amptrain: ${F}/wrong_shard/model\\.safetensors\\.index\\.json: the index puts '_orig_mod\\.transformer\\.wte\\.weight' in ${F}/wrong_shard/model-00001-of-00002\\.safetensors, which does not hold it$")
# Llama folders: the good one trains (HF's module names), and what the
# family cannot express is refused by name: a rope scaling (v5's rope_type,
# or an older file's rope_scaling), another activation, biases.
amp_hf_case(llama_good 0 [=[base_hf: val_loss [0-9.]+, ]=])
amp_hf_case(llama_rope_type 2 "^amptrain: ${F}/llama_rope_type/config\\.json: rope_parameters must be \\{\"rope_type\": \"default\", \"rope_theta\": N\\} \\(rope_type 'linear'\\): amptrain implements no rope scaling")
amp_hf_case(llama_rope_scaling 2 "^amptrain: ${F}/llama_rope_scaling/config\\.json: rope_scaling is not null: amptrain implements no rope_scaling")
amp_hf_case(llama_act 2 "^amptrain: ${F}/llama_act/config\\.json: hidden_act must be \"silu\"")
amp_hf_case(llama_bias 2 "^amptrain: ${F}/llama_bias/config\\.json: attention_bias must be false")
# A key the family expresses, in a combination the decoder cannot build:
# named at config.json's key.
amp_hf_case(llama_kv_heads 2 "^amptrain: ${F}/llama_kv_heads/config\\.json: num_key_value_heads: \\[model\\] n_kv_head = 3 does not divide n_head = 4")
# An INI key that disagrees with config.json: both values named.
amp_hf_case(ini_disagrees 2 "^amptrain: --set model\\.n_layer: \\[model\\] n_layer = 3 disagrees with ${F}/ini_disagrees/config\\.json: n_layer = 2"
            --set model.n_layer=3)

# `amptrain export RUN --hf OUT`: the folder loads back as the run's weights.
add_test(NAME hf_export COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/hf/export.sh $<TARGET_FILE:amptrain>
                                ${PROJECT_SOURCE_DIR}/tests/data ${CMAKE_BINARY_DIR}/tests/hf_export)
set_tests_properties(hf_export PROPERTIES LABELS "train;cli" TIMEOUT 300)

# Training against PyTorch + transformers: 20 FP32 AdamW steps of hf_gpt2
# and hf_llama and one bf16 step of hf_llama through `amptrain train`,
# against tests/data/hf_train_reference.json (scripts/hf_train_reference.py,
# by hand).
add_test(NAME hf_train_reference
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/hf/train_reference.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/tests/data ${CMAKE_BINARY_DIR}/tests/hf_train_reference)
set_tests_properties(hf_train_reference PROPERTIES LABELS "train;cli" TIMEOUT 300)
