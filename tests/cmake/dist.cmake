# Data parallel (label mpi): the session under `mpirun -np 2` (test_dist:
# 2 ranks equal one process with accumulate 2 bit for bit, and one process
# at twice the batch within a stated bound; one rank's overflow; bf16 on the
# wire; determinism; the replica check), then the CLI (rank-0 outputs,
# kill/resume, another number of ranks refused, a killed or hung rank ends
# the job, a bad AMPTRAIN_* value on one rank named with its rank). Each
# script skips (77) with a message where mpirun is missing; without MPI in
# the build one test says so and skips.
# Which GPU a rank opens under NCCL, with faked device counts (no GPU, no MPI).
amp_unit_test(test_dist_device mpi)
set(AMP_DIST_SCRIPTS ${CMAKE_CURRENT_SOURCE_DIR}/dist)
set(AMP_DIST_WORK ${CMAKE_BINARY_DIR}/tests/dist_runs)
if(AMP_HAVE_MPI)
  set(AMP_MPIRUN "${MPIEXEC_EXECUTABLE}")
  if(NOT AMP_MPIRUN)
    set(AMP_MPIRUN mpirun)
  endif()
  add_executable(test_dist ${CMAKE_CURRENT_SOURCE_DIR}/test_dist.c)
  target_link_libraries(test_dist PRIVATE amp_core)
  target_compile_options(test_dist PRIVATE ${AMP_C_WARNINGS})
  add_dependencies(test_dist amp_precision_fp32 amp_precision_fp16 amp_precision_bf16
                   amp_scaler_none amp_scaler_dynamic)
  add_test(NAME dist_session COMMAND bash ${AMP_DIST_SCRIPTS}/session.sh ${AMP_MPIRUN}
                                     $<TARGET_FILE:test_dist>)
  add_test(NAME dist_hang COMMAND bash ${AMP_DIST_SCRIPTS}/hang.sh ${AMP_MPIRUN}
                                  $<TARGET_FILE:test_dist>)
  foreach(script cli resume kill fp8 shard shard_grads syncbn reshard env_rank)
    add_test(NAME dist_${script}
             COMMAND bash ${AMP_DIST_SCRIPTS}/${script}.sh ${AMP_MPIRUN} $<TARGET_FILE:amptrain>
                     ${AMP_DIST_SCRIPTS} ${AMP_DIST_WORK}/${script})
  endforeach()
  # checkpoints from before [dist] sync_batchnorm (one process suffices: the
  # resume check compares configs); drop_config_key is gpt.cmake's
  add_test(NAME dist_syncbn_old_ckpt
           COMMAND bash ${AMP_DIST_SCRIPTS}/syncbn_old_ckpt.sh $<TARGET_FILE:amptrain>
                   $<TARGET_FILE:drop_config_key> ${AMP_DIST_SCRIPTS} ${AMP_DIST_WORK}/syncbn_old_ckpt)
  set_tests_properties(dist_syncbn_old_ckpt PROPERTIES LABELS "mpi;checkpoint" TIMEOUT 300)
  # a rank that never joins (before MPI_Init, or stuck while starting); the
  # test scaler `block` is loader.cmake's (tests/bad_plugins)
  add_test(NAME dist_join
           COMMAND bash ${AMP_DIST_SCRIPTS}/join.sh ${AMP_MPIRUN} $<TARGET_FILE:amptrain>
                   ${AMP_DIST_SCRIPTS} ${AMP_DIST_WORK}/join ${CMAKE_BINARY_DIR}/tests/bad_plugins)
  set_tests_properties(dist_session dist_hang dist_cli dist_resume dist_kill dist_join dist_fp8
                       dist_shard dist_shard_grads dist_syncbn dist_reshard dist_env_rank PROPERTIES
                       LABELS "mpi" SKIP_RETURN_CODE 77 TIMEOUT 300)
  # a timing run, then runs of about 12 s each (resume.sh): 30 s on the
  # release build, about 2 min under ASan, more beside other tests
  set_tests_properties(dist_resume PROPERTIES TIMEOUT 900)
  # The same session checks on the CUDA backend with NCCL between 2 GPUs;
  # skips without NCCL in the build or with fewer than 2 GPUs.
  add_test(NAME dist_nccl COMMAND bash ${AMP_DIST_SCRIPTS}/nccl.sh ${AMP_MPIRUN}
                                  $<TARGET_FILE:test_dist> ${AMP_HAVE_NCCL})
  set_tests_properties(dist_nccl PROPERTIES LABELS "gpu;mpi" SKIP_RETURN_CODE 77 TIMEOUT 300)
  # [dist] sync_batchnorm over NCCL: 2 GPUs x B against 1 GPU x 2B
  add_test(NAME dist_syncbn_nccl
           COMMAND bash ${AMP_DIST_SCRIPTS}/syncbn.sh ${AMP_MPIRUN} $<TARGET_FILE:amptrain>
                   ${AMP_DIST_SCRIPTS} ${AMP_DIST_WORK}/syncbn_nccl cuda ${AMP_HAVE_NCCL})
  set_tests_properties(dist_syncbn_nccl PROPERTIES LABELS "gpu;mpi" SKIP_RETURN_CODE 77 TIMEOUT 300)
  # [dist] shard = optimizer over NCCL (reduce-scatter, device all-gather)
  # against shard = none on 2 GPUs, and a sharded checkpoint resumed unsharded
  add_test(NAME dist_shard_nccl
           COMMAND bash ${AMP_DIST_SCRIPTS}/shard_nccl.sh ${AMP_MPIRUN} $<TARGET_FILE:amptrain>
                   ${AMP_DIST_SCRIPTS} ${AMP_DIST_WORK}/shard_nccl ${AMP_HAVE_NCCL})
  set_tests_properties(dist_shard_nccl PROPERTIES LABELS "gpu;mpi" SKIP_RETURN_CODE 77 TIMEOUT 300)
else()
  add_test(NAME dist_skipped
           COMMAND sh -c "echo 'amptrain was built without MPI (AMP_MPI=OFF or no libopenmpi-dev): the mpi tests are skipped'; exit 77")
  set_tests_properties(dist_skipped PROPERTIES LABELS "mpi" SKIP_RETURN_CODE 77)
endif()
