"""Shared pieces of the CalEM audit (session 77 helper)."""

import warnings

import numpy as np
from scipy.special import expit

import puinfer as pu
from puinfer.simulate.calibration import simulate_calem

CALS = {
    "logistic": dict(calibrator="logistic"),
    "beta": dict(calibrator="beta"),
    "spline": dict(calibrator="spline"),
    "spline_lam1": dict(calibrator="spline", lam=1.0),
}


def gen_logistic(nc, nt, a, b, c, rng, sd=1.5):
    """Scores with logit(s) ~ N(0, sd^2) in both groups; clean P(Y=1|s) = expit(a + b t) on
    control rows, biased P(Z=1|s) = expit(c + b t) on treated rows (c >= a: Assumption 1)."""
    t = rng.normal(0.0, sd, nc + nt)
    tr = np.r_[np.zeros(nc, int), np.ones(nt, int)]
    p = np.where(tr == 1, expit(c + b * t), expit(a + b * t))
    lab = (rng.random(nc + nt) < p).astype(float)
    return expit(t), lab, tr


def gen_paper(nc, nt, rng, miscal="g1", transition="h1", event_prob=0.5, bias=True):
    n = nc + nt
    d = simulate_calem(
        n, event_prob=event_prob, miscalibration=miscal, transition=transition, clean_share=nc / n, rng=rng
    )
    lab = d["label"].to_numpy() if bias else d["y"].to_numpy()  # no bias: clean y everywhere
    return d["score"].to_numpy(), lab, d["treated"].to_numpy()


def fit(s, lab, tr, cal):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = pu.CalEM(s, lab, tr, **CALS[cal]).fit()
        t = r.test_bias()
        _ = t.pvalue
    return r, t, [f"{x.category.__name__}: {str(x.message)[:60]}" for x in w]
