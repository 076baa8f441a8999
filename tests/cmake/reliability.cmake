# Issue 15, part B: what a hostile user found in numerics' neighbours:
# output safety, checkpoints, signals and streams, and the stress test. The
# docs/reliability.md lists each guarantee with its test here.
# (Numerics: tests/cmake/nonfinite.cmake and test_unscale.)
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)

set(AMP_REL_OUT ${CMAKE_BINARY_DIR}/tests/reliability_runs)
set(AMP_REL_TINY ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_dynamic.ini)
set(AMP_REL_SGD ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/tiny_sgd.ini)

# Test plugins (built like loader.cmake's bad plugins, into the same folder).
amp_bad_plugin(scaler block block.c)
amp_bad_plugin(scaler stategrow badstate.c BAD_STATE_GROW)
amp_bad_plugin(scaler statehuge badstate.c BAD_STATE_HUGE)
amp_bad_plugin(scaler stateoverrun badstate.c BAD_STATE_OVERRUN)
set(AMP_NAME63 ppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp)
set(AMP_NAME64 qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq)
amp_bad_plugin(scaler ${AMP_NAME63} namelen.c PLUGIN_NAME="${AMP_NAME63}")
amp_bad_plugin(scaler ${AMP_NAME64} namelen.c PLUGIN_NAME="${AMP_NAME64}")
set(AMP_REL_PLUGINS amp_bad_scaler_block amp_bad_scaler_stategrow amp_bad_scaler_statehuge
    amp_bad_scaler_stateoverrun amp_bad_scaler_${AMP_NAME63} amp_bad_scaler_${AMP_NAME64})
set(AMP_REL_ENV AMPTRAIN_PLUGIN_PATH=${AMP_BAD_PLUGIN_DIR})

# ---------------------------------------------------------- output safety
add_test(NAME output_lock
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/output/lock.sh $<TARGET_FILE:amptrain>
                 ${AMP_REL_SGD} ${AMP_REL_OUT}/lock ${AMP_BAD_PLUGIN_DIR})
add_test(NAME output_never_over_input
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/output/paths.sh $<TARGET_FILE:amptrain>
                 ${AMP_REL_TINY} ${AMP_REL_OUT}/paths)
# Every command that prints, with stdout on /dev/full and closed: exit 1
# and a message (sample, plugins -v, --version exited 0 with the text lost).
add_test(NAME output_stdout_fails
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/output/stdout_fail.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR} ${AMP_REL_OUT}/stdout)
# Progress: a live line on a terminal (a pty from script), the lines as
# always off one.
add_test(NAME output_progress
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/output/progress.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/tiny_sgd.ini
                 ${CMAKE_CURRENT_SOURCE_DIR}/gpt/tiny_gpt.ini ${AMP_REL_OUT}/progress)
# A text run's evaluation is val_loss in train's and ab's lines, not test_acc.
add_test(NAME output_val_loss_names
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/output/val_loss_names.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/gpt/tiny_gpt.ini
                 ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/tiny_sgd.ini ${AMP_REL_OUT}/val_loss_names)
set_tests_properties(output_lock output_never_over_input output_stdout_fails output_progress
                     output_val_loss_names PROPERTIES LABELS "output;cli" TIMEOUT 120)

# [run] name becomes a folder name: "..", a slash or a hidden name are config
# errors located at their line.
foreach(bad ".." "../up" "a/b" ".hidden" "")
  string(MAKE_C_IDENTIFIER "x${bad}" id)
  string(REGEX REPLACE "([][.*+?^$(){}|\\])" "\\\\\\1" bad_re "${bad}")
  amp_expect_fail(output_run_name_${id} LABELS output cli
    CODE 2
    REGEX "^amptrain: --set run\\.name: \\[run\\] name = '${bad_re}': use 1 to 64 letters, digits and \\. _ - \\+ not starting with '\\.'"
    COMMAND $<TARGET_FILE:amptrain> train ${AMP_REL_TINY} "--set=run.name=${bad}")
endforeach()
# Empty paths are usage errors, never "" read as a folder. (Through sh -c:
# CMake drops empty arguments.)
set(AMP_REL_A $<TARGET_FILE:amptrain>)
amp_expect_fail(output_empty_out LABELS output cli CODE 2
  REGEX [=[^amptrain train: --out needs a value, not an empty string]=]
  COMMAND sh -c "exec \"$0\" train \"$1\" --out ''" ${AMP_REL_A} ${AMP_REL_TINY})
