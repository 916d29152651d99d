# The installed package: `cmake --install <build> --prefix P` (or `make install PREFIX=P`) puts
# the headers under P/include/lagpilot/, the static libraries under P/lib, the `lagpilot`
# binary under P/bin and a CMake package config under P/lib/cmake/lagpilot, so that
#
#   find_package(lagpilot CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE lagpilot::lagpilot)   # the Service and all it needs
#
# works; the finer targets (lagpilot::policies, lagpilot::sim, lagpilot::pool, ...) are exported
# too. Dependencies are found again by lagpilotConfig.cmake (find_dependency, pkg-config).
include(CMakePackageConfigHelpers)

# lagpilot::lagpilot: what an embedder of lagpilot::Service links.
add_library(lagpilot_lagpilot INTERFACE)
add_library(lagpilot::lagpilot ALIAS lagpilot_lagpilot)
set_target_properties(lagpilot_lagpilot PROPERTIES EXPORT_NAME lagpilot)
target_link_libraries(lagpilot_lagpilot INTERFACE lagpilot::controller)

get_property(exported GLOBAL PROPERTY LAGPILOT_EXPORTED_TARGETS)
set(package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/lagpilot)
install(TARGETS ${exported} lagpilot_lagpilot EXPORT lagpilotTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Together: lagpilot execs lagpilot-live from its own directory (cli/commands.h).
install(TARGETS lagpilot lagpilot-live RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/lagpilot/lagpilot.h
              ${PROJECT_BINARY_DIR}/include/lagpilot/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lagpilot)
install(EXPORT lagpilotTargets NAMESPACE lagpilot:: DESTINATION ${package_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lagpilotConfig.cmake.in
  ${PROJECT_BINARY_DIR}/lagpilotConfig.cmake INSTALL_DESTINATION ${package_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lagpilotConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lagpilotConfig.cmake
              ${PROJECT_BINARY_DIR}/lagpilotConfigVersion.cmake
        DESTINATION ${package_dir})
