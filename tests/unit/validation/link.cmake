set(AREA_LIBS twinsim_trust twinsim_sim twinsim_scenario)  # tests build scenarios from YAML text
# file-local names that clash with another file's in a unity build (cmake/UnityBuild.cmake)
set(UNITY_ALONE decode_cuda_core_test.cpp decode_fa3_paged_test.cpp nccl_multinode_test.cpp no_stack_judges_test.cpp sharded_dp_runs_test.cpp torchtitan_runs_test.cpp
    nccl_aiconfigurator_test.cpp xla_collectives_test.cpp gemm_moe_shapes_test.cpp trtllm09_mistral_test.cpp
    nccl_small_messages_test.cpp gpt_oss_head_test.cpp gpt_oss_across_plans_test.cpp)
