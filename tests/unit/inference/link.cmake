set(AREA_LIBS twinsim_sim twinsim_scenario twinsim_trust)  # tests build scenarios from YAML text; EngineBench reads the validation cases
# file-local names that clash with another file's in a unity build (cmake/UnityBuild.cmake)
set(UNITY_ALONE experts_in_tp_serving_test.cpp decode_components_aiconfigurator_test.cpp fused_moe_tables_test.cpp
                dense_decode_large_batch_test.cpp)
