set(AREA_LIBS twinsim_exec)
