# Config parsing, strict reading, --set and resolved output (core/io/config*.c).
amp_unit_test(test_config)

# Config behaviour through the CLI: tests/config/NAME.sh AMPTRAIN WORK_DIR.
function(amp_config_cli_test name)
  add_test(NAME config_${name}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/config/${name}.sh $<TARGET_FILE:amptrain>
                   ${CMAKE_BINARY_DIR}/tests/config_runs/${name})
  set_tests_properties(config_${name} PROPERTIES LABELS "cli;config" TIMEOUT 300)
endfunction()
# layer.<glob> overrides in a file and with --set: the resolved per-layer
# precision, a later key wins, no match and malformed globs are exit 2.
amp_config_cli_test(precision_globs)
# config.ini re-runs the run exactly (awkward values, long lines, a config
# path with a newline); values no INI line can hold are refused up front.
amp_config_cli_test(resolved_rerun)
# Every AMPTRAIN_* variable is checked: a bad value is exit 2 naming it.
amp_config_cli_test(env_vars)
# AMPTRAIN_PLUGIN_PATH with 40 entries still searches every folder.
amp_config_cli_test(plugin_path_entries)
# Relative paths from another working directory: in the file against the
# config's folder, with --set (train and ab) against the working directory.
amp_config_cli_test(relative_paths)

# A key that the chosen schedule, optimizer, dataset or model does not use is
# still an error, explained with the choice that leaves it unread and the
# choices that read it, at its line or its --set.
set(AMP_CLI_GPT ${PROJECT_SOURCE_DIR}/configs/gpt_shakespeare_fp32.ini)
# amp_cli_unused(NAME CONFIG REGEX --set ...): train CONFIG with the --sets.
function(amp_cli_unused name config regex)
  amp_expect_fail(cli_unused_${name} LABELS cli config
    CODE 2
    REGEX "^amptrain: ${regex}"
    OPTIONS --no-outputs ${AMP_CLI_OUT}/unused_${name}
    COMMAND $<TARGET_FILE:amptrain> train ${config} ${ARGN} --out ${AMP_CLI_OUT}/unused_${name})
endfunction()
amp_cli_unused(min_lr_constant ${AMP_CLI_GPT}
  [=[[^ ]*/gpt_shakespeare_fp32\.ini:26: 'min_lr' in \[optim\] is not used by schedule=constant \(used by: cosine\)$]=]
  --set optim.schedule=constant)
amp_cli_unused(momentum_adamw ${AMP_CLI_TINY}
  [=[--set optim\.momentum: 'momentum' in \[optim\] is not used by name=adamw \(used by: sgd\)$]=]
  --set optim.momentum=0.5)
amp_cli_unused(eps_sgd ${AMP_CLI_TINY}
  [=[[^ ]*/tiny_fp16_dynamic\.ini:25: 'eps' in \[optim\] is not used by name=sgd \(used by: adamw\)$]=]
  --set optim.name=sgd)
amp_cli_unused(train_size_fashion ${AMP_CLI_TINY}
  [=[[^ ]*/tiny_fp16_dynamic\.ini:11: 'train_size' in \[data\] is not used by dataset=fashion_mnist \(used by: tiny\)$]=]
  --set data.dataset=fashion_mnist --set data.train_limit=64 --set data.test_limit=64)
amp_cli_unused(path_tiny ${AMP_CLI_TINY}
  [=[--set data\.path: 'path' in \[data\] is not used by dataset=tiny \(used by: fashion_mnist, text\)$]=]
  --set data.path=/nowhere)
amp_cli_unused(eval_iters_tiny ${AMP_CLI_TINY}
  [=[--set data\.eval_iters: 'eval_iters' in \[data\] is not used by dataset=tiny \(used by: text, tokens\)$]=]
  --set data.eval_iters=3)
amp_cli_unused(n_layer_mlp ${AMP_CLI_TINY}
  [=[--set model\.n_layer: 'n_layer' in \[model\] is not used by name=mlp \(used by: gpt\)$]=]
  --set model.n_layer=2)
amp_cli_unused(layers_mlp ${AMP_CLI_TINY}
  [=[--set model\.layers: 'layers' in \[model\] is not used by name=mlp \(used by: cnn\)$]=]
  --set model.layers=fc)
# A key no choice reads is still unknown, with its suggestion.
amp_cli_unused(still_unknown ${AMP_CLI_TINY}
  [=[--set optim\.lrr: unknown key 'lrr' in \[optim\]. did you mean 'lr'\?$]=]
  --set optim.lrr=0)
