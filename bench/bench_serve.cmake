set(BENCH_LIBS twinsim_sim)
