set(AREA_LIBS twinsim_kernels)
if(TWINSIM_GEMM_AVX2_BUILT)
  target_compile_definitions(test_kernels PRIVATE TWINSIM_GEMM_AVX2=1)  # gemm_test calls gemm_avx2
endif()
# file-local names that clash with another file's in a unity build (cmake/UnityBuild.cmake)
set(UNITY_ALONE linear_storage_test.cpp)
