# The key tables (core/keys/settings_table.c, core/config/settings.c, each model's keys):
# docs/settings.md is generated from them and must match, and every core
# key a run reads must be one of their rows.
add_test(NAME settings_doc
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/settings/doc_matches.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/docs/settings.md)
set_tests_properties(settings_doc PROPERTIES LABELS "settings;config" TIMEOUT 60)
add_test(NAME settings_every_key_in_table
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/settings/every_key_in_table.sh
                 $<TARGET_FILE:amptrain> ${CMAKE_BINARY_DIR}/tests/settings_runs
                 ${PROJECT_SOURCE_DIR}/configs)
set_tests_properties(settings_every_key_in_table PROPERTIES LABELS "settings;config" TIMEOUT 300)
# The tables' own consistency (defaults in range, conditions that name a
# choice) and that the check catches each kind of broken row.
amp_unit_test(test_settings_table settings config)
# `amptrain settings` takes no argument but --markdown: anything else is a
# usage error, exit 2.
amp_expect_fail(settings_bad_argument LABELS settings cli
  CODE 2
  REGEX [=[^amptrain settings: unexpected argument 'run\.name'$]=]
  COMMAND $<TARGET_FILE:amptrain> settings run.name)
# The key tables say what the code does: `shard = gradients` works with
# bf16 gradients too (dist_shard_grads checks it bitwise), which the
# table once denied ("`grad_dtype = f32` only").
amp_expect_fail(settings_shard_gradients_bf16 LABELS settings cli
  CODE 0
  OPTIONS --stdout --not [=[f32` only]=]
  REGEX [=[`gradients` \(ZeRO-2\).*`grad_dtype = f32` or `bf16`]=]
  COMMAND $<TARGET_FILE:amptrain> settings --markdown)
