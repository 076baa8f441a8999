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

# amp_abi_old_plugin(DIR TARGET KIND NAME SOURCE): a plugin built against
# the frozen header in tests/abi/DIR only (never core/include), into its own
# folder tests/abi_plugins/DIR.
function(amp_abi_old_plugin dir target kind name src)
  add_library(${target} MODULE ${AMP_ABI_SRC}/${src})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME amp_${kind}_${name}
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/abi_plugins/${dir}
    C_VISIBILITY_PRESET hidden)
  target_include_directories(${target} PRIVATE ${AMP_ABI_SRC}/${dir})
  target_compile_options(${target} PRIVATE ${AMP_C_WARNINGS})
  target_link_options(${target} PRIVATE -Wl,-z,defs)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND chmod go-w $<TARGET_FILE:${target}> $<TARGET_FILE_DIR:${target}> VERBATIM)
endfunction()

# The frozen minors (tests/abi/v<major>_<minor>) below the host's, of its major.
set(AMP_ABI_OLD)
foreach(frozen 1_0 1_3)
  file(STRINGS ${AMP_ABI_SRC}/v${frozen}/amptrain/plugin.h AMP_ABI_OLD_LINES
       REGEX "^#define AMP_PLUGIN_ABI_(MAJOR|MINOR) [0-9]+")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*" "\\1" old_major "${AMP_ABI_OLD_LINES}")
  string(REGEX REPLACE ".*MINOR ([0-9]+).*" "\\1" old_minor "${AMP_ABI_OLD_LINES}")
  if(old_major EQUAL AMP_ABI_MAJOR AND old_minor LESS AMP_ABI_MINOR)
    list(APPEND AMP_ABI_OLD ${frozen})
  else()
    message(STATUS "amptrain: no lower-minor ABI test for ${old_major}.${old_minor} (host ABI "
                   "${AMP_ABI_MAJOR}.${AMP_ABI_MINOR})")
  endif()
endforeach()

if("1_0" IN_LIST AMP_ABI_OLD)
  set(AMP_ABI_PLUGIN_DIR ${CMAKE_BINARY_DIR}/tests/abi_plugins/v1_0)
  amp_abi_old_plugin(v1_0 amp_abi_oldminor scaler oldminor old_minor.c)
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
endif()

# An FP8 recipe of ABI 1.3 (scaled operands, scale_update, layer_op_classes;
# no host->base_policy) loads, is listed as 1.3, and its recipe sets the
# scales: E4M3's 448 / amax / 2 after the first step.
if("1_3" IN_LIST AMP_ABI_OLD)
  set(AMP_ABI_PLUGIN_DIR_13 ${CMAKE_BINARY_DIR}/tests/abi_plugins/v1_3)
  amp_abi_old_plugin(v1_3 amp_abi_oldminor13 precision oldminor13 old_minor_1_3.c)
  amp_expect_fail(abi_minor_1_3_trains ENV AMPTRAIN_PLUGIN_PATH=${AMP_ABI_PLUGIN_DIR_13}
    LABELS abi
    CODE 0
    REGEX [=[precision plugin 'oldminor13': oldminor13 scale_update: layer fc1 scale [0-9.e+]+]=]
    OPTIONS --also [=[tiny_fp16_none: test_acc .* 3 steps \(0 skipped\)]=]
    COMMAND $<TARGET_FILE:amptrain> train ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_none.ini
            --set run.device=cpu --set train.steps=3 --set precision.plugin=oldminor13
            --out ${CMAKE_BINARY_DIR}/tests/abi_runs/oldminor13)
  amp_expect_fail(abi_minor_1_3_listed ENV AMPTRAIN_PLUGIN_PATH=${AMP_ABI_PLUGIN_DIR_13}
    LABELS abi
    CODE 0
    REGEX [=[^precision +oldminor13 +1\.3\.0 +1\.3 +.*amp_precision_oldminor13\.so$]=]
    OPTIONS --stdout --also [=[test: built against ABI 1\.3]=]
    COMMAND $<TARGET_FILE:amptrain> plugins -v)
endif()
