"""A DETM maximum the default fit misses (session 58): SCAR design, pi = 0.5, n = m = 1000,
p = 15, seed 58200001.

A variant search (merges into mirror images of known maxima, ``studies/results/README_detm.md``,
session 58; not kept) reached a maximum 0.085 log-EL units above the default fit's. Its ``v``
and ``theta`` are in ``studies/results/detm_miss_s58.csv``; this script fits the data with the
package on the path and evaluates both points::

    python studies/detm_miss_s58.py

Session 58 (5e6a83b): fit pi-hat 0.50671, penalised log-EL -14779.1913; the stored point:
gradient 1.5e-13, Hessian negative definite, pi 0.50789, its fixed-pi profile run -14779.1062.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import puinfer as pu
from puinfer.models.detm import _starts
from puinfer.simulate import scar_design

warnings.simplefilter("ignore")
df = scar_design(1000, 1000, 0.5, p=15, rng=np.random.default_rng(58200001))
X = df[[f"x{j}" for j in range(1, 16)]].to_numpy()
lab = df.labeled.to_numpy() == 1
d = pu.DETM(X[lab], X[~lab]).fit()
data, fit = d.model.data, d._fit
stored = pd.read_csv(Path(__file__).resolve().parent / "results" / "detm_miss_s58.csv")
v, theta = stored.v.to_numpy(), stored.theta.to_numpy()
pi = _starts.pi_of_v(data, v)
fun, _ = _starts.free_fun(data, fit.penalty_strength, False)
f, g, H = fun(v, 2)
s = _starts.solve_fixed_pi(data, False, pi, theta, fit.penalty_strength, fit.maxiter, fit.tol)
print(f"default fit: pi-hat {d.pi:.5f}, penalised log-EL {fit.llf_penalized:.4f}")
print(f"stored point: pi {pi:.5f}, |gradient| {np.abs(g).max():.1e}, largest Hessian "
      f"eigenvalue {np.linalg.eigvalsh(H).max():.3g}, profile run there {s.f:.4f} "
      f"({s.f - fit.llf_penalized:+.4f} against the fit), labelled (KL rule): "
      f"{d._profiler.labelled(s.theta, pi) if getattr(d, '_profiler', None) else 'n/a'}")
