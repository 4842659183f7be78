set(BENCH_LIBS twinsim_sim)
target_compile_definitions(${name} PRIVATE TWINSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
