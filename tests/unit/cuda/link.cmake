# GPU tests. With the CUDA backend they link it; each test that needs a GPU calls
# cuda_device_available() and reports SKIPPED with the reason when there is none (never
# failed, never silently passed). Without the backend the binary holds the tests that
# need no CUDA at all plus one that reports SKIPPED saying the backend was not built.
if(TWINSIM_HAVE_CUDA)
  set(AREA_LIBS twinsim_exec_cuda twinsim_kernels_cuda twinsim_kernels twinsim_device_check)
  target_compile_definitions(test_${area} PRIVATE TWINSIM_HAVE_CUDA=1)
  include(${area_dir}/nccl_mpi.cmake)
else()
  set(AREA_LIBS twinsim_device_check)
endif()
