# The sanitizer sample (scripts/sanitize.sh --sample, which CI runs) builds only the library
# sources its tests reach. -DTWINSIM_SANITIZE_SAMPLE=<areas> names test folders of
# tests/unit; twinsim_sample_sources() then keeps, of a library's sources, those in the
# include closure of those folders' *_test.cpp files: a quoted #include of a header pulls in
# the header and the .cpp beside it, recursively. On 2026-12-07 that closure was exactly the
# set of objects the linker took from libtwinsim_sim.a for scenario;reliability;memory
# (46 of 86; linker map, -Wl,-Map): the other 40 are never linked, yet cost about 140 of the
# sample's 360 CPU-s to compile under ASan. Only a library that nothing but the tests links
# may be trimmed (sim/): the closure starts at the tests, so the sources of an untrimmed
# library (scenario/ uses all of models/) would not be followed. Its own build folder
# (build-asan-sample): the trimmed library links only the sample's tests.
set(TWINSIM_SANITIZE_SAMPLE "" CACHE STRING
    "Test folders of tests/unit whose include closure alone is built (scripts/sanitize.sh --sample)")

# Sets `out` to every file reached from `files` through quoted #include lines; a header's
# sibling .cpp counts as reached. Includes resolve against the including file's folder,
# then the source root (the project writes "sim/memory/weights.hpp").
function(twinsim_include_closure out)
  set(todo ${ARGN})
  set(seen "")
  while(todo)
    list(POP_FRONT todo file)
    if(file IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${file})
    get_filename_component(dir ${file} DIRECTORY)
    file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" name "${line}")
      foreach(candidate ${dir}/${name} ${PROJECT_SOURCE_DIR}/${name})
        if(EXISTS ${candidate})
          get_filename_component(candidate ${candidate} REALPATH)
          list(APPEND todo ${candidate})
          string(REGEX REPLACE "\\.hpp$" ".cpp" sibling ${candidate})
          if(NOT sibling STREQUAL candidate AND EXISTS ${sibling})
            list(APPEND todo ${sibling})
          endif()
          break()
        endif()
      endforeach()
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# Keeps in the list named `sources_var` only the sources the sample reaches (no-op unless
# TWINSIM_SANITIZE_SAMPLE is set).
function(twinsim_sample_sources sources_var)
  if(NOT TWINSIM_SANITIZE_SAMPLE)
    return()
  endif()
  get_property(closure GLOBAL PROPERTY TWINSIM_SAMPLE_CLOSURE)
  if(NOT closure)
    set(tests "")
    foreach(area IN LISTS TWINSIM_SANITIZE_SAMPLE)
      file(GLOB area_tests ${PROJECT_SOURCE_DIR}/tests/unit/${area}/*_test.cpp)
      if(NOT area_tests)
        message(FATAL_ERROR "TWINSIM_SANITIZE_SAMPLE: tests/unit/${area} has no *_test.cpp")
      endif()
      list(APPEND tests ${area_tests})
    endforeach()
    twinsim_include_closure(closure ${tests})
    set_property(GLOBAL PROPERTY TWINSIM_SAMPLE_CLOSURE ${closure})
  endif()
  set(kept "")
  foreach(source IN LISTS ${sources_var})
    get_filename_component(real ${source} REALPATH)
    if(real IN_LIST closure)
      list(APPEND kept ${source})
    endif()
  endforeach()
  set(${sources_var} ${kept} PARENT_SCOPE)
endfunction()
