# amptrain_add_plugin(KIND NAME SOURCES...)
#
# Builds the amptrain plugin amp_<KIND>_<NAME>.so (KIND: scaler or
# precision; NAME: [a-z0-9_]+) as a MODULE against the amptrain::plugin
# interface target. Part of the installed SDK (find_package(amptrain)) and used
# by the built-in plugins too, so both are built the same way:
#   - no "lib" prefix: amptrain finds plugins by the file name amp_<KIND>_<NAME>.so;
#   - hidden visibility: only the entry symbol (AMP_PLUGIN_DEFINE) is exported;
#   - -z defs: a plugin never links the core, so an undefined symbol is an error;
#   - chmod go-w on the file and its folder after linking: amptrain refuses
#     plugins another user could replace, and the linker follows the umask.
function(amptrain_add_plugin kind name)
  if(NOT kind MATCHES "^(scaler|precision)$")
    message(FATAL_ERROR "amptrain_add_plugin(${kind} ${name}): KIND must be scaler or precision")
  endif()
  if(NOT name MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "amptrain_add_plugin(${kind} ${name}): NAME must match [a-z0-9_]+ "
                        "(it is the name used in INI files)")
  endif()
  if(NOT ARGN)
    message(FATAL_ERROR "amptrain_add_plugin(${kind} ${name}): no source files given")
  endif()
  set(target amp_${kind}_${name})
  add_library(${target} MODULE ${ARGN})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    SUFFIX ".so"
    OUTPUT_NAME ${target}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE amptrain::plugin m)
  target_link_options(${target} PRIVATE -Wl,-z,defs)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND chmod go-w $<TARGET_FILE:${target}> $<TARGET_FILE_DIR:${target}>
    VERBATIM)
endfunction()
