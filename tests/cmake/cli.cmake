# Configuration errors through the real CLI: exit status 2 and a message that
# starts at the exact `file:LINE:` of the offending line (tests/configs/bad_*.ini;
# the line numbers below are the ones their header comments name).
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)

set(AMP_BAD_CFG ${CMAKE_CURRENT_SOURCE_DIR}/configs)
set(AMP_CLI_OUT ${CMAKE_BINARY_DIR}/tests/cli_runs)

# amp_cli_config_error(NAME REGEX [extra CLI args...]): runs bad_NAME.ini.
function(amp_cli_config_error name regex)
  amp_expect_fail(cli_bad_${name} LABELS cli
    CODE 2
    REGEX "^amptrain: [^ ]*/bad_${name}\\.ini:${regex}"
    COMMAND $<TARGET_FILE:amptrain> train ${AMP_BAD_CFG}/bad_${name}.ini ${ARGN}
            --out ${AMP_CLI_OUT}/${name})
endfunction()

amp_cli_config_error(section
  [=[9: unknown section \[optimm\]. did you mean \[optim\]\?]=])
amp_cli_config_error(key
  [=[8: unknown key 'weight_decai' in \[optim\]. did you mean 'weight_decay'\?]=])
amp_cli_config_error(number
  [=[7: \[optim\] lr = '0\.0o3': not a number]=])
amp_cli_config_error(range
  [=[8: \[data\] batch_size = '0': out of range. expected an integer in \[1, 65536\]]=])
# `bogus` sits in [scaler] above `plugin = static`: only the plugin's init
# can tell it is unknown, and the line must still be the key's.
amp_cli_config_error(plugin_key
  [=[10: unknown key 'bogus' in \[scaler\]. known keys: plugin, scale]=])

# --set: a malformed assignment, then a bad value located as "--set section.key".
set(AMP_CLI_TINY ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_dynamic.ini)
amp_expect_fail(cli_bad_set_syntax LABELS cli
  CODE 2
  REGEX [=[^amptrain: --set 'trainsteps': no '='. expected section\.key=value]=]
  COMMAND $<TARGET_FILE:amptrain> train ${AMP_CLI_TINY} --set trainsteps --out ${AMP_CLI_OUT}/set)
amp_expect_fail(cli_bad_set_value LABELS cli
  CODE 2
  REGEX [=[^amptrain: --set train\.steps: \[train\] steps = 'abc': not an integer]=]
  COMMAND $<TARGET_FILE:amptrain> train ${AMP_CLI_TINY} --set train.steps=abc --out ${AMP_CLI_OUT}/set)
amp_expect_fail(cli_bad_set_key LABELS cli
  CODE 2
  REGEX [=[^amptrain: --set train\.stepz: unknown key 'stepz' in \[train\]. did you mean 'steps'\?]=]
  COMMAND $<TARGET_FILE:amptrain> train ${AMP_CLI_TINY} --set train.stepz=3 --out ${AMP_CLI_OUT}/set)
# A --set elsewhere does not hide the file's own bad line.
amp_expect_fail(cli_bad_range_with_set LABELS cli
  CODE 2
  REGEX [=[^amptrain: [^ ]*/bad_range\.ini:8: \[data\] batch_size = '0': out of range]=]
  COMMAND $<TARGET_FILE:amptrain> train ${AMP_BAD_CFG}/bad_range.ini --set optim.lr=0.5
          --out ${AMP_CLI_OUT}/range_with_set)
