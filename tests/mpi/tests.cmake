# MPI tests: small programs run under mpirun (see tests/mpi/*.cpp). Each checks its
# results on every rank and exits non-zero on all ranks if any rank failed.
set(TWINSIM_MPI_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")

foreach(prog collectives_mpi process_groups_mpi)
  add_executable(${prog} ${CMAKE_CURRENT_LIST_DIR}/${prog}.cpp)
  target_link_libraries(${prog} PRIVATE twinsim_exec)
endforeach()

add_test(NAME mpi.collectives.np4
         COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 --oversubscribe $<TARGET_FILE:collectives_mpi>)
add_test(NAME mpi.collectives.np3
         COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 --oversubscribe $<TARGET_FILE:collectives_mpi>)
# two ranks: a 16-bit sum is then exactly one rounding, checked bit for bit
add_test(NAME mpi.collectives.np2
         COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe $<TARGET_FILE:collectives_mpi>)
# started without mpirun: Open MPI's singleton mode, one rank
add_test(NAME mpi.collectives.singleton COMMAND $<TARGET_FILE:collectives_mpi>)
add_test(NAME mpi.process_groups.np8
         COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 8 --oversubscribe $<TARGET_FILE:process_groups_mpi>)
set_tests_properties(mpi.collectives.np4 mpi.collectives.np3 mpi.collectives.np2 mpi.collectives.singleton mpi.process_groups.np8
                     PROPERTIES ENVIRONMENT "${TWINSIM_MPI_ENV}" TIMEOUT 60 LABELS mpi)
