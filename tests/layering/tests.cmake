# The build's include-rule check (cmake/CheckIncludes.cmake) on a fixture that breaks the
# rules: it must fail naming the file, the line and the rule, and pass when the rule allows it.
add_test(NAME build.include_rules_refuse_a_wrong_include
         COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_LIST_DIR}/fixture -DFOLDER=sim -DALLOWED=sim,models
                 -P ${PROJECT_SOURCE_DIR}/cmake/CheckIncludes.cmake)
set_tests_properties(build.include_rules_refuse_a_wrong_include PROPERTIES
  PASS_REGULAR_EXPRESSION "sim/reaches_exec.cpp:4: #include \"exec/runtime/communicator.hpp\" \\(sim/ may include only sim,models\\)")
add_test(NAME build.include_rules_pass_what_they_allow
         COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_LIST_DIR}/fixture -DFOLDER=sim
                 -DALLOWED=sim,models,exec,scenario -P ${PROJECT_SOURCE_DIR}/cmake/CheckIncludes.cmake)
add_test(NAME build.include_rules_refuse_a_denied_header
         COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_LIST_DIR}/fixture -DFOLDER=sim
                 -DALLOWED=sim,models,exec,scenario -DDENY=scenario/load.hpp,yaml-cpp/yaml.h
                 -P ${PROJECT_SOURCE_DIR}/cmake/CheckIncludes.cmake)
set_tests_properties(build.include_rules_refuse_a_denied_header PROPERTIES
  PASS_REGULAR_EXPRESSION "sim/reads_yaml.cpp:4: #include \"scenario/load.hpp\" \\(sim/ may not include scenario/load.hpp\\)")
# A denied subfolder (an entry ending in "/"): exec/model may use kernels/common but not
# kernels/cpu/, the CPU backend's own kernels (issue #52).
add_test(NAME build.include_rules_refuse_a_denied_folder
         COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_LIST_DIR}/fixture -DFOLDER=exec/model
                 -DALLOWED=exec,kernels -DDENY=kernels/cpu/,exec/cpu/ -P ${PROJECT_SOURCE_DIR}/cmake/CheckIncludes.cmake)
set_tests_properties(build.include_rules_refuse_a_denied_folder PROPERTIES
  PASS_REGULAR_EXPRESSION "exec/model/names_a_backend.cpp:4: #include \"kernels/cpu/gemm.hpp\" \\(exec/model/ may not include kernels/cpu/gemm.hpp\\)")
add_test(NAME build.include_rules_pass_another_folder
         COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_LIST_DIR}/fixture -DFOLDER=exec/model
                 -DALLOWED=exec,kernels -DDENY=kernels/cuda/ -P ${PROJECT_SOURCE_DIR}/cmake/CheckIncludes.cmake)
