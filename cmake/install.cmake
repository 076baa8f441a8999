# The installed plugin SDK: the public header (core/CMakeLists.txt), the
# amptrain::plugin interface target with amptrain_add_plugin (CMake package)
# and amptrain.pc (pkg-config). Included from the top-level CMakeLists.txt
# after the targets exist.
include(CMakePackageConfigHelpers)

# The ABI version, read from the header so it is never stated twice.
file(STRINGS ${PROJECT_SOURCE_DIR}/core/include/amptrain/plugin.h AMP_ABI_LINES
     REGEX "^#define AMP_PLUGIN_ABI_(MAJOR|MINOR) [0-9]+")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*" "\\1" AMP_ABI_MAJOR "${AMP_ABI_LINES}")
string(REGEX REPLACE ".*MINOR ([0-9]+).*" "\\1" AMP_ABI_MINOR "${AMP_ABI_LINES}")

set(AMP_CMAKE_INSTALL_SUBDIR ${CMAKE_INSTALL_LIBDIR}/cmake/amptrain)
install(EXPORT amptrainTargets NAMESPACE amptrain:: DESTINATION ${AMP_CMAKE_INSTALL_SUBDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/amptrainConfig.cmake.in
  ${CMAKE_BINARY_DIR}/sdk/amptrainConfig.cmake
  INSTALL_DESTINATION ${AMP_CMAKE_INSTALL_SUBDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR AMP_PLUGIN_INSTALL_SUBDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/sdk/amptrainConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/sdk/amptrainConfig.cmake
              ${CMAKE_BINARY_DIR}/sdk/amptrainConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/amptrainPlugin.cmake
        DESTINATION ${AMP_CMAKE_INSTALL_SUBDIR})

# pkg-config: relocatable, the prefix is found from <libdir>/pkgconfig by
# going up one ".." a folder (an absolute libdir pins the configured prefix).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(AMP_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  string(REGEX REPLACE "[^/]+" ".." AMP_PC_UP "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  set(AMP_PC_PREFIX "\${pcfiledir}/${AMP_PC_UP}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/amptrain.pc.in ${CMAKE_BINARY_DIR}/sdk/amptrain.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/sdk/amptrain.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
