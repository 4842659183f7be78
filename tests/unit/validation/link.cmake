set(AREA_LIBS twinsim_trust twinsim_sim twinsim_scenario)  # tests build scenarios from YAML text
