# Unity ("jumbo") builds for the test programs: CMake compiles each group of up to
# TWINSIM_UNITY_BATCH of a test program's files as one translation unit, so the precompiled
# header is loaded, and GoogleTest's and nlohmann::json's inline code instantiated and
# optimised, once per group instead of once per file.
#
# Off by default, on in CI (scripts/test.sh: CI=true builds cold). A developer's rebuild
# recompiles only the file that changed, and ccache keeps what it compiled.
#
# Files of one group share a translation unit, so two file-local helpers of the same name
# (`namespace { const char* kBase ... }` in two test files) clash there and only there. Such a
# file compiles alone: its folder's link.cmake names it in UNITY_ALONE (tests/CMakeLists.txt).
# app/ is left out: every cmd_*.cpp has its own `namespace { struct Options; void run(); }`.
option(TWINSIM_UNITY "Unity builds for the test programs (cold builds: CI)" OFF)
set(TWINSIM_UNITY_BATCH 8 CACHE STRING "Test files per unity translation unit")

# twinsim_unity_build(target [file ...]): the files named compile alone (see above)
function(twinsim_unity_build target)
  if(NOT TWINSIM_UNITY)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${TWINSIM_UNITY_BATCH})
  if(ARGN)
    set_source_files_properties(${ARGN} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()
