# How a CUDA build links its CUDA libraries (tests/cuda_link_check.sh): one
# shared cudart, a RUNPATH to the toolkit's library folder, in the build
# tree and installed. Needs no GPU.
if(AMP_HAVE_CUDA)
  add_test(NAME cuda_link
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cuda_link_check.sh ${CMAKE_BINARY_DIR}
                   ${CMAKE_COMMAND} ${CUDAToolkit_LIBRARY_DIR})
  set_tests_properties(cuda_link PROPERTIES LABELS "cli" TIMEOUT 120)
endif()

# Every kernel launch and asynchronous copy or memset of the CUDA backend is
# followed by its launch check (tests/cuda/launch_checks.py). Reads the
# sources only, so it runs in every build, with or without CUDA.
file(GLOB AMP_CUDA_SOURCES_CHECKED ${PROJECT_SOURCE_DIR}/core/backend/cuda/*.cu)
add_test(NAME cuda_launch_checks
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cuda/launch_checks.py ${AMP_CUDA_SOURCES_CHECKED})
set_tests_properties(cuda_launch_checks PROPERTIES LABELS "cli")
