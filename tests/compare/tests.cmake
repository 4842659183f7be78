# `twinsim compare SIM.json TRACE` on public profiler traces, each category recomputed from the
# raw trace by an independent Python script (tests/compare/check_trace_categories.py).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli.compare_real_runs
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_trace_categories.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.compare_real_runs PROPERTIES TIMEOUT 300)

# `twinsim calibrate --from-trace` on one public H100 trace predicts another's step within 10%,
# its measured figures recomputed from the raw traces (tests/compare/check_trace_calibration.py).
add_test(NAME cli.calibrate_from_trace
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_trace_calibration.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.calibrate_from_trace PROPERTIES TIMEOUT 300)

# An Nsight Systems SQLite export (made by hand in NVIDIA's schema) converted by
# scripts/nsys_to_trace.py and read by `twinsim compare`, against hand-derived figures.
add_test(NAME cli.compare_nsys_export
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_nsys_import.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.compare_nsys_export PROPERTIES TIMEOUT 300)
