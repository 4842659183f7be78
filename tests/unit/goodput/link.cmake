set(AREA_LIBS twinsim_sim twinsim_scenario)  # tests build scenarios from YAML text
