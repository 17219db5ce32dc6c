"""A family-free test of no label bias: the stratified CMH statistic that CalEM already computes for
its Assumption-1 check (puinfer.models.calem.model.assumption1_test), read one-sided upwards
(treated positives MORE often than control at equal scores = bias). Same data sets (seeds) as
sim_shift.py, sim_power.py and sim_size.py (logit and g2 worlds)."""

import numpy as np
import pandas as pd
from common import gen_logistic, gen_paper
from scipy import stats

from puinfer.models.calem.model import assumption1_test, score_histogram
from puinfer.simulate.calibration import simulate_calem


def cmh_p(s, lab, tr):
    tr = tr.astype(bool)
    z, _ = assumption1_test(score_histogram(s[~tr], lab[~tr]), score_histogram(s[tr], lab[tr]))
    return stats.norm.sf(z)


rows = []
# shift (no bias, different score distributions), seeds of sim_shift.py
for world in ["g1", "g2"]:
    for nc, nt in [(500, 5000), (1000, 20000)]:
        for rep in range(400):
            rng = np.random.default_rng(np.random.SeedSequence([80, nc, nt, rep, world == "g1"]))
            dc = simulate_calem(nc * 2, event_prob=0.5, miscalibration=world, clean_share=0.5, rng=rng)
            dt = simulate_calem(nt * 2, event_prob=0.2, miscalibration=world, clean_share=0.5, rng=rng)
            dc, dt = dc.iloc[:nc], dt.iloc[:nt]
            s = np.r_[dc.score, dt.score]
            lab = np.r_[dc.y, dt.y]
            tr = np.r_[np.zeros(nc, int), np.ones(nt, int)]
            rows.append(dict(study="shift", world=world, nc=nc, nt=nt, rep=rep, p=cmh_p(s, lab, tr)))
# size, seeds of sim_size.py (seed 77)
sizes = [(200, 2000), (200, 20000), (1000, 2000), (1000, 20000)]
for world in ["logit", "g2"]:
    for ci, (nc, nt) in enumerate(sizes):
        for rep in range(1000):
            rng = np.random.default_rng(np.random.SeedSequence([77, ci, rep]))
            if world == "logit":
                s, lab, tr = gen_logistic(nc, nt, -1.0, 1.0, -1.0, rng)
            else:
                s, lab, tr = gen_paper(nc, nt, rng, miscal=world, bias=False)
            rows.append(dict(study="size", world=world, nc=nc, nt=nt, rep=rep, p=cmh_p(s, lab, tr)))
# power, seeds of sim_power.py (seed 79)
for di, (mis, trn) in enumerate([("g1", "h1"), ("g1", "h2"), ("g2", "h1"), ("g2", "h2")]):
    for ci, (nc, nt) in enumerate([(200, 2000), (500, 5000)]):
        for rep in range(300):
            rng = np.random.default_rng(np.random.SeedSequence([79, di, ci, rep]))
            s, lab, tr = gen_paper(nc, nt, rng, miscal=mis, transition=trn, bias=True)
            rows.append(dict(study="power", world=mis + trn, nc=nc, nt=nt, rep=rep, p=cmh_p(s, lab, tr)))
d = pd.DataFrame(rows)
d.to_csv("results/cmh.csv", index=False)


def rate(x):
    x = np.asarray(x, float)
    n = x.size
    p = x.mean()
    return f"{100 * p:.1f} ({100 * np.sqrt(p * (1 - p) / n):.1f})"


t = (
    d.groupby(["study", "world", "nc", "nt"], sort=False)
    .p.agg(n="size", rej5=lambda p: rate(p < 0.05), rej10=lambda p: rate(p < 0.10))
    .reset_index()
)
print(t.to_string(index=False))
t.to_csv("results/cmh_table.csv", index=False)
