set(AREA_LIBS twinsim_scenario)
# file-local names that clash with another file's in a unity build (cmake/UnityBuild.cmake)
set(UNITY_ALONE reject_test.cpp)
