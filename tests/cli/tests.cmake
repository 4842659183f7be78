# End-to-end checks of the twinsim command line (tests/cli/check_cli.py).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli.contract
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_cli.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR}/scenarios)
set_tests_properties(cli.contract PROPERTIES TIMEOUT 300)

# A search split over MPI ranks gives the single-process answer.
add_test(NAME cli.search_mpi
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_search_mpi.py $<TARGET_FILE:twinsim>
                 ${MPIEXEC_EXECUTABLE})
set_tests_properties(cli.search_mpi PROPERTIES TIMEOUT 300)

# A full-fidelity step split over 2 and 4 MPI processes gives the single-process report
# and trace, byte for byte.
add_test(NAME cli.simulate_mpi
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_simulate_mpi.py $<TARGET_FILE:twinsim>
                 ${MPIEXEC_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scenarios)
set_tests_properties(cli.simulate_mpi PROPERTIES TIMEOUT 600)

# The hostile command-line table (issue 23): exit status and message of each refusal, each
# within 10 s and 2 GiB.
add_test(NAME cli.hostile
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_hostile_cli.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR}/scenarios)
set_tests_properties(cli.hostile PROPERTIES TIMEOUT 300)

# A seeded fuzzer over the command lines (tests/cli/fuzz_flags.py): 300 mutated invocations,
# each ending within 10 s and 2 GiB with twinsim's or CLI11's exit status and a message.
add_test(NAME cli.fuzz_flags
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/fuzz_flags.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR}/scenarios)
set_tests_properties(cli.fuzz_flags PROPERTIES TIMEOUT 600)

# Every JSON report carries schema_version, a newer one is refused by compare, and the
# default scenario's report is unchanged since versioning began (golden/default_simulate.json;
# rewrite it with check_report_schema.py TWINSIM SOURCE_DIR --update when a change is meant).
add_test(NAME cli.report_schema
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_report_schema.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR})

# Two MPI processes given different options, --set or files stop before any work with a
# message naming the first difference (issue 58); the same inputs still run.
add_test(NAME cli.mpi_inputs
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_mpi_inputs.py $<TARGET_FILE:twinsim>
                 ${MPIEXEC_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scenarios)
set_tests_properties(cli.mpi_inputs PROPERTIES TIMEOUT 600 LABELS mpi)
# The compare flow's defaults from outside the repository (issue 57): cluster: host is the
# calibrated host file, another CPU's calibration is warned about, validate's suites are
# found and zero cases refused, --version.
add_test(NAME cli.host_calibration
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_host_calibration.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.host_calibration PROPERTIES TIMEOUT 300)
# validate from a temporary directory outside the repository runs one real case (issue 57)
add_test(NAME cli.validate_elsewhere
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_validate_elsewhere.py $<TARGET_FILE:twinsim>)
set_tests_properties(cli.validate_elsewhere PROPERTIES TIMEOUT 300)
# twinsim hands run, calibrate, validate and checkpoint to twinsim-executor and links no
# executor code (app/hand_over.hpp; issue 57)
add_test(NAME cli.executor_hand_over
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_executor_hand_over.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.executor_hand_over PROPERTIES TIMEOUT 300)
# Time to train under failures (sim/goodput): capacity, simulate and search with goodput.
add_test(NAME cli.goodput
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_goodput_cli.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR}/scenarios)
set_tests_properties(cli.goodput PROPERTIES TIMEOUT 300)
# A 2-rank decode trace's collectives split into arrival skew and MPI transport, and each
# rank's compute a pass and a slow rank's side, core or memory (scripts/decode_sync.py,
# issue 61), on hand-made traces.
add_test(NAME cli.decode_sync
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_decode_sync.py ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.decode_sync PROPERTIES TIMEOUT 60)
# The MoE expert probe's importer (scripts/moe_probe_to_table.py) prices a full-shape probe
# folder as `simulate --json` does, and the probe's kernels go to their ops (issue #53).
add_test(NAME cli.moe_probe_table
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_moe_expert_probe.py table
                 $<TARGET_FILE:twinsim> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.moe_probe_table PROPERTIES TIMEOUT 120)
# The probe itself (scripts/gpu_moe_expert_probe.py --dry-run, on the CPU at tiny sizes): its
# output's schema, rows and error against fp32. Skipped where no interpreter has torch
# ($TWINSIM_TORCH_PYTHON names one that has).
add_test(NAME cli.moe_expert_probe_dry_run
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_moe_expert_probe.py probe
                 $<TARGET_FILE:twinsim> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.moe_expert_probe_dry_run PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
# The bias-epilogue probe's importer (scripts/bias_epilogue_to_table.py, issue #53) on a
# hand-made probe CSV: fc1's epilogue cost a layer-micro-batch and its share of gpt-oss's miss.
add_test(NAME cli.bias_epilogue_table
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_bias_epilogue_table.py ${PROJECT_SOURCE_DIR}
                 $<TARGET_FILE:twinsim>)
set_tests_properties(cli.bias_epilogue_table PROPERTIES TIMEOUT 120)
