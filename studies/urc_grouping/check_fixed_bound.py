"""Package defect: likelihood='fixed' conf_int() raises ValueError when a group's class-1 rate is
estimated at 0 (class 0's rate computed as 1.0000000000000002). mc.py rep 28, lab 36, n_bins=4, 300 groups."""
import warnings

import numpy as np

import puinfer as pu
from puinfer.simulate.urc import simulate_urc

warnings.simplefilter("ignore")
sim = simulate_urc(n_lab=36, n_field=200, lab_base_rates=0.3, field_base_rate=[0.3] * 300, rng=[8701, 28], lab_design="stratified")
mod = pu.URC(sim.lab_pred, sim.lab_y, n_bins=4)
rf = mod.fit(sim.field_pred, groups=sim.field_group, likelihood="fixed")
P = rf._record.estimate.P
bad = np.flatnonzero((P > 1) | (P < 0))
print("entries of P outside [0, 1]:", [(int(i // P.shape[1]), int(i % P.shape[1]), repr(P.flat[i])) for i in bad])
try:
    rf.conf_int()
except Exception as e:
    print(type(e).__name__, ":", e)
