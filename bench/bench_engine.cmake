# The engine's own sources, so this benchmark builds while the rest of sim/ is in flux.
file(GLOB BENCH_ENGINE_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/sim/engine/*.cpp)
target_sources(bench_engine PRIVATE ${BENCH_ENGINE_SOURCES})
target_include_directories(bench_engine PRIVATE ${PROJECT_SOURCE_DIR})
set(BENCH_LIBS Boost::headers)
