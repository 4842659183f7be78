# Precompiled headers for the test programs and the command line's glue: GoogleTest, CLI11,
# nlohmann::json and the standard headers nearly every such file includes, parsed once per
# group of targets instead of once per source file. Measured 2026-12-07 (CPU-s, no ccache,
# loaded 2-core guest, GCC 12.2): the 219 objects of the tests and app/ 645.5 -> 506.0,
# the two headers' 12.0 included (the 184 unit-test files 488.9 -> 332.0); side by side
# under the same load, six test files 24.3 -> 18.3 and cmd_simulate + cmd_serve 15.0 -> 12.2.
#
# Off by default, on in CI (scripts/test.sh: CI=true builds cold, with no ccache to lose).
# ccache does not cache a file compiled with a precompiled header unless told to be sloppy
# about it, and the developers' rebuilds live on ccache hits.
#
# -Wno-array-bounds -Wno-stringop-overflow on the targets that use them, and only there: under
# a precompiled header GCC 12 inlines std::string's operator+ (and its move constructor) where
# it does not otherwise, and then raises false warnings on `std::string(literal) + "..."`:
# -Warray-bounds (a cold CI build with -Werror stopped at
# tests/unit/validation/vtrain_csv_test.cpp:66, 2026-12-07) and, with that one off,
# -Wstringop-overflow "writing 53 bytes into a region of size 16" (the string's 16-byte local
# buffer, which is used only when the string fits: five test files, 2026-12-07). The same
# header included as text, or plain -O2/-O3, warns nothing. It is libstdc++'s basic_string
# not telling GCC that invariant: gcc.gnu.org/bugzilla/show_bug.cgi?id=109299 (later
# libstdc++ adds the hint in basic_string::_M_is_local(); Debian's GCC 12.2 lacks it); also
# on record with a precompiled header: github.com/micmacIGN/micmac/issues/236 (GCC 12). The
# libraries, which hold the indexing code, have no precompiled header and keep both warnings.
option(TWINSIM_PCH "Precompiled headers for the tests and app/ (cold builds: CI)" OFF)

# The first target of a group compiles the header; the others reuse it. GCC accepts the reuse
# only under the same -fPIC/-fPIE and optimisation flags (CMake adds -Winvalid-pch, so with
# -DTWINSIM_WERROR=ON a refused header stops the build instead of silently costing time).
# The tests' owner is an empty GoogleTest program of its own: reusing a header makes a target
# depend on its owner, and a real test owner would drag its libraries into every test
# (scripts/sanitize.sh --sample builds three tests alone).
set(TWINSIM_PCH_WARNINGS_OFF $<$<COMPILE_LANGUAGE:CXX>:-Wno-array-bounds>
                             $<$<COMPILE_LANGUAGE:CXX>:-Wno-stringop-overflow>)  # see above
function(twinsim_precompiled_headers target group)
  if(NOT TWINSIM_PCH)
    return()
  endif()
  target_compile_options(${target} PRIVATE ${TWINSIM_PCH_WARNINGS_OFF})  # see above
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
    target_compile_options(twinsim_test_pch PRIVATE ${TWINSIM_PCH_WARNINGS_OFF})
    target_link_libraries(twinsim_test_pch PRIVATE GTest::gtest GTest::gtest_main)
    # the tests' definitions (tests/CMakeLists.txt): GCC refuses a header compiled under others
    target_compile_definitions(twinsim_test_pch PRIVATE ${TWINSIM_TEST_DEFINITIONS})
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
