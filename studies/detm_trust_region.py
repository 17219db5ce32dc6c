"""Issue 17: would a trust-region Newton method need fewer iterations than the line-search one?

Most of the bootstrap SCAR test's cost is Newton iterations of the refits' pi-free runs, and
most of those iterations are far from any maximum: of the DETM runs' iterations two thirds
have a Newton decrement above 1 and 28% take a shortened step (session 58, 40
resamples). :func:`puinfer.base.optimize.newton_maximize` globalises with a modified Newton
direction (absolute eigenvalues where the Hessian is not negative definite) and Armijo
backtracking. This study runs, from each start of the test's refits, that method and scipy's
``trust-exact`` (More and Sorensen's trust region with the same exact Hessian) without the
search's merges, and records per run the Hessian and value evaluations, CPU seconds, and
where each ended: the same level (log-EL within 1e-6 relative; ``same_point``: and the
parameters within 1e-4 -- runs towards SETM's maximum at pi = 0 end at different points of its
tail), or one above the other. A measurement for a later redesign of the search, not a change: a run that
ends at another maximum changes the search, which needs its own study of misses.

    python studies/detm_trust_region.py --resamples 40 --out studies/results/detm_trust_region_s58.csv

Data: the bench's (``benchmarks/bench_detm.py``: Liu et al.'s SAR design, n = m = 1000,
p = 15, pi = 0.3, seed 1015) and the SCAR test's null world (its SETM fit, Silverman's h),
resamples from ``default_rng(0)`` as ``test_scar("bootstrap", rng=0)`` draws them. Starts:
those of the test's quick refit (SETM: the original SETM solution and SETM's grid; DETM: the
resample's SETM solution, the reduced grid of three, the original DETM fit).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import optimize  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.base.optimize import newton_maximize  # noqa: E402
from puinfer.models.detm import _starts  # noqa: E402
from puinfer.models.detm import bootstrap as boot  # noqa: E402
from puinfer.models.detm._data import prepare  # noqa: E402
from puinfer.models.detm.model import fit_data  # noqa: E402
from puinfer.simulate import sar_design  # noqa: E402


class Counted:
    """``fun(u, order)`` counting the evaluations: ``values`` the points whose per-row
    quantities were computed (a value, or derivatives at a point not valued before),
    ``hessians`` the points whose derivatives were computed. The trust region asks for the
    value, gradient and Hessian separately: each is computed once per point."""

    def __init__(self, fun):
        self.fun, self.values, self.hessians = fun, 0, 0
        self._vkey = self._vf = self._dkey = self._dout = None

    def value(self, u):
        key = np.asarray(u, dtype=float).tobytes()
        if key == self._dkey:
            return self._dout[0]
        if key != self._vkey:
            self.values += 1
            self._vkey, self._vf = key, self.fun(u, 0)
        return self._vf

    def derivs(self, u):
        key = np.asarray(u, dtype=float).tobytes()
        if key != self._dkey:
            if key != self._vkey:
                self.values += 1
            self.hessians += 1
            self._dkey, self._dout = key, self.fun(u, 2)
        return self._dout

    def __call__(self, u, order):
        return self.value(u) if order == 0 else self.derivs(u)


def newton(fun, v0, maxiter, tol):
    c = Counted(fun)
    t = time.process_time()
    try:
        u, f, _, _, info = newton_maximize(c, v0, maxiter=maxiter, tol=tol, method="Newton")
        ok = info.converged
    except ValueError:
        u, f, ok = v0, -np.inf, False
    return dict(f=f, u=u, ok=ok, hessians=c.hessians, values=c.values,
                cpu=time.process_time() - t)


def trust(fun, v0, maxiter, gtol):
    c = Counted(fun)

    def obj(u):
        f = c.value(u)
        return np.inf if not np.isfinite(f) else -f

    def jac(u):
        return -c.derivs(u)[1]

    def hess(u):
        return -c.derivs(u)[2]

    t = time.process_time()
    try:
        r = optimize.minimize(obj, v0, jac=jac, hess=hess, method="trust-exact",
                              options=dict(gtol=gtol, maxiter=maxiter))
        u, f, ok = r.x, -r.fun, bool(r.success)
    except (ValueError, np.linalg.LinAlgError):
        u, f, ok = v0, -np.inf, False
    return dict(f=f, u=u, ok=ok, hessians=c.hessians, values=c.values,
                cpu=time.process_time() - t)


def runs_of(dat, fit, setm_fit):
    """``(model, label, fun, v0)`` of the test's quick refit on ``dat``: SETM's starts
    (reduced parameters), then DETM's (the resample's SETM solution from SETM's own fit)."""
    c = fit.penalty_strength
    fun_r, _ = _starts.free_fun(dat, c, True)
    pick = _starts._setm_index(dat.p)
    bL = dat.logistic_slopes
    out = [("SETM", "given", fun_r, setm_fit.v[pick])]
    out += [("SETM", lab, fun_r, v[pick]) for lab, v in _starts.grid_starts(dat, True, bL)]
    s_b = fit_data(dat, True, c=c, label_rule="kl", maxiter=fit.maxiter, tol=fit.tol,
                   check_separation=False, probe=False, lean=True,
                   start_options=dict(setm_start=setm_fit.v, grid=True))[0]
    fun, _ = _starts.free_fun(dat, c, False)
    grid = [st for st in _starts.grid_starts(dat, False, bL) if "b1=0.3" in st[0]]
    out += [("DETM", "SETM solution", fun, s_b.v)]
    out += [("DETM", lab, fun, v) for lab, v in grid]
    out += [("DETM", "original DETM", fun, fit.v)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--resamples", type=int, default=40)
    ap.add_argument("--gtol", type=float, default=1e-6,
                    help="trust-exact's gradient tolerance (max-norm)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    df = sar_design(1000, 1000, 0.3, p=15, rng=np.random.default_rng(1015))
    X = df[[f"x{j}" for j in range(1, 16)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    d = pu.DETM(X[lab], X[~lab]).fit()
    data = d.model.data
    w = boot.world(data, d.null_fit)
    h = boot.bandwidth(data, "silverman")
    rng = np.random.default_rng(0)
    rows = []
    for b in range(args.resamples):
        Xs, Xt = boot.sample(data, w, rng, h)
        dat = prepare(Xs, Xt, names=data.names)
        for model, label, fun, v0 in runs_of(dat, d._fit, d.null_fit._fit):
            a = newton(fun, v0, d._fit.maxiter, d._fit.tol)
            t = trust(fun, v0, 10 * d._fit.maxiter, args.gtol)
            gap = t["f"] - a["f"]
            same = abs(gap) <= 1e-6 * max(1.0, abs(a["f"]))
            du = float(np.max(np.abs(np.asarray(t["u"]) - np.asarray(a["u"]))))
            rows.append(dict(resample=b, model=model, start=label, newton_ok=a["ok"],
                             trust_ok=t["ok"], f_newton=a["f"], f_trust=t["f"], gap=gap,
                             same=same, same_point=same and du <= 1e-4,
                             newton_hessians=a["hessians"],
                             newton_values=a["values"], trust_hessians=t["hessians"],
                             trust_values=t["values"], newton_cpu=a["cpu"],
                             trust_cpu=t["cpu"]))
    out = pd.DataFrame(rows)
    tie = 1e-6 * np.maximum(1.0, np.abs(out.f_newton))
    out["trust_higher"], out["trust_lower"] = out.gap > tie, out.gap < -tie
    if args.out:
        out.to_csv(args.out, index=False)
    tab = out.assign(start=out.start.str.replace(r"pi0=.*", "grid", regex=True)).groupby(
        ["model", "start"]).agg(
        runs=("same", "size"), same=("same", "sum"), same_point=("same_point", "sum"),
        trust_higher=("trust_higher", "sum"), trust_lower=("trust_lower", "sum"),
        newton_hessians=("newton_hessians", "sum"), trust_hessians=("trust_hessians", "sum"),
        newton_values=("newton_values", "sum"), trust_values=("trust_values", "sum"),
        newton_cpu=("newton_cpu", "sum"), trust_cpu=("trust_cpu", "sum"))
    tab = pd.concat([tab, tab.sum().to_frame(("all", "")).T])
    print(tab.round(3).to_markdown())
    print("\nruns not converged: newton", int((~out.newton_ok).sum()), "trust",
          int((~out.trust_ok).sum()))


if __name__ == "__main__":
    main()
