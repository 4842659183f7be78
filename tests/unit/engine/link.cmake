# The engine's own sources, so its tests build while the rest of sim/ is in flux.
file(GLOB ENGINE_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/sim/engine/*.cpp)
target_sources(test_engine PRIVATE ${ENGINE_SOURCES})
target_include_directories(test_engine PRIVATE ${PROJECT_SOURCE_DIR})
set(AREA_LIBS Boost::headers nlohmann_json::nlohmann_json)
