set(BENCH_LIBS twinsim_sim twinsim_scenario)
