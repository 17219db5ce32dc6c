"""profile(group).conf_int() for a subset of groups equals conf_int()'s rows (several groups)."""
import warnings

import numpy as np

import puinfer as pu
from puinfer.simulate.urc import simulate_urc

warnings.simplefilter("ignore")
sim = simulate_urc(n_lab=36, n_field=200, lab_base_rates=0.3, field_base_rate=[0.3] * 30, rng=[8701, 3], lab_design="stratified")
mod = pu.URC(sim.lab_pred, sim.lab_y, n_bins=4)
ra = mod.fit(sim.field_pred, groups=sim.field_group); ci = ra.conf_int()
rb = mod.fit(sim.field_pred, groups=sim.field_group)
sub = [0, 7, 19]
own = np.array([[rb.profile(g).conf_int(0.05)[k] for k in ("lower", "upper")] for g in sub])
print("max |diff| subset vs conf_int():", np.abs(own - ci.to_numpy()[sub]).max())
