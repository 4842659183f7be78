set(BENCH_LIBS twinsim_sim twinsim_scenario)
target_compile_definitions(${name} PRIVATE TWINSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
