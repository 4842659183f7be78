# Executor faults (issue 9) and determinism, end to end through `mpirun -np 2 twinsim run`
# on tiny-gpt (tests/exec_faults/faults.py). Every job must end within 30 s: a hang fails.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
foreach(case rank_raises rank_dies rank_stalls plan_too_big nan_loss allocation_failure device_cuda checkpoint_resume determinism)
  add_test(NAME exec_faults.${case}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/faults.py ${case} ${MPIEXEC_EXECUTABLE}
                   $<TARGET_FILE:twinsim> ${PROJECT_SOURCE_DIR}/scenarios/exec/tiny-gpt-dp2.yaml
                   ${CMAKE_CURRENT_BINARY_DIR}/exec_faults)
  set_tests_properties(exec_faults.${case} PROPERTIES TIMEOUT 60 LABELS "mpi;faults")
  if(case STREQUAL checkpoint_resume OR case STREQUAL rank_stalls)  # several jobs in a row
    set_tests_properties(exec_faults.${case} PROPERTIES TIMEOUT 120)
  endif()
endforeach()
