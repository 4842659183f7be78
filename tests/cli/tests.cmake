# End-to-end checks of the twinsim command line (tests/cli/check_cli.py).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli.contract
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_cli.py $<TARGET_FILE:twinsim>
                 ${PROJECT_SOURCE_DIR}/scenarios)
set_tests_properties(cli.contract PROPERTIES TIMEOUT 300)
