# The memory model's own sources, so these tests build while the rest of sim/ is in flux.
file(GLOB MEMORY_MODEL_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/sim/memory/*.cpp)
add_library(twinsim_memory_model STATIC ${MEMORY_MODEL_SOURCES})
target_link_libraries(twinsim_memory_model PUBLIC twinsim_models twinsim_hardware nlohmann_json::nlohmann_json)
set(AREA_LIBS twinsim_memory_model)
