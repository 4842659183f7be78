set(AREA_LIBS twinsim_scenario)
