set(BENCH_LIBS twinsim_calibrate)
