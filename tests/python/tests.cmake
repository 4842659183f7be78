# pytest over the Python package (tests/python), against the module built in this tree
# (${CMAKE_BINARY_DIR}/python) — no pip install needed. Skipped with a message when
# the module or pytest is missing.
if(TARGET _core)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  add_test(NAME python_pytest
           COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_LIST_DIR}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(python_pytest PROPERTIES
    ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;TWINSIM_SOURCE_DIR=${PROJECT_SOURCE_DIR};TWINSIM_BINARY_DIR=${CMAKE_BINARY_DIR};MPLBACKEND=Agg"
    # a hang's bound, not a speed target: alone the suite takes about 260 s on 2 cores, beside
    # the other tests under ctest -j2 up to 320 s (2026-11-26)
    TIMEOUT 600
    # the longest test by far: started first under ctest -j, not last, where on a fresh
    # machine (no ctest cost data yet) it ran alone for 2-3 minutes after everything else
    COST 1000)
endif()
