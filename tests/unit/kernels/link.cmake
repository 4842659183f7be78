set(AREA_LIBS twinsim_kernels)
