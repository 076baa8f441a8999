# A precision plugin built on a base policy (host->base_policy, plugin ABI
# 1.4) through the real CLI: tests/bad_plugins/basepolicy.c, a precision
# plugin (and a scaler) in a folder of its own, its case chosen by its
# [precision] keys `base` and `mode`. Uses amp_bad_plugin_in and
# AMP_BAD_SRC from loader.cmake (the areas are included in sorted order).
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)

set(AMP_BASE_DIR ${CMAKE_BINARY_DIR}/tests/base_policy_plugins)
set(AMP_SCALER_BASE_DIR ${CMAKE_BINARY_DIR}/tests/base_policy_scaler)
amp_bad_plugin_in(${AMP_BASE_DIR} amp_base_precision_basepolicy precision basepolicy basepolicy.c)
amp_bad_plugin_in(${AMP_SCALER_BASE_DIR} amp_base_scaler_basepolicy scaler basepolicy basepolicy.c
                  BASEPOLICY_SCALER)
set(AMP_BASE_OUT ${CMAKE_BINARY_DIR}/tests/base_policy_runs)
set(AMP_BASE_TRAIN $<TARGET_FILE:amptrain> train ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_none.ini
    --set run.device=cpu --set train.steps=3 --set precision.plugin=basepolicy)

# Every entry the base's, the host's defaults where the base has none:
# mxfp8 leaves allow_tf32 and scale_update NULL, fp8 allow_tf32. The
# E4M3 history {2, 4} gives 448 / 4 = 112 by either rule (margin 0).
foreach(base fp8 mxfp8)
  amp_expect_fail(plugin_base_delegate_${base} ENV AMPTRAIN_PLUGIN_PATH=${AMP_BASE_DIR} AMPTRAIN_LOG=info
    LABELS loader abi
    CODE 0
    REGEX "precision plugin 'basepolicy': on ${base} 1\\.0\\.0: requires_scaler 0 allow_tf32 0 scale_update 112 \\(init NULL fini NULL\\)"
    OPTIONS --also [=[basepolicy \+ none scaler on cpu, 3 steps]=]
    COMMAND ${AMP_BASE_TRAIN} --set precision.base=${base} --out ${AMP_BASE_OUT}/delegate_${base})
endforeach()
# The base reads its keys from the plugin's section, and its errors are
# the user's: at the key, exit 2.
amp_expect_fail(plugin_base_key_error ENV AMPTRAIN_PLUGIN_PATH=${AMP_BASE_DIR} LABELS loader
  CODE 2
  REGEX [=[precision plugin 'basepolicy' \(.*amp_precision_basepolicy\.so\) failed to initialise: .*\[precision\] margin: .*99]=]
  COMMAND ${AMP_BASE_TRAIN} --set precision.margin=99 --out ${AMP_BASE_OUT}/key_error)
# Refusals, each naming the call and why.
foreach(case
    "unknown|base=nosuch|base policy: no precision plugin 'nosuch': amp_precision_nosuch\\.so not found"
    "path|base=./amp_precision_fp8.so|host->base_policy\\(\"\\./amp_precision_fp8\\.so\"\\): give the name of a precision plugin \\(fp8, mxfp8, nvfp4, \\.\\.\\.\\), not a path"
    "twice|mode=twice|host->base_policy\\(\"fp8\"\\) may be called once: this plugin has its base already"
    "resolve|mode=resolve|resolving layer 'fc1' failed: host->base_policy\\(\"fp8\"\\) may be called from init only"
    "nested|base=basepolicy|host->base_policy\\(\"basepolicy\"\\) was called by a base policy: a base cannot take a base of its own")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 key)
  list(GET parts 2 re)
  amp_expect_fail(plugin_base_${name} ENV AMPTRAIN_PLUGIN_PATH=${AMP_BASE_DIR} LABELS loader
    CODE 2
    REGEX "precision plugin 'basepolicy'.* ${re}"
    COMMAND ${AMP_BASE_TRAIN} --set precision.${key} --out ${AMP_BASE_OUT}/${name})
endforeach()
amp_expect_fail(plugin_base_scaler ENV AMPTRAIN_PLUGIN_PATH=${AMP_SCALER_BASE_DIR} LABELS loader
  CODE 2
  REGEX [=[scaler plugin 'basepolicy' .*failed to initialise: host->base_policy\("fp8"\) is for precision plugins]=]
  COMMAND $<TARGET_FILE:amptrain> train ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_none.ini
          --set run.device=cpu --set train.steps=3 --set scaler.plugin=basepolicy
          --out ${AMP_BASE_OUT}/scaler)
