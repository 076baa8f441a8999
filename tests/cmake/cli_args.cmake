# Argument parsing (issue 15): every command parses with getopt_long, so
# `--opt=value` and `--opt value` both work everywhere (`ab --out=X` was
# refused while `train --out=X` worked), there is no 256-`--set` limit (the
# 257th `--set=` said "unknown option"), and empty or missing values are
# usage errors (exit 2; `--out ""` read past the string).
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)

set(AMP_ARGS_OUT ${CMAKE_BINARY_DIR}/tests/cli_args_runs)
set(AMP_ARGS_CFG ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_dynamic.ini)
set(AMP_ARGS_CFG2 ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_none.ini)
set(AMP_EXE $<TARGET_FILE:amptrain>)

# 300 --set= options, the last one deciding.
set(AMP_300_SETS)
foreach(i RANGE 1 300)
  list(APPEND AMP_300_SETS --set=train.steps=${i})
endforeach()
amp_expect_fail(cli_args_train_300_sets LABELS cli
  CODE 0
  REGEX [=[tiny_fp16_dynamic: test_acc [0-9.]+ .*, 2 steps]=]
  COMMAND ${AMP_EXE} train ${AMP_ARGS_CFG} ${AMP_300_SETS} --set train.steps=2
          --out=${AMP_ARGS_OUT}/train_300)
# ab: --out=, --seeds=, --set= and 300 --set options passed on to each run.
amp_expect_fail(cli_args_ab_equals LABELS cli ab
  CODE 0
  REGEX "^ab.json: +${AMP_ARGS_OUT}/ab_equals/ab.json"
  OPTIONS --stdout
  COMMAND ${AMP_EXE} ab ${AMP_ARGS_CFG2} ${AMP_ARGS_CFG} --seeds=1 ${AMP_300_SETS}
          --set=train.steps=2 --allow-diff --out=${AMP_ARGS_OUT}/ab_equals)

# Usage errors: exit 2, the command named, the problem said.
function(amp_args_error name regex)
  amp_expect_fail(cli_args_${name} LABELS cli CODE 2 REGEX ${regex} COMMAND ${ARGN})
endfunction()
# (CMake drops empty arguments from COMMAND lists: sh passes the '' on.)
amp_args_error(empty_out [=[^amptrain train: --out needs a value, not an empty string]=]
  sh -c [=["$0" train "$1" --out '']=] ${AMP_EXE} ${AMP_ARGS_CFG})
amp_args_error(empty_out_equals [=[^amptrain train: --out needs a value, not an empty string]=]
  ${AMP_EXE} train ${AMP_ARGS_CFG} --out=)
amp_args_error(empty_resume [=[^amptrain train: --resume needs a value, not an empty string]=]
  sh -c [=["$0" train "$1" --resume '']=] ${AMP_EXE} ${AMP_ARGS_CFG})
amp_args_error(empty_config [=[^amptrain train: the config path is empty]=]
  sh -c [=["$0" train '']=] ${AMP_EXE})
amp_args_error(set_last [=[^amptrain train: --set needs a value]=]
  ${AMP_EXE} train ${AMP_ARGS_CFG} --set)
amp_args_error(unknown_train [=[^amptrain train: unknown or ambiguous option '--outt']=]
  ${AMP_EXE} train ${AMP_ARGS_CFG} --outt x)
amp_args_error(out_twice [=[^amptrain train: --out given twice \('a', 'b'\)]=]
  ${AMP_EXE} train ${AMP_ARGS_CFG} --out a --out=b)
amp_args_error(ab_ambiguous [=[^amptrain ab: unknown or ambiguous option '--se']=]
  ${AMP_EXE} ab ${AMP_ARGS_CFG} ${AMP_ARGS_CFG2} --se 2)
amp_args_error(ab_empty_out [=[^amptrain ab: --out needs a value, not an empty string]=]
  ${AMP_EXE} ab ${AMP_ARGS_CFG} ${AMP_ARGS_CFG2} --out=)
amp_args_error(ab_seeds [=[^amptrain ab: --seeds 'x': expected an integer in \[1, 1000\]]=]
  ${AMP_EXE} ab ${AMP_ARGS_CFG} ${AMP_ARGS_CFG2} --seeds=x)
amp_args_error(plugins_extra [=[^amptrain plugins: unexpected argument 'x']=]
  ${AMP_EXE} plugins x)
amp_args_error(checkpoints_empty [=[^amptrain checkpoints: RUN_DIR is empty]=]
  sh -c [=["$0" checkpoints '']=] ${AMP_EXE})
