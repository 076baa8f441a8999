amp_unit_test(test_train train)
add_dependencies(test_train amp_precision_fp32 amp_precision_fp16 amp_precision_bf16
                 amp_scaler_none amp_scaler_dynamic amp_test_precision_int8test)
# The trainer's loop over a session (core/train/trainer.h): the same steps as by
# hand, the hook sees each, a failing hook or a stop flag ends it there.
amp_unit_test(test_trainer train)
add_dependencies(test_trainer amp_precision_fp16 amp_scaler_dynamic)

# The MLP's training numerics (tests/pin/mlp_pin.sh): on the FP64 reference
# GEMM (AMPTRAIN_GEMM=reference) bit for bit against tests/pin/mlp_pin.expected
# on the default path and each x86 path (every bit is amptrain's own, the same
# on any CPU; regenerate only in a commit that says why); with OpenBLAS and
# oneDNN within the script's per-policy tolerances of that reference (their
# kernels, chosen by CPU model, differ in the last bits between CPUs).
add_test(NAME mlp_pin COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pin/mlp_pin.sh $<TARGET_FILE:amptrain> reference)
set_tests_properties(mlp_pin PROPERTIES LABELS "train;pin" SKIP_RETURN_CODE 77)
foreach(isa_threads generic:1 avx2:2 avx512:3)
  string(REPLACE ":" ";" it ${isa_threads})
  list(GET it 0 isa)
  list(GET it 1 threads)
  add_test(NAME mlp_pin_${isa}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pin/mlp_pin.sh $<TARGET_FILE:amptrain> reference)
  set_tests_properties(mlp_pin_${isa} PROPERTIES LABELS "train;pin" SKIP_RETURN_CODE 77
                       ENVIRONMENT "AMPTRAIN_ISA=${isa};AMPTRAIN_THREADS=${threads}")
endforeach()
set(AMP_PIN_LIBS openblas:generic openblas:avx2 openblas:avx512)
if(AMP_DNNL_LIB)
  list(APPEND AMP_PIN_LIBS onednn:avx2 onednn:avx512)
endif()
foreach(lib_isa ${AMP_PIN_LIBS})
  string(REPLACE ":" ";" li ${lib_isa})
  list(GET li 0 lib)
  list(GET li 1 isa)
  add_test(NAME mlp_pin_${lib}_${isa}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pin/mlp_pin.sh $<TARGET_FILE:amptrain> ${lib})
  set_tests_properties(mlp_pin_${lib}_${isa} PROPERTIES LABELS "train;pin" SKIP_RETURN_CODE 77
                       ENVIRONMENT "AMPTRAIN_ISA=${isa}")
endforeach()
# The GPT's and the CNN's numerics (tests/pin/model_pin.sh), on the FP64
# reference GEMM bit for bit against tests/pin/{gpt,cnn}_pin.expected: GPT
# fp32/fp16/bf16 15 steps at AMPTRAIN_THREADS threads (2 when unset;
# scripts/thread-matrix.sh sets 1 and 2), CNN fp16 6 steps at 2 threads (its
# dW sums per-thread-count chunks of the batch).
foreach(model gpt cnn)
  add_test(NAME ${model}_pin
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pin/model_pin.sh $<TARGET_FILE:amptrain> ${model})
  set_tests_properties(${model}_pin PROPERTIES LABELS "train;pin")
endforeach()
# The GPT under nvfp4 (model_pin.sh gpt_nvfp4: the full recipe and 1x16
# weights, short blocks) bit for bit against tests/pin/gpt_nvfp4_pin.expected
# on the default path and on each x86 path's NVFP4 kernels (77 where the CPU
# lacks the path).
add_test(NAME gpt_nvfp4_pin
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pin/model_pin.sh $<TARGET_FILE:amptrain> gpt_nvfp4)
set_tests_properties(gpt_nvfp4_pin PROPERTIES LABELS "train;pin;nvfp4")
foreach(isa generic avx2 avx512)
  add_test(NAME gpt_nvfp4_pin_${isa}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pin/model_pin.sh $<TARGET_FILE:amptrain> gpt_nvfp4)
  set_tests_properties(gpt_nvfp4_pin_${isa} PROPERTIES LABELS "train;pin;nvfp4"
                       SKIP_RETURN_CODE 77 ENVIRONMENT "AMPTRAIN_ISA=${isa}")
endforeach()
# Determinism as docs/performance.md states it: repeatable on a path and thread count,
# thread-count independent on the default path, every ISA path within 2e-3
# of the generic one, a resume on another thread count warns.
add_test(NAME cpu_paths COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pin/paths.sh $<TARGET_FILE:amptrain>)
set_tests_properties(cpu_paths PROPERTIES LABELS "train;pin")
# The same for the GPT (the transformer ops): bitwise per thread count, 1 vs 2
# threads and every ISA path within a stated tolerance.
add_test(NAME gpt_cpu_paths COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pin/gpt_paths.sh $<TARGET_FILE:amptrain>)
set_tests_properties(gpt_cpu_paths PROPERTIES LABELS "train;pin" TIMEOUT 300)

# The model interface with a test-only model that is not the MLP
# (tests/testmodel/): amptrain_testmodels is amptrain plus that model.
add_executable(amptrain_testmodels ${CMAKE_CURRENT_SOURCE_DIR}/testmodel/main.c
                                   ${CMAKE_CURRENT_SOURCE_DIR}/testmodel/twolayer.c
                                   ${CMAKE_CURRENT_SOURCE_DIR}/testmodel/kitnet.c
                                   ${CMAKE_CURRENT_SOURCE_DIR}/testfamily/int8.c)
target_link_libraries(amptrain_testmodels PRIVATE amp_core)
target_compile_options(amptrain_testmodels PRIVATE ${AMP_C_WARNINGS})
target_sources(test_train PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/testmodel/twolayer.c)
add_test(NAME model_interface
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/testmodel/interface.sh
                 $<TARGET_FILE:amptrain_testmodels> ${CMAKE_BINARY_DIR}/tests/model_interface)
set_tests_properties(model_interface PROPERTIES LABELS "train;cli;ab;checkpoint" TIMEOUT 300)
add_dependencies(amptrain_testmodels amp_precision_fp32 amp_precision_fp16 amp_precision_bf16
                 amp_scaler_none amp_scaler_dynamic amp_test_precision_int8test)

# kitnet (tests/testmodel/kitnet.c), written with the layer kit alone:
# its gradients against finite differences, and fp32/fp16/bf16 training
# through the CLI.
amp_unit_test(test_testmodel_kitnet train)
target_sources(test_testmodel_kitnet PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/testmodel/kitnet.c)
set_tests_properties(test_testmodel_kitnet PROPERTIES LABELS "train;testmodel")
add_test(NAME testmodel_kitnet_train
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/testmodel/kitnet.sh
                 $<TARGET_FILE:amptrain_testmodels> ${CMAKE_BINARY_DIR}/tests/kitnet_train)
set_tests_properties(testmodel_kitnet_train PROPERTIES LABELS "train;cli;testmodel" TIMEOUT 300)
