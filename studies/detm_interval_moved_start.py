"""Issue 17 (exploratory, not declared): the DETM interval bootstrap's first fixed-pi start moved
to pi0 along its path's tangent.

Each resample of DETM's bootstrap-calibrated interval (``bootstrap._interval_statistic``) is
refitted and then profiled at the world's pi0 = pi-hat from two starts: the resample's own
maximum ``(theta_b, pi_b)`` and the original fit's ``theta``. On the bench's SAR data those two
fixed-pi solves took 14-18 Newton iterations each, starting 50-1,400 decrement units below
their maxima (session 66). The candidate replaces the first start by ``theta_b`` moved to pi0
along the tangent of its path, ``theta_b + (pi0 - pi_b) (-H)^{-1} d^2 l / d theta d pi`` (as
``PiProfiler._moved`` moves the profile's warm starts; ``theta_b`` itself where ``H`` is not
negative definite), to see whether the solves get cheaper and what the statistics do.

    python studies/detm_interval_moved_start.py run /tmp/shipped.pkl
    python studies/detm_interval_moved_start.py run /tmp/moved.pkl --moved
    python studies/detm_interval_moved_start.py compare /tmp/shipped.pkl /tmp/moved.pkl

Worlds: those of ``detm_bootstrap_setm_grid.py`` (n = m = 1000, p = 15, the default DETM fit;
``--designs`` picks among its ``DESIGNS``, ``--reps`` seeds each), and per world the 199 draws
``(R*_b, pi-hat_b)`` of ``bootstrap.interval_replicate`` (``default_rng(1)``, Silverman's h) with
their CPU seconds.
"""

from __future__ import annotations

import os
import pickle
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from detm_bootstrap_setm_grid import DESIGNS, parser, world  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.models.detm import _el, _starts  # noqa: E402
from puinfer.models.detm import bootstrap as boot  # noqa: E402
from puinfer.models.detm import model as detm_model  # noqa: E402


def moved_statistic(fit, names, Xs, Xt, pi0):
    """``bootstrap._interval_statistic`` with its first fixed-pi start (the resample's maximum)
    moved to ``pi0`` along its path's tangent."""
    real_fit, real_solve = detm_model.fit_data, _starts.fit_fixed_pi
    state = {"pi": np.nan, "calls": 0}

    def fit_data(*args, **kwargs):
        out = real_fit(*args, **kwargs)
        state["pi"] = float(out[0].pi)
        return out

    def fit_fixed_pi(data, restricted, pi, theta0, c, maxiter, tol):
        state["calls"] += 1
        if state["calls"] == 1 and np.isfinite(state["pi"]):
            q = state["pi"]
            out = _el.profile_log_el(theta0, q, data.Z, data.y, c, order=2, X1=data.X1)
            if out[1] is not None:
                hpt = _el.pi_cross(theta0, q, data.Z[data.n:], data.X1[data.n:])
                try:
                    cf = np.linalg.cholesky(-out[2])
                    step = np.linalg.solve(cf.T, np.linalg.solve(cf, hpt))
                    moved = theta0 + (pi - q) * step
                    if np.all(np.isfinite(moved)):
                        theta0 = moved
                except np.linalg.LinAlgError:
                    pass
        return real_solve(data, restricted, pi, theta0, c, maxiter, tol)

    detm_model.fit_data, _starts.fit_fixed_pi = fit_data, fit_fixed_pi
    try:
        return _shipped(fit, names, Xs, Xt, pi0)
    finally:
        detm_model.fit_data, _starts.fit_fixed_pi = real_fit, real_solve


_shipped = boot._interval_statistic


def run(out: str, reps: int, designs, moved: bool) -> None:
    warnings.simplefilter("ignore")
    boot._interval_statistic = moved_statistic if moved else _shipped
    rows = []
    for k in designs:
        design, pi = DESIGNS[k]
        for r in range(reps):
            seed = 58_000_000 + 100_000 * k + r
            d = world(design, pi, seed)
            h = boot.bandwidth(d.model.data, "silverman")
            t = time.process_time()
            draws = boot.interval_replicate(d, 199, np.random.default_rng(1), h)
            cpu = time.process_time() - t
            rows.append(dict(design=design, pi=pi, seed=seed, pi_hat=float(d.pi), draws=draws,
                             cpu=cpu))
            print(design, pi, seed, f"cpu {cpu:.2f}", flush=True)
    with open(out, "wb") as fh:
        pickle.dump(dict(rows=rows, tree=pu.__file__, moved=moved), fh)


def compare(old: str, new: str) -> None:
    a, b = (pickle.load(open(f, "rb"))["rows"] for f in (old, new))
    table = []
    for x, y in zip(a, b, strict=True):
        assert x["seed"] == y["seed"]
        u, v = x["draws"][:, 0], y["draws"][:, 0]
        both = np.isfinite(u) & np.isfinite(v)
        d = (v - u)[both]
        table.append({"design": x["design"], "pi": x["pi"], "seed": x["seed"],
                      "R* lower": int((d < -1e-6).sum()), "R* higher": int((d > 1e-6).sum()),
                      "max |diff|": float(np.abs(d).max(initial=0.0)),
                      "95% quantile old/new": f"{np.nanquantile(u, 0.95):.3f}/"
                                              f"{np.nanquantile(v, 0.95):.3f}",
                      "CPU s old/new": f"{x['cpu']:.2f}/{y['cpu']:.2f}"})
    t = pd.DataFrame(table)
    print(t.to_markdown(index=False))
    cu, cv = sum(x["cpu"] for x in a), sum(y["cpu"] for y in b)
    print(f"\nCPU s old / new: {cu:.1f} / {cv:.1f} ({cv / cu:.3f}x); statistics lower / higher "
          f"by more than 1e-6: {t['R* lower'].sum()} / {t['R* higher'].sum()} of {199 * len(t)}")


def main():
    ap, r = parser(__doc__)
    r.add_argument("--designs", type=int, nargs="+", default=[0, 1, 2])
    r.add_argument("--moved", action="store_true")
    args = ap.parse_args()
    if args.cmd == "run":
        run(args.out, args.reps, args.designs, args.moved)
    else:
        compare(args.old, args.new)


if __name__ == "__main__":
    main()
