# Checkpoints and --resume: the format and the bitwise resume through the
# session (test_checkpoint), then the CLI: a real SIGTERM and --resume give
# the same files as an uninterrupted run, damaged checkpoints fall back,
# foreign ones are refused, kill -9 during writes never loses the newest
# complete checkpoint, a full disk leaves the previous one untouched, and
# the printed "continue with" command works as printed (resume_hint).
set(AMP_CKPT_PLUGINS amp_precision_fp32 amp_precision_fp16 amp_precision_bf16 amp_scaler_none
                     amp_scaler_static amp_scaler_dynamic amp_scaler_hysteresis)
amp_unit_test(test_checkpoint checkpoint)
add_dependencies(test_checkpoint ${AMP_CKPT_PLUGINS})

set(AMP_CKPT_SCRIPTS ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint)
set(AMP_CKPT_WORK ${CMAKE_BINARY_DIR}/tests/checkpoint_runs)
foreach(script resume_cli resume_hint checkpoint_minutes refusals kill9 disk_full resume_complete compare_memory)
  add_test(NAME checkpoint_${script}
           COMMAND bash ${AMP_CKPT_SCRIPTS}/${script}.sh $<TARGET_FILE:amptrain>
                   ${PROJECT_SOURCE_DIR}/configs ${AMP_CKPT_WORK}/${script})
  set_tests_properties(checkpoint_${script} PROPERTIES LABELS "checkpoint;cli" TIMEOUT 300)
endforeach()

# Two runs of one config, and a resume from a middle checkpoint, give the
# same files (no signal, no timing): on the CPU here, and on the GPU (label
# gpu; skipped, saying why, where no CUDA device is visible).
add_test(NAME checkpoint_repeat
         COMMAND bash ${AMP_CKPT_SCRIPTS}/repeat.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${AMP_CKPT_WORK}/repeat cpu)
set_tests_properties(checkpoint_repeat PROPERTIES LABELS "checkpoint;cli" TIMEOUT 300)
add_test(NAME checkpoint_repeat_cuda
         COMMAND bash ${AMP_CKPT_SCRIPTS}/repeat.sh $<TARGET_FILE:amptrain>
                 ${PROJECT_SOURCE_DIR}/configs ${AMP_CKPT_WORK}/repeat_cuda cuda)
set_tests_properties(checkpoint_repeat_cuda PROPERTIES LABELS "gpu;checkpoint" TIMEOUT 300
                     SKIP_RETURN_CODE 77)
