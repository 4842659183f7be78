# Test programs and the command line's glue compile at -O1 in Release builds; the libraries
# they call (sim/, exec/, kernels/, ...) keep -O3. These sources are mostly GoogleTest and
# CLI11 templates, whose -O3 code generation took about 40% of a cold CI build (measured
# 2026-12-06 on the 2-core CI kind: app/cmd_simulate.cpp 12.5 s at -O3, 7.9 s at -O1; a
# test file 13.0 s -> 7.6 s). Without -ffast-math the level does not change any result.
function(twinsim_glue_optimization target)
  target_compile_options(${target} PRIVATE $<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CXX>>:-O1>)
endfunction()
