set(AREA_LIBS twinsim_sim twinsim_scenario twinsim_trust)  # tests build scenarios from YAML text; EngineBench reads the validation cases
