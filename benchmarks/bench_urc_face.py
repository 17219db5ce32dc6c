"""One Newton step and one modified Newton step on URC's active face, dense against by blocks
(:mod:`puinfer.models.urc._face`): microseconds per step at the unrestricted maximum of simulated
fits of 2-60 groups and 2-5 classes (the choice of ``FACE_MIN_GROUPS``; issue 17, session 93).

    OPENBLAS_NUM_THREADS=1 taskset -c 0 python benchmarks/bench_urc_face.py

Each step includes the reduction ``T' H T`` of the Hessian's blocks to the face. The dense
modified step is the eigen-decomposition of the whole face that
:func:`puinfer.base.optimize._ascent_direction` takes for an array (the package's before session
93 below ``FACE_MIN_GROUPS`` groups); the block one is :class:`~puinfer.models.urc._face.FaceHessian`'s.
"""

from __future__ import annotations

import os
import timeit
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from puinfer import URC  # noqa: E402
from puinfer.base.optimize import _ascent_direction  # noqa: E402
from puinfer.models.urc import _likelihood as lik  # noqa: E402
from puinfer.models.urc._face import FaceHessian, _dense_face  # noqa: E402
from puinfer.simulate.urc import simulate_urc  # noqa: E402


def _steps(H, T, gr):
    """The four step functions: Newton and modified, dense and by blocks."""
    def newton_dense():
        return _ascent_direction(gr, _dense_face(T, H.dense()), modify=False)

    def newton_blocks():
        return FaceHessian(H, T).ascent_direction(gr, False)

    def modified_dense():
        ev, V = np.linalg.eigh(-_dense_face(T, H.dense()))
        ev = np.maximum(np.abs(ev), 1e-8 * max(np.abs(ev).max(), 1.0))
        return V @ ((V.T @ gr) / ev)

    def modified_blocks():
        return FaceHessian(H, T)._solve(gr, True)

    return newton_dense, newton_blocks, modified_dense, modified_blocks


def _us(f) -> float:
    n, _ = timeit.Timer(f).autorange()
    return min(timeit.repeat(f, number=n, repeat=5)) / n * 1e6


def main():
    warnings.simplefilter("ignore")
    print(f"{'groups':>6} {'classes':>7} {'face dim':>8} | {'Newton dense':>12} {'blocks':>7} | "
          f"{'modified dense':>14} {'blocks':>7}   (us per step)")
    for k in (2, 3, 4, 5):
        for G in (2, 4, 8, 16, 32, 60):
            rng = np.random.default_rng(G * 10 + k)
            sim = simulate_urc(n_lab=1000, n_field=[500] * G, lab_base_rates=[1 / k] * k,
                               field_base_rate=rng.dirichlet(2 * np.ones(k), size=G),
                               separation=1.5, rng=rng)
            res = URC(sim.lab_pred, sim.lab_y, n_bins=4).fit(sim.field_pred,
                                                             groups=sim.field_group)
            d, est = res._d, res._record.estimate
            g, H = lik.grad_hess_blocks(est.P, est.M, d)
            T = lik.tangent(est.P, est.M, d, lik.Constraint(), g, pairs=True)
            t = [_us(f) for f in _steps(H, T, T.T @ g)]
            print(f"{G:>6} {k:>7} {T.shape[1]:>8} | {t[0]:>12.0f} {t[1]:>7.0f} | "
                  f"{t[2]:>14.0f} {t[3]:>7.0f}")


if __name__ == "__main__":
    main()
