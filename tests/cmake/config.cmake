# Config parsing, strict reading, --set and resolved output (core/io/config.c).
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
