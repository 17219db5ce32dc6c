"""RegressionURC with few, wide outcome intervals: the interval form of Axiom 2 (session 68).

URC needs Axiom 2 given the outcome *interval*; a prior shift in ``y`` holds it only given
``y`` itself, since it also moves the outcomes within an interval. This study measures what that
costs as the intervals widen: a location shift of 0.5 SD (``simulate_urc_regression``, lab
1000, field 5000), the default fit with ``n_intervals`` K = 2, 4, 10; for the top interval the
mean error of its share, the coverage of its 95% profile interval, and the rejection rate of
the goodness-of-fit test at 5%.

Run: ``OPENBLAS_NUM_THREADS=1 python studies/urc_regression_interval_width.py 50`` (about a
minute on one core). Session 68, 50 replicates, seeds 68000 + r:

    K  = 2: coverage 0.14, mean error +0.0831 (SD 0.0290), GOF rejects 0.26
    K  = 4: coverage 0.80, mean error +0.0407 (SD 0.0321), GOF rejects 0.06
    K = 10: coverage 0.88, mean error +0.0255 (SD 0.0262), GOF rejects 0.04
"""

import sys
import time
import warnings

import numpy as np

import puinfer as pu
from puinfer.simulate.urc_regression import simulate_urc_regression


def main(replicates: int = 30, shift: float = 0.5) -> None:
    t0 = time.time()
    for K in (2, 4, 10):
        cover, error, gof = [], [], []
        for rep in range(replicates):
            sim = simulate_urc_regression(1000, 5000, field_shift=shift,
                                          rng=np.random.default_rng(68_000 + rep))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = pu.RegressionURC(sim.lab_pred, sim.lab_y, n_intervals=K)
                r = m.fit(sim.field_pred)
                ci = r.conf_int()
                gof.append(r.gof().pvalue < 0.05)
            truth = np.asarray(sim.field_interval_rates(m.edges)).reshape(-1)[-1]
            lo, hi = ci["lower"].to_numpy()[-1], ci["upper"].to_numpy()[-1]  # the top interval
            cover.append(lo <= truth <= hi)
            error.append(r.base_rates.to_numpy().reshape(-1)[-1] - truth)
        print(f"shift {shift}, K = {K:2d}: top-interval coverage {np.mean(cover):.2f}, mean "
              f"error {np.mean(error):+.4f} (SD {np.std(error):.4f}), GOF rejects "
              f"{np.mean(gof):.2f}  [{time.time() - t0:.0f} s]", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