amp_expect_fail(output_empty_resume LABELS output cli CODE 2
  REGEX [=[^amptrain train: --resume]=]
  COMMAND sh -c "exec \"$0\" train \"$1\" --resume ''" ${AMP_REL_A} ${AMP_REL_TINY})
amp_expect_fail(output_empty_config LABELS output cli CODE 2
  REGEX [=[^amptrain train: the config path is empty]=]
  COMMAND sh -c "exec \"$0\" train ''" ${AMP_REL_A})
amp_expect_fail(output_empty_ab_out LABELS output cli CODE 2
  REGEX [=[^amptrain ab: --out needs a value, not an empty string]=]
  COMMAND sh -c "exec \"$0\" ab \"$1\" \"$2\" --out ''" ${AMP_REL_A} ${AMP_REL_TINY} ${AMP_REL_SGD})
amp_expect_fail(output_empty_checkpoints LABELS output cli CODE 2
  REGEX [=[^amptrain checkpoints: RUN_DIR is empty]=]
  COMMAND sh -c "exec \"$0\" checkpoints ''" ${AMP_REL_A})
amp_expect_fail(output_empty_new_plugin_dir LABELS output cli CODE 2
  REGEX [=[^amptrain new-plugin: an empty argument]=]
  COMMAND sh -c "exec \"$0\" new-plugin scaler fine ''" ${AMP_REL_A})

# ------------------------------------------------------------ checkpoints
# make_old_ckpt rewrites a checkpoint as amptrain wrote them before MPOS
# (every metrics line in METR), for the compatibility case of history.sh, or
# before DATA (the data's fingerprint), for data_changed.sh.
add_executable(make_old_ckpt ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/make_old_ckpt.c)
target_link_libraries(make_old_ckpt PRIVATE amp_core)
target_compile_options(make_old_ckpt PRIVATE ${AMP_C_WARNINGS})
add_test(NAME checkpoint_history
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/history.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${AMP_REL_OUT}/history $<TARGET_FILE:make_old_ckpt>)
set_tests_properties(checkpoint_history PROPERTIES LABELS "checkpoint;cli" TIMEOUT 300)
# --resume on other data (an edited corpus, another IDX file) is refused by
# the checkpoint's data fingerprint; one without it resumes with a warning.
add_test(NAME checkpoint_data_changed
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/data_changed.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${AMP_REL_OUT}/data_changed $<TARGET_FILE:make_old_ckpt>)
set_tests_properties(checkpoint_data_changed PROPERTIES LABELS "checkpoint;cli" TIMEOUT 300)
# Every length a scaler's state_save reports is checked (ASan saw the host
# read 4096 bytes of an 8-byte buffer).
amp_expect_fail(checkpoint_state_save_grows ENV ${AMP_REL_ENV} LABELS checkpoint plugins
  CODE 1
  REGEX [=[scaler plugin 'stategrow': state_save asked for 8 bytes, then reported 4096 for the same state]=]
  OPTIONS --no-outputs ${AMP_REL_OUT}/stategrow
  COMMAND $<TARGET_FILE:amptrain> train ${AMP_REL_SGD} --set scaler.plugin=stategrow
          --set train.checkpoint_every=1 --out ${AMP_REL_OUT}/stategrow)
