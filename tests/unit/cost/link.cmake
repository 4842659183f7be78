# the cost model lives in twinsim_sim; nothing else is needed
set(AREA_LIBS twinsim_sim)
