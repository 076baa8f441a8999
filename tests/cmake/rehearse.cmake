# The GPU machine's build rehearsed here, without a GPU (tests/rehearse_test.sh
# runs scripts/gpu-check.sh --rehearse): the .deb folder is prepared (copied
# from .gpu-debs, or apt-get download), amptrain and the gpu tests build and
# run from the unpacked prefix with the system's copies hidden, and a missing
# .deb or a package left out of the list fails, named. Label `rehearse`; only
# in CUDA builds, as on the GPU machine.
if(AMP_HAVE_CUDA)
  set(AMP_REHEARSE_WORK ${CMAKE_BINARY_DIR}/tests/rehearse)
  foreach(case prepare full missing_deb missing_package)
    add_test(NAME gpu_rehearse_${case}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/rehearse_test.sh ${case}
                     ${PROJECT_SOURCE_DIR} ${AMP_REHEARSE_WORK})
    set_tests_properties(gpu_rehearse_${case} PROPERTIES LABELS rehearse TIMEOUT 900)
    if(case STREQUAL prepare)
      set_tests_properties(gpu_rehearse_${case} PROPERTIES FIXTURES_SETUP gpu_debs)
    else()
      set_tests_properties(gpu_rehearse_${case} PROPERTIES FIXTURES_REQUIRED gpu_debs)
    endif()
  endforeach()
endif()

# The device run stopped by a signal mid-part still leaves summary.md with
# every part; --dry-run lists every part in order (tests/gpu_check_stop.sh).
add_test(NAME gpu_check_stop
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu_check_stop.sh ${PROJECT_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/tests/gpu_check_stop)
set_tests_properties(gpu_check_stop PROPERTIES LABELS "rehearse;cli" TIMEOUT 180)
