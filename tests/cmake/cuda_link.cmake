# How a CUDA build links its CUDA libraries (tests/cuda_link_check.sh): one
# shared cudart, a RUNPATH to the toolkit's library folder, in the build
# tree and installed. Needs no GPU.
if(AMP_HAVE_CUDA)
  add_test(NAME cuda_link
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cuda_link_check.sh ${CMAKE_BINARY_DIR}
                   ${CMAKE_COMMAND} ${CUDAToolkit_LIBRARY_DIR})
  set_tests_properties(cuda_link PROPERTIES LABELS "cli" TIMEOUT 120)
endif()
