# The memory model's own sources, so this benchmark builds while the rest of sim/ is in flux.
file(GLOB BENCH_MEMORY_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/sim/memory/*.cpp)
target_sources(bench_memory PRIVATE ${BENCH_MEMORY_SOURCES})
set(BENCH_LIBS twinsim_models twinsim_hardware nlohmann_json::nlohmann_json)
