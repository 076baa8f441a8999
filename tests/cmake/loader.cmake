# Loader errors seen through the real CLI: broken plugins built into their own
# folder (never the real plugin folder), found through AMPTRAIN_PLUGIN_PATH,
# one test per failure, each checking the exit status and the message
# (tests/expect_fail.sh).
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)

set(AMP_BAD_PLUGIN_DIR ${CMAKE_BINARY_DIR}/tests/bad_plugins)
set(AMP_BAD_SRC ${CMAKE_CURRENT_SOURCE_DIR}/bad_plugins)

# amp_bad_plugin_in(DIR TARGET KIND NAME SOURCE [DEFINES...]) -> DIR/amp_<kind>_<name>.so,
# built like a real plugin (hidden visibility, -z defs, go-w) so only the entry differs.
function(amp_bad_plugin_in dir target kind name src)
  add_library(${target} MODULE ${AMP_BAD_SRC}/${src})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME amp_${kind}_${name}
    LIBRARY_OUTPUT_DIRECTORY ${dir}
    C_VISIBILITY_PRESET hidden)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/core/include)
  target_compile_options(${target} PRIVATE ${AMP_C_WARNINGS})
  target_compile_definitions(${target} PRIVATE ${ARGN})
  target_link_options(${target} PRIVATE -Wl,-z,defs)
  target_link_libraries(${target} PRIVATE m)
  # The loader refuses group/world-writable plugins; the linker follows the umask.
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND chmod go-w $<TARGET_FILE:${target}> $<TARGET_FILE_DIR:${target}> VERBATIM)
endfunction()

# amp_bad_plugin(KIND NAME SOURCE [DEFINES...]) -> ${AMP_BAD_PLUGIN_DIR}/amp_<kind>_<name>.so
function(amp_bad_plugin kind name src)
  amp_bad_plugin_in(${AMP_BAD_PLUGIN_DIR} amp_bad_${kind}_${name} ${kind} ${name} ${src} ${ARGN})
endfunction()

amp_bad_plugin(scaler abimajor abimajor.c)
amp_bad_plugin(scaler abipast abimajor.c ABI_MAJOR_DELTA=-1)
amp_bad_plugin(scaler noentry noentry.c)
amp_bad_plugin(precision wrongkind wrongkind.c)
amp_bad_plugin(scaler initfail initfail.c)
amp_bad_plugin(scaler nullupdate nullupdate.c)
amp_bad_plugin(scaler nanscale badscale.c BAD_SCALE_NAN)
amp_bad_plugin(scaler negscale badscale.c)
amp_bad_plugin(scaler zeroscale badscale.c BAD_SCALE_ZERO)
amp_bad_plugin(scaler infscale badscale.c BAD_SCALE_INF)
amp_bad_plugin(scaler updatefail updatefail.c)
amp_bad_plugin(scaler hostmisuse hostmisuse.c)
# One valid plugin in two folders of their own (not the bad folder, so the
# other tests never see the duplicate).
set(AMP_DUP_A ${CMAKE_BINARY_DIR}/tests/dup_plugins_a)
set(AMP_DUP_B ${CMAKE_BINARY_DIR}/tests/dup_plugins_b)
amp_bad_plugin_in(${AMP_DUP_A} amp_dup_a_scaler_dup scaler dup dup.c)
amp_bad_plugin_in(${AMP_DUP_B} amp_dup_b_scaler_dup scaler dup dup.c)
# negscale's entry again, in a file named for another plugin.
amp_bad_plugin(scaler misnamed badscale.c)
# A text file with a plugin's name: must be called out, not handed to dlopen.
file(MAKE_DIRECTORY ${AMP_BAD_PLUGIN_DIR})
file(WRITE ${AMP_BAD_PLUGIN_DIR}/amp_scaler_text.so
     "This is not a shared object; amptrain must say so instead of dlopen's message.\n")
