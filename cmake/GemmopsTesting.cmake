# cmake/GemmopsTesting.cmake: GoogleTest discovery and gemmops_add_test(name SOURCES ... LABELS ...)
include(GoogleTest)
find_package(GTest QUIET)
if(NOT GTest_FOUND)
  # Machines without the packaged library still have the sources somewhere; name them here.
  set(GEMMOPS_GTEST_SOURCE_DIR "/usr/src/googletest" CACHE PATH "GoogleTest sources, used when no package is found")
  if(NOT EXISTS "${GEMMOPS_GTEST_SOURCE_DIR}/CMakeLists.txt")
    message(FATAL_ERROR "GoogleTest not found: install libgtest-dev or set GEMMOPS_GTEST_SOURCE_DIR")
  endif()
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  add_subdirectory(${GEMMOPS_GTEST_SOURCE_DIR} ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
  add_library(GTest::gtest ALIAS gtest)
  add_library(GTest::gtest_main ALIAS gtest_main)
endif()

# One executable per tier; every test is discovered at test time (PRE_TEST: the build never runs a
# test binary) and a GTEST_SKIP counts as a skip, not a pass.
function(gemmops_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LABELS;LIBRARIES" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBRARIES} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/src)
  gemmops_set_warnings(${name})
  # A test that hangs (a kernel deadlock) fails after TIMEOUT seconds instead of stalling the run.
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${T_LABELS}" SKIP_REGULAR_EXPRESSION "  SKIPPED " TIMEOUT 300)
endfunction()
