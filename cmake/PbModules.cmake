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

# pb_add_tests(MODULE [E2E] SOURCES ... [LIBRARIES ...]): one GoogleTest binary per module.
# Tests get PB_BINARY (the real primebeaker), PB_SOURCE_DIR and PB_SHARED_DIR. Each test is
# labelled MODULE. E2E: the suite is mostly end-to-end (it runs the real binary through
# test::run_primebeaker); its tests are labelled `e2e` too and the target pb_e2e_tests builds it.
# .ci/run's Release leg builds pb_e2e_tests and runs `ctest -L '^e2e$'` (docs/testing.md).
function(pb_add_tests module)
  cmake_parse_arguments(T "E2E" "" "SOURCES;LIBRARIES" ${ARGN})
  add_executable(pb_${module}_tests ${T_SOURCES})
  target_link_libraries(pb_${module}_tests PRIVATE pb_${module} pb_test_support ${T_LIBRARIES}
                                                   GTest::gtest_main pb_warnings)
  add_dependencies(pb_${module}_tests primebeaker)
  gtest_discover_tests(pb_${module}_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS ${module})
  if(T_E2E)
    add_dependencies(pb_e2e_tests pb_${module}_tests)
    # gtest_discover_tests cannot pass a list-valued property (CMake 3.25 splits it), so the
    # second label is set by a script ctest includes after the discovered tests, which
    # defines pb_MODULE_tests_TESTS (nothing happens while the binary is not built).
    set(script "${CMAKE_CURRENT_BINARY_DIR}/pb_${module}_tests_e2e.cmake")
    file(CONFIGURE OUTPUT "${script}" CONTENT [[
if(pb_@module@_tests_TESTS)
  set_tests_properties(${pb_@module@_tests_TESTS} PROPERTIES LABELS "@module@;e2e")
endif()
]] @ONLY)
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
  endif()
endfunction()
