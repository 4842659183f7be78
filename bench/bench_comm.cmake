set(BENCH_LIBS twinsim_exec)