amp_args_error(new_plugin_unknown [=[^amptrain new-plugin: unknown or ambiguous option '--kind']=]
  ${AMP_EXE} new-plugin --kind scaler x)
amp_args_error(tokenize_val_fraction [=[^amptrain tokenize: --val-fraction 1: a number in \[0, 1\)]=]
  ${AMP_EXE} tokenize --tokenizer x.json --out o --val-fraction 1 a.txt)
amp_args_error(tokenize_no_out [=[^amptrain tokenize: --out DIR is required]=]
  ${AMP_EXE} tokenize --tokenizer x.json a.txt)
# --help on every command: its usage on stdout, exit 0.
foreach(cmd train ab plugins checkpoints new-plugin sample tokenize)
  amp_expect_fail(cli_args_help_${cmd} LABELS cli
    CODE 0 REGEX "^usage: amptrain ${cmd}" OPTIONS --stdout COMMAND ${AMP_EXE} ${cmd} --help)
endforeach()
# Long options by their unique prefix and `--` before a positional.
amp_expect_fail(cli_args_verbose_long LABELS cli
  CODE 0 REGEX [=[^search order]=] OPTIONS --stdout COMMAND ${AMP_EXE} plugins --verb)
amp_expect_fail(cli_args_double_dash LABELS cli
  CODE 2 REGEX [=[^amptrain: --set-like\.ini: cannot read: No such file or directory]=]
  COMMAND ${AMP_EXE} train -- --set-like.ini)

# sample parses with the same getopt_long as the other commands (it had its
# own loop: `--tokens=5` "needs a value", `--help` was a usage error, no
# prefixes). One short text run is the fixture the sample tests read.
set(AMP_ARGS_GPT ${AMP_ARGS_OUT}/sample_gpt)
add_test(NAME cli_args_sample_run
         COMMAND ${AMP_EXE} train ${PROJECT_SOURCE_DIR}/tests/gpt/tiny_gpt.ini --set train.steps=2
                 --set train.checkpoint_every=0 --set train.eval_every=0 --out ${AMP_ARGS_GPT})
set_tests_properties(cli_args_sample_run PROPERTIES LABELS cli FIXTURES_SETUP amp_sample_gpt)
amp_expect_fail(cli_args_sample_equals LABELS cli
  CODE 0 REGEX [=[^ROMEO:.{5}$]=] OPTIONS --stdout
  COMMAND ${AMP_EXE} sample ${AMP_ARGS_GPT} --prompt=ROMEO: --tokens=5 --seed=3 --temperature=0.5
          --top-k=1)
amp_expect_fail(cli_args_sample_prefix LABELS cli
  CODE 0 REGEX [=[^ROMEO:.{5}$]=] OPTIONS --stdout
  COMMAND ${AMP_EXE} sample --tok 5 --pro ROMEO: ${AMP_ARGS_GPT} --see=3 --tem 0.5 --top 1)
amp_args_error(sample_ambiguous [=[^amptrain sample: unknown or ambiguous option '--t']=]
  ${AMP_EXE} sample ${AMP_ARGS_GPT} --t 5)
amp_args_error(sample_empty_prompt [=[^amptrain sample: --prompt needs a value, not an empty string]=]
  ${AMP_EXE} sample ${AMP_ARGS_GPT} --prompt=)
amp_args_error(sample_tokens [=[^amptrain sample: --tokens '2.5': expected an integer in \[0, 1e\+07\]]=]
  ${AMP_EXE} sample ${AMP_ARGS_GPT} --tokens=2.5)
amp_args_error(sample_two_dirs [=[^amptrain sample: one DIR only]=]
  ${AMP_EXE} sample ${AMP_ARGS_GPT} ${AMP_ARGS_GPT})
set_tests_properties(cli_args_sample_equals cli_args_sample_prefix cli_args_sample_ambiguous
                     cli_args_sample_empty_prompt cli_args_sample_tokens cli_args_sample_two_dirs
                     PROPERTIES FIXTURES_REQUIRED amp_sample_gpt)

# Help: every option in each command's getopt_long table (read from
# core/cli/cmd_*.c) is described in that command's --help and named in
# amptrain --help, so an option added without help fails here.
add_test(NAME cli_help_options
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/help_options.sh ${AMP_EXE}
                 ${PROJECT_SOURCE_DIR}/core/cli)
set_tests_properties(cli_help_options PROPERTIES LABELS cli TIMEOUT 60)
# The docs name every shipped plugin (docs/plugins.md) and config
# (docs/commands.md).
add_test(NAME cli_docs_lists
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/docs_lists.sh ${AMP_EXE} ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_docs_lists PROPERTIES LABELS cli TIMEOUT 60)
