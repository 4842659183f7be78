# bench_cuda_kernels measures the CUDA kernels when the CUDA backend is built; without it
# the program only reports that it was built without CUDA.
if(TWINSIM_HAVE_CUDA)
  set(BENCH_LIBS twinsim_kernels_cuda twinsim_scenario twinsim_device_check)
  target_compile_definitions(${name} PRIVATE TWINSIM_HAVE_CUDA=1)
else()
  set(BENCH_LIBS twinsim_device_check)
endif()
