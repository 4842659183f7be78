set(AREA_LIBS twinsim_trust twinsim_sim twinsim_scenario)
