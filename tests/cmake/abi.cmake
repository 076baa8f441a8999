# Plugin ABI compatibility (the other half, a different abi_major refused,
# is loader_abi_major and loader_abi_major_past in loader.cmake):
#   - the public header, with a plugin written against it, compiles as C11
#     and C++17 under -Wall -Wextra -pedantic -Werror, with gcc/g++ and with
#     clang/clang++ when installed;
#   - a plugin built against an older minor of the same major (the frozen
#     ABI 1.0 header in tests/abi/v1_0) loads, is listed, and trains.
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)

set(AMP_ABI_SRC ${CMAKE_CURRENT_SOURCE_DIR}/abi)
set(AMP_ABI_FLAGS -Wall -Wextra -pedantic -Werror -fsyntax-only -I${PROJECT_SOURCE_DIR}/core/include)

# amp_abi_header_test(NAME COMPILER LANG STD): one test per compiler and
# language, each with both entry macros.
function(amp_abi_header_test name compiler lang std)
  foreach(variant define keys)
    set(defs)
    if(variant STREQUAL "keys")
      set(defs -DHC_WITH_KEYS)
    endif()
    add_test(NAME abi_header_${name}_${variant}
             COMMAND ${compiler} -std=${std} ${AMP_ABI_FLAGS} ${defs} -x ${lang}
                     ${AMP_ABI_SRC}/header_check.c)
    set_tests_properties(abi_header_${name}_${variant} PROPERTIES LABELS abi)
  endforeach()
endfunction()

if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  amp_abi_header_test(c11_${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER} c c11)
endif()
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  amp_abi_header_test(cxx17_${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER} c++ c++17)
endif()
# The other compiler family too, when it is installed.
foreach(pair "clang;clang++" "gcc;g++")
  list(GET pair 0 cc)
  list(GET pair 1 cxx)
  find_program(AMP_ABI_${cc} ${cc})
  find_program(AMP_ABI_${cxx} ${cxx})
  if(AMP_ABI_${cc} AND NOT AMP_ABI_${cc} STREQUAL CMAKE_C_COMPILER
     AND NOT (cc STREQUAL "gcc" AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
     AND NOT (cc STREQUAL "clang" AND CMAKE_C_COMPILER_ID MATCHES "Clang"))
    amp_abi_header_test(c11_${cc} ${AMP_ABI_${cc}} c c11)
    if(AMP_ABI_${cxx})
      amp_abi_header_test(cxx17_${cc} ${AMP_ABI_${cxx}} c++ c++17)
    endif()
  endif()
endforeach()

# A lower minor needs a host above x.0; at a fresh major there is none yet.
file(STRINGS ${AMP_ABI_SRC}/v1_0/amptrain/plugin.h AMP_ABI_OLD_MAJOR_LINE
     REGEX "^#define AMP_PLUGIN_ABI_MAJOR [0-9]+")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" AMP_ABI_OLD_MAJOR "${AMP_ABI_OLD_MAJOR_LINE}")
if(NOT AMP_ABI_OLD_MAJOR EQUAL AMP_ABI_MAJOR OR AMP_ABI_MINOR EQUAL 0)
  message(STATUS "amptrain: no lower-minor ABI test (host ABI ${AMP_ABI_MAJOR}.${AMP_ABI_MINOR}, "
                 "frozen header ABI ${AMP_ABI_OLD_MAJOR}.0)")
  return()
endif()

set(AMP_ABI_PLUGIN_DIR ${CMAKE_BINARY_DIR}/tests/abi_plugins)
add_library(amp_abi_oldminor MODULE ${AMP_ABI_SRC}/old_minor.c)
set_target_properties(amp_abi_oldminor PROPERTIES
  PREFIX ""
  OUTPUT_NAME amp_scaler_oldminor
  LIBRARY_OUTPUT_DIRECTORY ${AMP_ABI_PLUGIN_DIR}
  C_VISIBILITY_PRESET hidden)
# The frozen header only: never core/include.
target_include_directories(amp_abi_oldminor PRIVATE ${AMP_ABI_SRC}/v1_0)
target_compile_options(amp_abi_oldminor PRIVATE ${AMP_C_WARNINGS})
target_link_options(amp_abi_oldminor PRIVATE -Wl,-z,defs)
add_custom_command(TARGET amp_abi_oldminor POST_BUILD
  COMMAND chmod go-w $<TARGET_FILE:amp_abi_oldminor> $<TARGET_FILE_DIR:amp_abi_oldminor> VERBATIM)

amp_expect_fail(abi_lower_minor_trains ENV AMPTRAIN_PLUGIN_PATH=${AMP_ABI_PLUGIN_DIR}
  LABELS abi
  CODE 0
  REGEX [=[tiny_fp16_none: test_acc .* 3 steps \(0 skipped\)]=]
  COMMAND $<TARGET_FILE:amptrain> train ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_none.ini
          --set run.device=cpu --set train.steps=3 --set scaler.plugin=oldminor --out ${CMAKE_BINARY_DIR}/tests/abi_runs/oldminor)
# Listed with the ABI it was built for, and without the `keys` line its
# shorter entry does not have (the only built-ins that declare keys, fp8 and
# mxfp8, start theirs with `format=`, nvfp4 with `weight_blocks=`).
amp_expect_fail(abi_lower_minor_listed ENV AMPTRAIN_PLUGIN_PATH=${AMP_ABI_PLUGIN_DIR}
  LABELS abi
  CODE 0
  REGEX [=[^scaler +oldminor +1\.0\.0 +1\.0 +.*amp_scaler_oldminor\.so$]=]
  OPTIONS --stdout --also [=[test: built against ABI 1\.0]=] --not [=[^ +keys: [^fw]]=]
          --also "^scaler +dynamic +[^ ]+ +${AMP_ABI_MAJOR}\\.${AMP_ABI_MINOR} "
  COMMAND $<TARGET_FILE:amptrain> plugins -v)
