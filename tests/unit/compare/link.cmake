set(AREA_LIBS twinsim_compare)
