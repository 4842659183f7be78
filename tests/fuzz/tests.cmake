# The libFuzzer targets build only with clang and -DTWINSIM_FUZZ=ON (scripts/fuzz.sh).
# Every input that once crashed is kept in tests/fuzz/regressions and replayed by
# tests/unit/reliability/fuzz_regression_test.cpp in every build.
if(TWINSIM_FUZZ)
  add_executable(fuzz_scenario ${CMAKE_CURRENT_LIST_DIR}/fuzz_scenario.cpp)
  target_compile_options(fuzz_scenario PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_scenario PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_scenario PRIVATE twinsim_scenario)
  target_include_directories(fuzz_scenario PRIVATE ${PROJECT_SOURCE_DIR})
  # the CSV readers a user's file reaches (serve --trace-file, validate-csv, fit-network, fit-gemm)
  add_executable(fuzz_csv ${CMAKE_CURRENT_LIST_DIR}/fuzz_csv.cpp)
  target_compile_options(fuzz_csv PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_csv PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_csv PRIVATE twinsim_sim)
  target_include_directories(fuzz_csv PRIVATE ${PROJECT_SOURCE_DIR})
endif()
