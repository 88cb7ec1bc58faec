# SPDX-License-Identifier: MIT
# pb_add_module(NAME [COMMANDS] SOURCES ... [DEPENDS module...] [LIBRARIES target...])
#   One static library pb_NAME per folder of src/. DEPENDS names other modules; the link
#   graph is the dependency rule of docs/ARCHITECTURE.md, so a forbidden include fails to link.
#   COMMANDS: the module defines pb::NAME::register_commands(pb::cli::CommandTree&).
function(pb_add_module name)
  cmake_parse_arguments(M "COMMANDS" "" "SOURCES;DEPENDS;LIBRARIES" ${ARGN})
  add_library(pb_${name} STATIC ${M_SOURCES})
  target_include_directories(pb_${name} PUBLIC "${PROJECT_SOURCE_DIR}/include"
                                        PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
  set(deps)
  foreach(dep IN LISTS M_DEPENDS)
    list(APPEND deps pb_${dep})
  endforeach()
  target_link_libraries(pb_${name} PUBLIC pb_settings ${deps} ${M_LIBRARIES} PRIVATE pb_warnings)
  set_property(GLOBAL APPEND PROPERTY PB_MODULES ${name})
  if(M_COMMANDS)
    set_property(GLOBAL APPEND PROPERTY PB_COMMAND_MODULES ${name})
  endif()
endfunction()

# pb_add_tests(MODULE SOURCES ... [LIBRARIES ...]): one GoogleTest binary per module.
# Tests get PB_BINARY (the real primebeaker), PB_SOURCE_DIR and PB_SHARED_DIR.
function(pb_add_tests module)
  cmake_parse_arguments(T "" "" "SOURCES;LIBRARIES" ${ARGN})
  add_executable(pb_${module}_tests ${T_SOURCES})
  target_link_libraries(pb_${module}_tests PRIVATE pb_${module} pb_test_support ${T_LIBRARIES}
                                                   GTest::gtest_main pb_warnings)
  add_dependencies(pb_${module}_tests primebeaker)
  gtest_discover_tests(pb_${module}_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS ${module})
endfunction()
