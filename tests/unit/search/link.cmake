# the search lives in twinsim_sim; no executor or kernels needed
set(AREA_LIBS twinsim_sim twinsim_scenario twinsim_hardware twinsim_models)
