# lagpilot_library(<name> SOURCES <file>... LINK <target>... [PRECOMPILE <header>...]
#                  [STANDALONE <file>...])
#
# One folder is one library: a static library lagpilot_<name>, usable in this build as
# lagpilot::<name> (the same name an installed package gives it), whose headers install under
# include/lagpilot/<folder>/ and which joins the exported package (lagpilotTargets.cmake).
# Sources include each other as "folder/file.h" from the project root, both here and installed
# (the installed include directories are include/lagpilot and include).
#
# STANDALONE sources (among SOURCES) are compiled alone, outside the unity batches: the config
# readers of the live runtime, which the `lagpilot` binary links without the rest (a linker
# takes a static library's code an object file at a time, and a batch that held a config reader
# and the Kafka source would bring librdkafka, cpp-httplib and prometheus-cpp into every
# `lagpilot sim`). cli/CMakeLists.txt checks what the binary ends up needing.
function(lagpilot_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK;PRECOMPILE;STANDALONE" ${ARGN})
  set(target lagpilot_${name})
  add_library(${target} STATIC ${ARG_SOURCES})
  add_library(lagpilot::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:include/lagpilot> $<INSTALL_INTERFACE:include>)
  target_link_libraries(${target} PUBLIC ${ARG_LINK})
  lagpilot_precompile(${target} ${ARG_PRECOMPILE})
  # Unity batches (LAGPILOT_UNITY_BUILD, on unless `make build UNITY=OFF`): about half the CPU
  # of one file at a time, since the heavy templates are instantiated (and instrumented) once
  # per batch. Names in anonymous namespaces then share a batch, so a library's .cpp files must
  # not define the same internal name twice (a shared one goes in a header, e.g.
  # policies/infinity.h).
  if(LAGPILOT_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    if(ARG_STANDALONE)
      set_source_files_properties(${ARG_STANDALONE} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endif()
  set_property(GLOBAL APPEND PROPERTY LAGPILOT_EXPORTED_TARGETS ${target})
  file(GLOB headers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.h)
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  install(FILES ${headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lagpilot/${folder})
endfunction()
