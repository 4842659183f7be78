set(BENCH_LIBS twinsim_sim twinsim_scenario twinsim_hardware twinsim_models)
target_compile_definitions(${name} PRIVATE TWINSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
