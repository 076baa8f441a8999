# Plugin trust and the ABI's bounds (issue 15), beside tests/cmake/loader.cmake
# (whose amp_bad_plugin_in and variables it uses; areas are included in name
# order, so loader.cmake is already read).
#   - tests/loader_perms.sh: sshd's rules for owners and for every folder up
#     to /, and the advice for sticky shared folders (move, never chmod);
#   - test_plugin_trust: the same rules on fabricated stat results (owners
#     no test user can create), and on real folders;
#   - plugins whose entry lies about sizes or pointers: `plugins -v` lists
#     them as rejected instead of crashing, and `train` refuses them.
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)

foreach(case sticky ancestor ancestor_sticky owner owner_ancestor)
  add_test(NAME loader_trust_${case}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/loader_perms.sh ${case} $<TARGET_FILE:amptrain>
                   ${AMP_DUP_A}/amp_scaler_dup.so ${AMP_TINY})
  set_tests_properties(loader_trust_${case} PROPERTIES LABELS loader SKIP_RETURN_CODE 77)
endforeach()

amp_unit_test(test_plugin_trust loader)

# Entries that lie: each its own plugin in a folder of their own.
set(AMP_BOUND_DIR ${CMAKE_BINARY_DIR}/tests/bound_plugins)
amp_bad_plugin_in(${AMP_BOUND_DIR} amp_bound_hugesize scaler hugesize bounds.c BOUND_ENTRY_SIZE)
amp_bad_plugin_in(${AMP_BOUND_DIR} amp_bound_hugevtable scaler hugevtable bounds.c BOUND_VTABLE_SIZE)
amp_bad_plugin_in(${AMP_BOUND_DIR} amp_bound_wildname scaler wildname bounds.c BOUND_WILD_NAME)
amp_bad_plugin_in(${AMP_BOUND_DIR} amp_bound_badname scaler badname bounds.c BOUND_BAD_NAME)
amp_bad_plugin_in(${AMP_BOUND_DIR} amp_bound_ctrlversion scaler ctrlversion bounds.c BOUND_CTRL_VERSION)
amp_bad_plugin_in(${AMP_BOUND_DIR} amp_bound_wildvtable scaler wildvtable bounds.c BOUND_WILD_VTABLE)
set(AMP_BOUND_ENV AMPTRAIN_PLUGIN_PATH=${AMP_BOUND_DIR})

# `plugins -v` read past an entry with struct_size 0xFFFFFFFF and crashed.
amp_expect_fail(loader_bounds_listing ENV ${AMP_BOUND_ENV} LABELS loader
  CODE 0
  REGEX [=[^rejected +.*amp_scaler_hugesize\.so: entry struct_size 4294967295 is larger than the [0-9]+ bytes of its 'amp_plugin_entry' symbol]=]
  OPTIONS --stdout
    --also [=[^rejected +.*amp_scaler_hugevtable\.so: vtable struct_size 4294967295 runs past the plugin's data]=]
    --also [=[^rejected +.*amp_scaler_wildname\.so: entry's name does not point to a string of at most 4096 bytes inside the plugin]=]
    --also [=[^rejected +.*amp_scaler_badname\.so: entry's name 'Bad/Name' has a 'B'. plugin names use a-z, 0-9 and _]=]
    --also [=[^rejected +.*amp_scaler_ctrlversion\.so: entry's version holds the control byte 0x0a]=]
    --also [=[^rejected +.*amp_scaler_wildvtable\.so: entry's vtable does not point inside the plugin]=]
    --also [=[^scaler +dynamic +]=]
  COMMAND $<TARGET_FILE:amptrain> plugins -v)
foreach(name hugesize hugevtable wildname wildvtable)
  amp_expect_fail(loader_bounds_train_${name} ENV ${AMP_BOUND_ENV} LABELS loader
    CODE 2
    REGEX "amp_scaler_${name}\\.so: (entry|vtable)"
    COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=${name} --out ${AMP_BAD_OUT}/bound_${name})
endforeach()

# A plugin without an entry of its own that links a library exporting one:
# dlsym would find the library's; the loader must refuse it, not load it.
add_library(amp_bound_entrylib SHARED ${AMP_BAD_SRC}/dup.c)
set_target_properties(amp_bound_entrylib PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${AMP_BOUND_DIR}/lib C_VISIBILITY_PRESET hidden)
target_include_directories(amp_bound_entrylib PRIVATE ${PROJECT_SOURCE_DIR}/core/include)
add_custom_command(TARGET amp_bound_entrylib POST_BUILD
  COMMAND chmod go-w $<TARGET_FILE:amp_bound_entrylib> $<TARGET_FILE_DIR:amp_bound_entrylib> VERBATIM)
amp_bad_plugin_in(${AMP_BOUND_DIR} amp_bound_borrowed scaler borrowed noentry.c)
# --no-as-needed: nothing in the plugin uses the library, the link must stay.
target_link_options(amp_bound_borrowed PRIVATE -Wl,--no-as-needed)
target_link_libraries(amp_bound_borrowed PRIVATE amp_bound_entrylib)
amp_expect_fail(loader_bounds_borrowed_entry ENV ${AMP_BOUND_ENV} LABELS loader
  CODE 2
  REGEX [=[amp_scaler_borrowed\.so: its 'amp_plugin_entry' symbol is not defined in the plugin itself]=]
  COMMAND ${AMP_TRAIN_TINY} --set scaler.plugin=borrowed --out ${AMP_BAD_OUT}/bound_borrowed)
