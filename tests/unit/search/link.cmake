# the search lives in twinsim_sim; no executor or kernels needed
set(AREA_LIBS twinsim_sim twinsim_scenario twinsim_hardware twinsim_models)
# file-local names that clash with another file's in a unity build (cmake/UnityBuild.cmake)
set(UNITY_ALONE default_stack_search_test.cpp)
