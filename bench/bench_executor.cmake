set(BENCH_LIBS twinsim_exec twinsim_scenario)
