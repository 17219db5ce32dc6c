"""Session 79: how well does the quadratic model of the rise of ``R*`` to the label boundary
(``PiProfiler.boundary_rise``) screen the points beyond a limit that ``conf_int_pi`` evaluates
again (``_PiProfile.suspected_outside``)? The screen keeps a candidate where ``r + share * rise``
is below the cut-off (``BOUNDARY_RISE_SHARE``); this records, for every candidate the check
without a screen evaluates (the first ``SUSPECT_POINTS`` per side by ``r``), its ``r`` (R* of
the known maximum there, or of the point inside whose mirror image it is), the model's rise,
and the outcome: for a mirror image the R* of the labelled maximum on the label boundary
reached from it (the check's own screen, ``_mirror_inside``), for a known maximum the R* after
the evaluation from every start. A candidate is inside where that is below the cut-off.

Worlds (DETM under the KL rule, the 95% and 90% intervals of each fit): ``t2``
``pu_normal(300, 300, 0.3, [0, 0], [1, 0], [0, 2])`` seeds 0-69 (session 78's); ``s75``
``pu_normal(300, 300, 0.5, [0, 0, 0], [0.5, 0, 0], [1, 1, 0])`` seeds 78200000-78200047
(session 75's); ``sar`` ``sar_design(1000, 1000, 0.7, p=2)`` seeds 62000000-62000029.

    OPENBLAS_NUM_THREADS=1 python studies/detm_boundary_screen.py run t2 0 70
    OPENBLAS_NUM_THREADS=1 python studies/detm_boundary_screen.py run s75 78200000 78200048
    OPENBLAS_NUM_THREADS=1 python studies/detm_boundary_screen.py run sar 62000000 62000030
    python studies/detm_boundary_screen.py summarise
    OPENBLAS_NUM_THREADS=1 python studies/detm_boundary_screen.py compare t2 0 70   # etc.

``compare``: the intervals with the screen and without it on the same data sets.

Rows: ``studies/results/detm_boundary_screen.csv`` (one per candidate).
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import puinfer as pu
from puinfer.models.detm import _profile as P
from puinfer.simulate import pu_normal, sar_design

OUT = Path(__file__).parent / "results" / "detm_boundary_screen.csv"
ROWS: list = []  # the candidates of the data set being fitted


def data(world: str, seed: int):
    rng = np.random.default_rng(seed)
    if world == "t2":
        return pu_normal(300, 300, 0.3, [0, 0], [1, 0], [0, 2], rng=rng), "labeled ~ x1 + x2"
    if world == "s75":
        return (pu_normal(300, 300, 0.5, [0, 0, 0], [0.5, 0, 0], [1, 1, 0], rng=rng),
                "labeled ~ x1 + x2 + x3")
    return sar_design(1000, 1000, 0.7, p=2, rng=rng), "labeled ~ x1 + x2"


def instrument(set_attr=setattr):
    """Every candidate evaluated as without the screen; its r, rise and outcome recorded
    (``set_attr``: how the package's functions are replaced, e.g. pytest's
    ``monkeypatch.setattr``, which undoes it)."""
    rises, mirrors, evaluated = {}, {}, []
    rise0, inside0, call0, suspects0 = (P.PiProfiler.boundary_rise, P._PiProfile._mirror_inside,
                                        P.PiProfiler.__call__, P._PiProfile._suspects)

    def boundary_rise(self, pi, theta, H):
        rises[pi] = rise0(self, pi, theta, H)
        return rises[pi]

    def mirror_inside(self, q, r, theta, bar):
        b = self._loglik_at._on_boundary(q, [(self.llf_max - r / 2, theta)], None)
        mirrors[q] = (r, np.inf if b is None else 2 * (self.llf_max - b.f))
        return inside0(self, q, r, theta, bar)

    def call(self, pi):
        if self.known_mode:
            evaluated.append(pi)
        return call0(self, pi)

    def suspects(self, lim, direction, cutoff, skip=()):
        prof = self._loglik_at
        r_known = {q: 2 * (self.llf_max - max(s.f for s in sols))
                   for q, sols in prof._maxima.items() if sols}
        rises.clear(), mirrors.clear(), evaluated.clear()
        out = suspects0(self, lim, direction, cutoff, skip)
        bar = cutoff - P._R_NOISE * max(1.0, cutoff)
        for q, (r, act) in mirrors.items():
            ROWS.append(dict(kind="mirror", r=r, rise=rises.get(q, np.nan), outcome=act, bar=bar))
        for q in evaluated:
            if q not in mirrors and q in r_known and q in rises:
                ROWS.append(dict(kind="maximum", r=r_known[q], rise=rises[q],
                                 outcome=self.statistic(q), bar=bar))
        return out

    set_attr(P.PiProfiler, "boundary_rise", boundary_rise)
    set_attr(P._PiProfile, "_mirror_inside", mirror_inside)
    set_attr(P.PiProfiler, "__call__", call)
    set_attr(P._PiProfile, "_suspects", suspects)
    set_attr(P._PiProfile, "_plausible", staticmethod(lambda r, rise, bar: True))


def one(world: str, seed: int) -> pd.DataFrame:
    """The candidates of one data set (:func:`instrument` must be in place)."""
    ROWS.clear()
    df, formula = data(world, seed)
    r = pu.DETM.from_formula(formula, data=df).fit(pi_interval="profile")
    for alpha in (0.05, 0.1):
        r.conf_int_pi(alpha)
    frame = pd.DataFrame(ROWS, columns=["kind", "r", "rise", "outcome", "bar"])
    frame.insert(0, "seed", seed)
    frame.insert(0, "world", world)
    return frame


def run(world: str, start: int, stop: int) -> None:
    warnings.simplefilter("ignore")
    done = set()
    if OUT.exists():
        old = pd.read_csv(OUT)
        done = set(zip(old.world, old.seed, strict=True))
    for seed in range(start, stop):
        if (world, seed) in done:
            continue
        frame = one(world, seed)
        frame.to_csv(OUT, mode="a", header=not OUT.exists(), index=False)
        print(world, seed, len(frame), flush=True)


def compare(world: str, start: int, stop: int) -> None:
    """The 95% and 90% intervals (limits and whether the set is an interval) of each data set
    with the screen and without it (share 0: every candidate with R* below the cut-off, as in
    session 78), fitted afresh each time (no instrumentation); the data sets that differ by
    more than 1e-8."""
    warnings.simplefilter("ignore")
    share, differ = P.BOUNDARY_RISE_SHARE, 0
    for seed in range(start, stop):
        df, formula = data(world, seed)
        out = []
        for s in (share, 0.0):
            P.BOUNDARY_RISE_SHARE = s
            r = pu.DETM.from_formula(formula, data=df).fit(pi_interval="profile")
            cis = [r.conf_int_pi(a) for a in (0.05, 0.1)]
            out.append([v for c in cis for v in (c["lower"], c["upper"], c.attrs["interval"])])
        P.BOUNDARY_RISE_SHARE = share
        if not np.allclose(np.array(out[0], float), np.array(out[1], float), rtol=0, atol=1e-8):
            differ += 1
            print("differs:", world, seed, out, flush=True)
    print(f"{world}: {stop - start} data sets, {differ} with other intervals", flush=True)


def summarise() -> None:
    d = pd.read_csv(OUT)
    d["inside"] = d.outcome < d.bar
    risen = d.inside & (d.outcome - d.r > 0.05)
    d["over"] = np.where(risen, (d.rise) / (d.outcome - d.r).where(risen), np.nan)
    print("| world | kind | candidates | inside | largest overstatement of the rise "
          "(inside) | left out at 0.2 (inside) | smallest margin at 0.2 (inside) "
          "| left out at 0.25 (inside) | left out at 0.2 (outside) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (w, k), g in d.groupby(["world", "kind"], sort=False):
        m2, m25 = (g.bar - (g.r + share * g.rise) for share in (0.2, 0.25))
        ins = g.inside
        print(f"| {w} | {k} | {len(g)} | {ins.sum()} | {g.over.max():.2f} | "
              f"{((m2 <= 0) & ins).sum()} | {m2[ins].min():.3f} | {((m25 <= 0) & ins).sum()} | "
              f"{((m2 <= 0) & ~ins).sum()} of {(~ins).sum()} |")


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if sys.argv[1] == "run":
        instrument()
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "compare":
        compare(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        summarise()
