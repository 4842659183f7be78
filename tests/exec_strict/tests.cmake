# The executor's tests again on the strict-device backend (exec/cpu/strict_backend.hpp:
# device memory the host cannot touch, kernels on a stream), so that a host access or a
# missing synchronize that creeps into exec/model, exec/train or exec/runtime fails here
# instead of on a GPU. Every test runs there; a new test must pass on both backends.
add_test(NAME exec_strict.exec_model COMMAND test_exec_model)
add_test(NAME exec_strict.runtime COMMAND test_runtime)
set_tests_properties(exec_strict.exec_model exec_strict.runtime PROPERTIES
                     ENVIRONMENT "TWINSIM_BACKEND=cpu-strict;OMP_NUM_THREADS=1" TIMEOUT 900 LABELS "strict")

# `twinsim run` end to end on the strict backend, losses (or generated tokens) equal to the
# CPU backend's bit for bit: the GPU validation's tiny cases (scripts/gpu_validate.sh) and
# multi-rank training and serving plans, whose
# collectives on device buffers go through host staging (exec/cpu/staging_communicator.hpp).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
foreach(case "validation/gpu/tiny-gpt-fp32|1" "validation/gpu/tiny-llama-bf16|1" "exec/tiny-gpt-dp2|2"
             "exec/tiny-llama-tp2-pp2|4" "exec/tiny-llama-infer-tp2|2" "exec/tiny-moe-infer-dp2-ep2|2")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 scenario)
  list(GET parts 1 ranks)
  get_filename_component(name ${scenario} NAME)
  add_test(NAME exec_strict.run.${name}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_parity.py $<TARGET_FILE:twinsim>
                   ${PROJECT_SOURCE_DIR}/scenarios/${scenario}.yaml ${ranks} ${MPIEXEC_EXECUTABLE}
                   ${CMAKE_CURRENT_BINARY_DIR}/exec_strict/${name})
  set_tests_properties(exec_strict.run.${name} PROPERTIES TIMEOUT 300 LABELS "strict;mpi")
endforeach()

# The MPI parity harness (tests/exec_mpi/parity_mpi.cpp) on the strict backend: each plan's
# losses and parameters against the single-rank run, every collective staged from device
# buffers, every host read through a copy.
foreach(case "dp2|2|dp=2" "tp2_sp|2|tp=2 sp=1" "pp2_1f1b|2|pp=2 schedule=1f1b" "zero3_dp2|2|dp=2 zero=3"
             "moe_dp2_ep2|2|dp=2 ep=2 model=moe")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 ranks)
  list(GET parts 2 plan)
  separate_arguments(plan_args UNIX_COMMAND "${plan}")
  add_test(NAME exec_strict.parity.${name}
           COMMAND ${MPIEXEC_EXECUTABLE} -np ${ranks} --oversubscribe -x TWINSIM_BACKEND=cpu-strict
                   $<TARGET_FILE:exec_parity_mpi> ${plan_args})
  set_tests_properties(exec_strict.parity.${name} PROPERTIES
                       ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMP_NUM_THREADS=1"
                       TIMEOUT 300 LABELS "strict;mpi")
endforeach()

# ZeRO-Offload: the update runs on the host's states through Backend::host_kernels while the
# model runs on the device; losses equal bit for bit on both backends.
add_test(NAME exec_strict.run.tiny-gpt-dp2-zero1-offload
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_parity.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR}/scenarios/exec/tiny-gpt-dp2.yaml 2 ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_CURRENT_BINARY_DIR}/exec_strict/tiny-gpt-dp2-zero1-offload plan.zero=1
                 plan.offload_optimizer=true)
set_tests_properties(exec_strict.run.tiny-gpt-dp2-zero1-offload PROPERTIES TIMEOUT 300 LABELS "strict;mpi")
