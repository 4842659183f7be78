set(AREA_LIBS twinsim_io)