amp_expect_fail(checkpoint_state_save_huge ENV ${AMP_REL_ENV} LABELS checkpoint plugins
  CODE 1
  REGEX [=[scaler plugin 'statehuge': state_save asks for [0-9]+ bytes. a scaler's state may take at most 16777216]=]
  OPTIONS --no-outputs ${AMP_REL_OUT}/statehuge
  COMMAND $<TARGET_FILE:amptrain> train ${AMP_REL_SGD} --set scaler.plugin=statehuge
          --set train.checkpoint_every=1 --out ${AMP_REL_OUT}/statehuge)
amp_expect_fail(checkpoint_state_save_overrun ENV ${AMP_REL_ENV} LABELS checkpoint plugins
  CODE 1
  REGEX [=[scaler plugin 'stateoverrun': state_save wrote past the 8 bytes it asked for]=]
  OPTIONS --no-outputs ${AMP_REL_OUT}/stateoverrun
  COMMAND $<TARGET_FILE:amptrain> train ${AMP_REL_SGD} --set scaler.plugin=stateoverrun
          --set train.checkpoint_every=1 --out ${AMP_REL_OUT}/stateoverrun)
# One plugin-name limit (63) everywhere: new-plugin, the loader, checkpoints.
amp_expect_fail(plugin_name_64_new_plugin LABELS plugins cli
  CODE 2
  REGEX [=[invalid name 'qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq': use 1 to 63 of a-z, 0-9 and _]=]
  COMMAND $<TARGET_FILE:amptrain> new-plugin scaler ${AMP_NAME64} ${AMP_REL_OUT}/new64)
amp_expect_fail(plugin_name_64_loader ENV ${AMP_REL_ENV} LABELS plugins loader
  CODE 2
  REGEX [=[amp_scaler_qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq\.so: entry name 'qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq' is not 1 to 63 of a-z, 0-9 and _]=]
  COMMAND $<TARGET_FILE:amptrain> train ${AMP_REL_SGD} --set scaler.plugin=${AMP_NAME64}
          --out ${AMP_REL_OUT}/name64)
# 63 characters: trains, checkpoints (the name is stored whole) and resumes.
add_test(NAME plugin_name_63_resumes
  COMMAND sh -c "rm -rf \"$2\" && \"$0\" train \"$1\" --set scaler.plugin=$3 --set train.steps=6 --set train.checkpoint_every=2 --out \"$2\" && rm \"$2/checkpoints/ckpt-00000006.amp\" && \"$0\" train \"$1\" --set scaler.plugin=$3 --set train.steps=6 --set train.checkpoint_every=2 --resume \"$2\" 2>&1 | grep 'resuming from .*ckpt-00000004'"
          $<TARGET_FILE:amptrain> ${AMP_REL_SGD} ${AMP_REL_OUT}/name63 ${AMP_NAME63})
set_tests_properties(plugin_name_63_resumes PROPERTIES LABELS "plugins;checkpoint"
                     ENVIRONMENT ${AMP_REL_ENV})

# ---------------------------------------------------- signals and streams
add_test(NAME signals_streams
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/signals.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${AMP_REL_OUT}/signals ${AMP_BAD_PLUGIN_DIR})
set_tests_properties(signals_streams PROPERTIES LABELS "checkpoint;cli;signals" TIMEOUT 300)
# Readers racing a running train: `checkpoints` while it prunes, `ab` stopped
# while its child starts (the child wrote nothing; ab must not claim a checkpoint).
add_test(NAME checkpoint_races
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/races.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${AMP_REL_OUT}/races ${AMP_BAD_PLUGIN_DIR})
set_tests_properties(checkpoint_races PROPERTIES LABELS "checkpoint;cli;signals" TIMEOUT 300)
# A signal during an evaluation: said at once, the evaluation ends at its next
# batch, and --resume runs the evaluation that was cut short.
add_test(NAME checkpoint_stop_eval
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/stop_eval.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${AMP_REL_OUT}/stop_eval ${AMP_BAD_PLUGIN_DIR})
# Nothing grows with [train] steps: 10^12 steps start, train and checkpoint.
add_test(NAME checkpoint_huge_steps
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/huge_steps.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${AMP_REL_OUT}/huge_steps)
set_tests_properties(checkpoint_stop_eval checkpoint_huge_steps PROPERTIES
                     LABELS "checkpoint;cli;signals" TIMEOUT 300)

# ------------------------------------------------------------- the stress test
# 8 concurrent train processes on 3 folders with random SIGINT/SIGTERM/SIGHUP/
# SIGKILL (tests/stress/stress.sh says what is checked). 8 rounds here, well
# under a minute; AMP_STRESS_ROUNDS=50 runs the issue's full 50 (ctest -L
# stress selects it).
add_test(NAME stress_concurrent_signals
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/stress/stress.sh $<TARGET_FILE:amptrain>
                 ${AMP_REL_TINY} ${AMP_REL_OUT}/stress)
set_tests_properties(stress_concurrent_signals PROPERTIES LABELS "stress;checkpoint" TIMEOUT 900)
# Under an address-space limit, from the lowest at which amptrain starts up
# 400 MB in steps of 20 (tiny and GPT runs): trained or exit 1 with a message,
# no hang, no signal death, no temporary (tests/stress/mem_limit.sh).
add_test(NAME stress_mem_limit
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/stress/mem_limit.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${AMP_REL_OUT}/mem_limit 20 400)
set_tests_properties(stress_mem_limit PROPERTIES LABELS "stress;cli" TIMEOUT 900
                     SKIP_RETURN_CODE 77)
