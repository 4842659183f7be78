# Precompiled headers for the test programs and the command line's glue: GoogleTest, CLI11,
# nlohmann::json and the standard headers nearly every such file includes, parsed once per
# group of targets instead of once per source file. On a cold build this saves about a fifth
# of each test file's compile time (tests/unit/training/step_test.cpp: 7.2 s -> 5.8 s of CPU,
# 2026-12-07, 2-core guest under load); CI builds cold (.ci/run).
#
# Off by default until every target is known to build warning-free with it: GCC 12 inlines
# differently under a precompiled header and then raised a false -Warray-bounds in
# std::string's operator+ (tests/unit/training/scenarios_test.cpp, rewritten), which
# -DTWINSIM_WERROR=ON turns into an error; 3 of the 20 test programs were checked. Also,
# ccache does not cache a file compiled with a precompiled header unless told to be sloppy
# about it, and the developers' rebuilds live on ccache hits: CI (cold) is where it pays.
option(TWINSIM_PCH "Precompiled headers for the tests and app/ (cold builds: CI)" OFF)

# The first target of a group compiles the header; the others reuse it. GCC accepts the reuse
# only under the same -fPIC/-fPIE and optimisation flags (CMake adds -Winvalid-pch, so with
# -DTWINSIM_WERROR=ON a refused header stops the build instead of silently costing time).
# The tests' owner is an empty GoogleTest program of its own: reusing a header makes a target
# depend on its owner, and a real test owner would drag its libraries into every test
# (scripts/sanitize.sh --sample builds three tests alone).
function(twinsim_precompiled_headers target group)
  if(NOT TWINSIM_PCH)
    return()
  endif()
  get_property(owner GLOBAL PROPERTY TWINSIM_PCH_OWNER_${group})
  if(owner)
    target_precompile_headers(${target} REUSE_FROM ${owner})
    return()
  endif()
  if(group STREQUAL "tests")
    set(owner_source ${CMAKE_BINARY_DIR}/twinsim_test_pch.cpp)
    file(CONFIGURE OUTPUT ${owner_source} CONTENT "// owns the tests' precompiled header (cmake/Precompiled.cmake)\n")
    add_executable(twinsim_test_pch EXCLUDE_FROM_ALL ${owner_source})
    twinsim_glue_optimization(twinsim_test_pch)
    target_link_libraries(twinsim_test_pch PRIVATE GTest::gtest GTest::gtest_main)
    target_compile_definitions(twinsim_test_pch PRIVATE
      TWINSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}" TWINSIM_BINARY_DIR="${PROJECT_BINARY_DIR}")
    set(owner twinsim_test_pch)
    target_precompile_headers(${target} REUSE_FROM ${owner})
  else()
    set(owner ${target})
  endif()
  set_property(GLOBAL PROPERTY TWINSIM_PCH_OWNER_${group} ${owner})
  set(headers <algorithm> <cmath> <cstdio> <fstream> <map> <set> <sstream> <stdexcept> <string> <vector>
              <nlohmann/json.hpp>)
  if(group STREQUAL "tests")
    list(APPEND headers <gtest/gtest.h>)
  elseif(group STREQUAL "app")
    list(APPEND headers <iostream> <CLI/CLI.hpp>)
  endif()
  target_precompile_headers(${owner} PRIVATE ${headers})
endfunction()
