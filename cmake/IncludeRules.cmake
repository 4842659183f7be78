# The architecture's include rules, checked by the build (issue #18 item 6): each library's
# sources may include headers only from the folders it may depend on, so a wrong include
# (sim/ reaching into exec/, or exec/ into sim/) fails the build, naming the file and line.
# Every header lives under the one source root, so include paths cannot express this; a
# scan of the folder's #include "folder/..." lines before the library compiles does.
#
# twinsim_include_rules(TARGET FOLDER ALLOWED... [DENY HEADERS...]): FOLDER's own name need
# not be listed; DENY names single headers of an allowed folder that are still off limits,
# or, ending in "/", a whole subfolder of one. FOLDER may be a subfolder ("exec/model").
function(twinsim_include_rules target folder)
  cmake_parse_arguments(RULE "" "" "DENY" ${ARGN})
  set(allowed ${folder} ${RULE_UNPARSED_ARGUMENTS})
  string(REPLACE ";" "," allowed "${allowed}")
  string(REPLACE ";" "," denied "${RULE_DENY}")
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/${folder}/*.cpp"
       "${PROJECT_SOURCE_DIR}/${folder}/*.hpp" "${PROJECT_SOURCE_DIR}/${folder}/*.cu" "${PROJECT_SOURCE_DIR}/${folder}/*.cuh")
  set(stamp "${PROJECT_BINARY_DIR}/include_rules/${folder}.ok")
  add_custom_command(OUTPUT "${stamp}"
    COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -DFOLDER=${folder} -DALLOWED=${allowed} -DDENY=${denied}
            -DSTAMP=${stamp}
            -P ${PROJECT_SOURCE_DIR}/cmake/CheckIncludes.cmake
    DEPENDS ${sources} ${PROJECT_SOURCE_DIR}/cmake/CheckIncludes.cmake
    COMMENT "Checking what ${folder}/ includes")
  string(MAKE_C_IDENTIFIER "${folder}" folder_id)
  add_custom_target(${target}_include_rules_${folder_id} DEPENDS "${stamp}")
  add_dependencies(${target} ${target}_include_rules_${folder_id})
endfunction()

# The layering (docs/DESIGN.md): models at the bottom; sim and exec side by side, neither
# including the other; compare reads JSON only, so it shares no code with either.
twinsim_include_rules(twinsim_models models)
twinsim_include_rules(twinsim_hardware hardware models)
twinsim_include_rules(twinsim_io io)
twinsim_include_rules(twinsim_kernels kernels)
twinsim_include_rules(twinsim_scenario scenario models hardware)
# sim builds scenarios through scenario/build.hpp only: the YAML loader and the catalog
# files are the callers' (the command line, Python), so sim links twinsim_scenario_core
twinsim_include_rules(twinsim_sim sim scenario models hardware io
                      DENY scenario/load.hpp scenario/read_sections.hpp scenario/mapping_reader.hpp
                           scenario/yaml_merge.hpp scenario/hf_config.hpp yaml-cpp/yaml.h)
twinsim_include_rules(twinsim_exec exec scenario models hardware io kernels)
# The executor's model, training loop and runtime run over a compute backend
# (exec/runtime/backend.hpp) and name none: the kernels, memory and devices of one
# (kernels/cpu, kernels/cuda, exec/cpu, exec/cuda) are the backends' own (issue #52).
set(TWINSIM_CONCRETE_BACKENDS kernels/cpu/ kernels/cuda/ exec/cpu/ exec/cuda/ cuda_runtime.h cuda_runtime_api.h
    cublas_v2.h cublasLt.h nccl.h)
twinsim_include_rules(twinsim_exec exec/model exec kernels models scenario hardware io DENY ${TWINSIM_CONCRETE_BACKENDS})
twinsim_include_rules(twinsim_exec exec/train exec kernels models scenario hardware io DENY ${TWINSIM_CONCRETE_BACKENDS})
twinsim_include_rules(twinsim_exec exec/runtime exec kernels models scenario hardware io DENY ${TWINSIM_CONCRETE_BACKENDS})
twinsim_include_rules(twinsim_compare compare models io)
# trust runs the validation cases: it loads scenario files and predicts them
twinsim_include_rules(twinsim_trust trust sim scenario models hardware io)
twinsim_include_rules(twinsim_calibrate calibrate exec models hardware io kernels)
