# Paths that are not regular files, everywhere amptrain reads one (issue 15):
# FIFOs, devices, directories and huge sparse files as configs, IDX files,
# [model] init, plugins, plugin-folder entries, checkpoints, A/B configs, a
# text corpus (also one over the size limit) and the corpus `sample` reads
# (tests/not_files.sh; every command under `timeout 60`).
foreach(case config data init plugin listing ckpt resume ab text sample)
  add_test(NAME not_files_${case}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/not_files.sh ${case} $<TARGET_FILE:amptrain>
                   ${PROJECT_SOURCE_DIR}/configs ${CMAKE_BINARY_DIR}/tests/dup_plugins_a/amp_scaler_dup.so
                   ${CMAKE_BINARY_DIR}/tests/not_files)
  set_tests_properties(not_files_${case} PROPERTIES LABELS "not_files;cli" TIMEOUT 300)
endforeach()
