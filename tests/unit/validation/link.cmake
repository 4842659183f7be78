set(AREA_LIBS twinsim_sim)
