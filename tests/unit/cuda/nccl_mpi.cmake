# The NCCL check across ranks: 2 MPI ranks, one GPU each. ctest reports it Skipped
# (exit code 77) when fewer GPUs than ranks are visible, e.g. on a machine with none.
add_executable(test_cuda_nccl_mpi ${area_dir}/nccl_mpi_check.cc)
target_link_libraries(test_cuda_nccl_mpi PRIVATE twinsim_exec_cuda)
add_test(NAME cuda.nccl_mpi.np2
         COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe
                 $<TARGET_FILE:test_cuda_nccl_mpi>)
set_tests_properties(cuda.nccl_mpi.np2 PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "cuda;mpi"
                     ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