# go-w whatever the umask, or the loader would refuse it for its mode first.
file(CHMOD ${AMP_BAD_PLUGIN_DIR}/amp_scaler_text.so PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(CHMOD ${AMP_BAD_PLUGIN_DIR} DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
     GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

set(AMP_BAD_ENV AMPTRAIN_PLUGIN_PATH=${AMP_BAD_PLUGIN_DIR})
set(AMP_TINY ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_none.ini)
set(AMP_BAD_OUT ${CMAKE_BINARY_DIR}/tests/bad_plugin_runs)
# The real CLI on the tiny config whose [scaler] has no key but plugin, so
# any scaler can stand in for it.
set(AMP_TRAIN_TINY $<TARGET_FILE:amptrain> train ${AMP_TINY} --set run.device=cpu --set train.steps=3)

# Path regex for the bad plugin folder (its path may hold regex characters).
string(REGEX REPLACE "([][.*+?^$(){}|\\])" "\\\\\\1" AMP_BAD_DIR_RE "${AMP_BAD_PLUGIN_DIR}")
# The not-found message lists the folders searched, the bad one first.
set(AMP_NOT_FOUND_RE "no scaler plugin 'nosuch': amp_scaler_nosuch\\.so not found in ${AMP_BAD_DIR_RE},")
# `plugins -v` prints the search order, one folder a line.
set(AMP_SEARCH_DIR_RE "^ +${AMP_BAD_DIR_RE}$")

# Load errors are configuration errors: exit 2, before any output exists.
amp_expect_fail(loader_not_found ENV ${AMP_BAD_ENV} LABELS loader
  CODE 2
  REGEX ${AMP_NOT_FOUND_RE}
  OPTIONS --also [=[set AMPTRAIN_PLUGIN_PATH]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=nosuch --out ${AMP_BAD_OUT}/not_found)
amp_expect_fail(loader_text_file ENV ${AMP_BAD_ENV} LABELS loader
  CODE 2
  REGEX [=[amp_scaler_text\.so: not a shared object \(no ELF header\)]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=text --out ${AMP_BAD_OUT}/text)
amp_expect_fail(loader_missing_entry ENV ${AMP_BAD_ENV} LABELS loader
  CODE 2
  REGEX [=[amp_scaler_noentry\.so: no 'amp_plugin_entry' symbol: not an amptrain plugin]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=noentry --out ${AMP_BAD_OUT}/noentry)
amp_expect_fail(loader_abi_major ENV ${AMP_BAD_ENV} LABELS loader
  CODE 2
  REGEX [=[amp_scaler_abimajor\.so: built for plugin ABI 2\.0 but this amptrain speaks ABI 1\.[0-9]+.* rebuild]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=abimajor --out ${AMP_BAD_OUT}/abimajor)
amp_expect_fail(loader_abi_major_past ENV ${AMP_BAD_ENV} LABELS loader abi
  CODE 2
  REGEX [=[amp_scaler_abipast\.so: built for plugin ABI 0\.0 but this amptrain speaks ABI 1\.[0-9]+.* rebuild]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=abipast --out ${AMP_BAD_OUT}/abipast)
amp_expect_fail(loader_wrong_kind ENV ${AMP_BAD_ENV} LABELS loader
  CODE 2
  REGEX [=[amp_precision_wrongkind\.so: 'wrongkind' is a scaler plugin, but a precision plugin is needed here. its file name is wrong: rename it to amp_scaler_wrongkind\.so]=]
  OPTIONS --not [=[init must never run]=]
  COMMAND ${AMP_TRAIN_TINY} --set precision.plugin=wrongkind --out ${AMP_BAD_OUT}/wrongkind)
# The same file asked for as a scaler: the file name says precision, so the
# loader must not claim that 'wrongkind' is a precision plugin.
amp_expect_fail(loader_wrong_kind_as_scaler ENV ${AMP_BAD_ENV} LABELS loader
  CODE 2
  REGEX [=[amp_precision_wrongkind\.so.*declares a scaler plugin.*rename it to amp_scaler_wrongkind\.so]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=wrongkind --out ${AMP_BAD_OUT}/wrongkind_s)
# Found by name, the entry must carry that name (summary.json records it).
amp_expect_fail(loader_misnamed ENV ${AMP_BAD_ENV} LABELS loader
  CODE 2
  REGEX [=[amp_scaler_misnamed\.so: its entry names the plugin 'negscale', not 'misnamed'. rename the file to amp_scaler_negscale\.so]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=misnamed --out ${AMP_BAD_OUT}/misnamed)
amp_expect_fail(loader_init_failure ENV ${AMP_BAD_ENV} LABELS loader
  CODE 2
  REGEX [=[scaler plugin 'initfail' \(.*amp_scaler_initfail\.so\) failed to initialise: initfail: the frobnicator is not calibrated \(test reason\)]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=initfail --out ${AMP_BAD_OUT}/initfail)
# Refused from the vtable before init runs (its init would say "init ran").
amp_expect_fail(loader_null_update ENV ${AMP_BAD_ENV} LABELS loader
  CODE 2
  REGEX [=[amp_scaler_nullupdate\.so: scaler vtable leaves required function\(s\) NULL: update]=]
  OPTIONS --not [=[init ran]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=nullupdate --out ${AMP_BAD_OUT}/nullupdate)

# A scale that is not finite and > 0 stops the run: a runtime error, exit 1.
amp_expect_fail(loader_nan_scale ENV ${AMP_BAD_ENV} LABELS loader
  CODE 1
  REGEX [=[scaler plugin 'nanscale' returned the invalid scale -?nan at step 2]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=nanscale --out ${AMP_BAD_OUT}/nanscale)
amp_expect_fail(loader_negative_scale ENV ${AMP_BAD_ENV} LABELS loader
  CODE 1
  REGEX [=[scaler plugin 'negscale' returned the invalid scale -1 at step 0]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=negscale --out ${AMP_BAD_OUT}/negscale)
amp_expect_fail(loader_zero_scale ENV ${AMP_BAD_ENV} LABELS loader
  CODE 1
  REGEX [=[scaler plugin 'zeroscale' returned the invalid scale 0 at step 0]=]
  OPTIONS --no-outputs ${AMP_BAD_OUT}/zeroscale
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=zeroscale --out ${AMP_BAD_OUT}/zeroscale)
amp_expect_fail(loader_inf_scale ENV ${AMP_BAD_ENV} LABELS loader
  CODE 1
  REGEX [=[scaler plugin 'infscale' returned the invalid scale inf at step 1]=]
  OPTIONS --no-outputs ${AMP_BAD_OUT}/infscale
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=infscale --out ${AMP_BAD_OUT}/infscale)
# A failing update stops the run with the plugin's reason; nothing is left.
amp_expect_fail(loader_update_failure ENV ${AMP_BAD_ENV} LABELS loader
  CODE 1
  REGEX [=[scaler plugin 'updatefail' failed at step 1: updatefail: the scale table is exhausted \(test reason\)]=]
  OPTIONS --no-outputs ${AMP_BAD_OUT}/updatefail
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=updatefail --set train.log_every=1
          --out ${AMP_BAD_OUT}/updatefail)

# The same plugin name in two search folders: refused, both paths named.
string(REGEX REPLACE "([][.*+?^$(){}|\\])" "\\\\\\1" AMP_DUP_A_RE "${AMP_DUP_A}")
string(REGEX REPLACE "([][.*+?^$(){}|\\])" "\\\\\\1" AMP_DUP_B_RE "${AMP_DUP_B}")
amp_expect_fail(loader_duplicate_name ENV AMPTRAIN_PLUGIN_PATH=${AMP_DUP_A}:${AMP_DUP_B}
  LABELS loader
  CODE 2
  REGEX "scaler plugin 'dup' is ambiguous: amp_scaler_dup\\.so is in 2 folders of the search path \\(${AMP_DUP_A_RE}/amp_scaler_dup\\.so, ${AMP_DUP_B_RE}/amp_scaler_dup\\.so\\). remove all but one, or give the path"
  OPTIONS --no-outputs ${AMP_BAD_OUT}/dup
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=dup --out ${AMP_BAD_OUT}/dup)
# Given by path, the duplicate is no longer ambiguous: the run succeeds.
amp_expect_fail(loader_duplicate_by_path ENV AMPTRAIN_PLUGIN_PATH=${AMP_DUP_A}:${AMP_DUP_B}
  LABELS loader
  CODE 0
  REGEX [=[3 steps \(0 skipped\)]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=${AMP_DUP_B}/amp_scaler_dup.so
          --out ${AMP_BAD_OUT}/dup_path)

# Plugin files and folders writable by group or others are refused
# (tests/loader_perms.sh makes private copies and changes their modes).
foreach(case file dir search)
  add_test(NAME loader_writable_${case}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/loader_perms.sh ${case} $<TARGET_FILE:amptrain>
                   ${AMP_DUP_A}/amp_scaler_dup.so ${AMP_TINY})
  set_tests_properties(loader_writable_${case} PROPERTIES LABELS loader)
endforeach()

# The NaN run fails after two logged steps: none of its outputs may remain,
# not even half-written (*.partial).
amp_expect_fail(loader_failed_run_leaves_no_outputs ENV ${AMP_BAD_ENV} LABELS loader
  CODE 1
  REGEX [=[invalid scale]=]
  OPTIONS --also [=[step 2/3]=] --no-outputs ${AMP_BAD_OUT}/no_outputs
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=nanscale --set train.log_every=1
          --out ${AMP_BAD_OUT}/no_outputs)

# `amptrain plugins -v` lists every rejected candidate with its reason (on
# stdout), and still the good plugins beside the executable (exit 0).
amp_expect_fail(loader_plugins_verbose ENV ${AMP_BAD_ENV} LABELS loader
  CODE 0
  REGEX [=[^rejected +.*amp_scaler_abimajor\.so: built for plugin ABI 2\.0]=]
  OPTIONS --stdout
    --also [=[^rejected +.*amp_scaler_noentry\.so: no 'amp_plugin_entry' symbol]=]
    --also [=[^rejected +.*amp_scaler_text\.so: not a shared object]=]
    --also [=[^rejected +.*amp_scaler_nullupdate\.so: scaler vtable leaves required function\(s\) NULL: update]=]
    --also [=[^rejected +.*amp_precision_wrongkind\.so.*declares a scaler plugin]=]
    --also [=[^rejected +.*amp_scaler_misnamed\.so: declares a scaler plugin 'negscale' but is named]=]
    --also [=[^scaler +dynamic +]=]
    --also [=[^scaler +initfail +]=]
    --also [=[^search order]=]
    --also ${AMP_SEARCH_DIR_RE}
  COMMAND $<TARGET_FILE:amptrain> plugins -v)

# Host services called with NULL or bad arguments (tests/bad_plugins/hostmisuse.c,
# case chosen by [scaler] misuse): refused without undefined behaviour, and the
# run stops naming the plugin and the service, even when init then succeeds.
set(AMP_MISUSE_RE [=[scaler plugin 'hostmisuse' ]=])
foreach(case_re
    "error_null|called host->error with a NULL format \\(a bug in the plugin\\)"
    "error_null_init_ok|called host->error with a NULL format \\(a bug in the plugin\\) \\(.*amp_scaler_hostmisuse\\.so\\), during init"
    "log_null|called host->log with a NULL format"
    "log_level|called host->log with level 42 \\(AMP_LOG_ERROR\\.\\.AMP_LOG_DEBUG are 0\\.\\.3\\)"
    "key_error_null_key|called host->key_error with a NULL key"
    "key_error_null|called host->key_error with a NULL format"
    "get_double_null_key|called host->get_double with a NULL key"
    "get_int_null_out|called host->get_int with a NULL out pointer"
    "get_string_null_out|called host->get_string with a NULL out pointer"
    "each_key_null_fn|called host->each_key with a NULL callback"
    "ctx_null|\\(or a plugin loaded with it\\) called host->error with a ctx \\(\\(nil\\)\\) that is not host->ctx"
    "ctx_garbage|\\(or a plugin loaded with it\\) called host->get_double with a ctx \\(0x1234\\) that is not host->ctx")
  string(REPLACE "|" ";" parts "${case_re}")
  list(GET parts 0 case)
  list(GET parts 1 re)
  amp_expect_fail(loader_host_misuse_${case} ENV ${AMP_BAD_ENV} LABELS loader
    CODE 2
    REGEX "${AMP_MISUSE_RE}${re}"
    OPTIONS --no-outputs ${AMP_BAD_OUT}/misuse_${case}
    COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=hostmisuse --set scaler.misuse=${case}
            --out ${AMP_BAD_OUT}/misuse_${case})
endforeach()
# In update: a runtime failure at that step.
amp_expect_fail(loader_host_misuse_at_update ENV ${AMP_BAD_ENV} LABELS loader
  CODE 1
  REGEX [=[scaler plugin 'hostmisuse' called host->log with a NULL format \(a bug in the plugin\), at step [0-9]+]=]
  OPTIONS --no-outputs ${AMP_BAD_OUT}/misuse_at_update
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=hostmisuse --set scaler.misuse=at_update
          --out ${AMP_BAD_OUT}/misuse_at_update)

# A broken FP8 recipe (scale_update): a scale that is negative, NaN or inf,
# or a hook that fails, stops the run with exit 1 naming the plugin, and
# writes no outputs.
amp_bad_plugin(precision negrecipe badrecipe.c BAD_RECIPE_NAME="negrecipe")
amp_bad_plugin(precision nanrecipe badrecipe.c BAD_RECIPE_NAME="nanrecipe" BAD_RECIPE_NAN)
amp_bad_plugin(precision infrecipe badrecipe.c BAD_RECIPE_NAME="infrecipe" BAD_RECIPE_INF)
amp_bad_plugin(precision failrecipe badrecipe.c BAD_RECIPE_NAME="failrecipe" BAD_RECIPE_FAIL)
# A policy that puts FP8 operands on a norm layer (no GEMM, no convolution):
# refused at config time. (Conv layers take them: fp8_cnn_conv.)
amp_bad_plugin(precision normrecipe badrecipe.c BAD_RECIPE_NAME="normrecipe" BAD_RECIPE_NORM)
amp_expect_fail(loader_norm_recipe ENV ${AMP_BAD_ENV} LABELS loader fp8
  CODE 2
  REGEX [=[precision plugin 'normrecipe' gives layer 'bn1' \(input operand\) a scaled format on a layer that runs no GEMM or convolution]=]
  OPTIONS --no-outputs ${AMP_BAD_OUT}/normrecipe
  COMMAND $<TARGET_FILE:amptrain> train ${PROJECT_SOURCE_DIR}/configs/cnn_fashion_bf16.ini
          --set precision.plugin=normrecipe --set train.steps=1 --out ${AMP_BAD_OUT}/normrecipe)
# The same through current scaling (the hook called as each tensor is
# quantized, in the middle of the step; fc1's weight, role 1, is the first
# one of a step): the plugin and the step named as in the delayed path, and
# the hook's own message after it.
amp_bad_plugin(precision nancurrent badrecipe.c BAD_RECIPE_NAME="nancurrent" BAD_RECIPE_NAN
               BAD_RECIPE_CURRENT)
amp_bad_plugin(precision failcurrent badrecipe.c BAD_RECIPE_NAME="failcurrent" BAD_RECIPE_FAIL
               BAD_RECIPE_CURRENT)
# each: the plugin's name (<bad><scaling>), the test's, the role that fails first
foreach(case neg.recipe.0 nan.recipe.0 inf.recipe.0 fail.recipe.0 nan.current.1 fail.current.1)
  string(REPLACE "." ";" case ${case})
  list(GET case 0 bad)
  list(GET case 1 scaling)
  list(GET case 2 role)
  set(name ${bad}${scaling})
  set(test loader_${bad}_recipe)
  if(scaling STREQUAL "current")
    set(test loader_${bad}_current_recipe)
  endif()
  if(bad STREQUAL "fail")
    set(why "scale_update failed for layer 'fc1' role ${role}: the recipe gave up on layer fc1$")
  else()
    set(why "scale_update returned the scale -?(1|nan|inf) for layer 'fc1' role ${role} ")
  endif()
  amp_expect_fail(${test} ENV ${AMP_BAD_ENV} LABELS loader fp8
    CODE 1
    REGEX "^amptrain: precision plugin '${name}' at step 1: ${why}"
    OPTIONS --no-outputs ${AMP_BAD_OUT}/${name}
    COMMAND ${AMP_TRAIN_TINY} --set precision.plugin=${name} --set scaler.plugin=none
            --out ${AMP_BAD_OUT}/${name})
endforeach()

# A policy that fails without calling host->error: the message says the
# plugin gave no reason, in resolve as in init (it ended "failed: ").
amp_bad_plugin(precision silentresolve silent.c SILENT_NAME="silentresolve")
amp_bad_plugin(precision silentinit silent.c SILENT_NAME="silentinit" SILENT_INIT)
amp_expect_fail(loader_silent_resolve ENV ${AMP_BAD_ENV} LABELS loader
  CODE 2
  REGEX [=[^amptrain: precision plugin 'silentresolve': resolving layer 'fc1' failed: \(the plugin gave no reason\)$]=]
  OPTIONS --no-outputs ${AMP_BAD_OUT}/silentresolve
  COMMAND ${AMP_TRAIN_TINY} --set precision.plugin=silentresolve --out ${AMP_BAD_OUT}/silentresolve)
amp_expect_fail(loader_silent_init ENV ${AMP_BAD_ENV} LABELS loader
  CODE 2
  REGEX [=[^amptrain: precision plugin 'silentinit' \(.*amp_precision_silentinit\.so\) failed to initialise: \(the plugin gave no reason\)$]=]
  OPTIONS --no-outputs ${AMP_BAD_OUT}/silentinit
  COMMAND ${AMP_TRAIN_TINY} --set precision.plugin=silentinit --out ${AMP_BAD_OUT}/silentinit)

# A policy's NVFP4 operand choices the host refuses at config time (exit 2,
# naming the plugin, the layer and the role; ABI 1.3).
amp_bad_plugin(precision badnvfp4 badnvfp4.c)
foreach(bad "delayed|weight operand\\) the NVFP4 format with a scaling that is not NVFP4_1D or NVFP4_2D"
            "fp8_nvfp4_scaling|weight operand\\) an NVFP4 scaling with a format that is not NVFP4"
            "tiles_input|input operand\\) 16x16 NVFP4 blocks \\(NVFP4_2D\\), which are for the weight role only"
            "flag_bits|grad_output operand\\) unknown operand flags 0x80"
            "flags_fp8|input operand\\) operand flags on a format that is not NVFP4"
            "hadamard_weight|weight operand\\) the Hadamard flag on the weight"
            "hadamard_one|input operand\\) the Hadamard flag on one of the weight-gradient GEMM's operands only")
  string(REPLACE "|" ";" parts "${bad}")
  list(GET parts 0 case)
  list(GET parts 1 re)
  amp_expect_fail(loader_nvfp4_${case} ENV ${AMP_BAD_ENV} LABELS loader nvfp4
    CODE 2
    REGEX "precision plugin 'badnvfp4' gives layer 'fc1' \\(${re}"
    OPTIONS --no-outputs ${AMP_BAD_OUT}/nvfp4_${case}
    COMMAND ${AMP_TRAIN_TINY} --set precision.plugin=badnvfp4 --set precision.misuse=${case}
            --out ${AMP_BAD_OUT}/nvfp4_${case})
endforeach()
