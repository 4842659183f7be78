set(AREA_LIBS twinsim_sim twinsim_scenario)  # tests build scenarios from YAML text
# file-local names that clash with another file's in a unity build (cmake/UnityBuild.cmake)
set(UNITY_ALONE expert_folding_test.cpp fp8_params_test.cpp fp8_training_test.cpp fsdp_copies_test.cpp lora_test.cpp moe_counts_exchange_test.cpp moe_token_moves_test.cpp
    replica_symmetry_test.cpp)
