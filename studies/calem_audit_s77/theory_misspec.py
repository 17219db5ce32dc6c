"""Asymptotic size of test_bias's LR test when the calibrator family is misspecified (control and
treated scores identically distributed, no bias): LR -> sum_i lambda_i chi2_1 with lambda the
eigenvalues of H^-1 B (H: information, B: outer product of scores at the pseudo-true fit).
Computed on one large sample of the paper's design with clean labels."""

import numpy as np
from common import gen_paper
from scipy import stats

from puinfer.models.calem.calibrators import make_calibrator

rng = np.random.default_rng(123)
for world in ["g1", "g2"]:
    s, lab, tr = gen_paper(10_000, 1_990_000, rng, miscal=world, bias=False)
    for name in ["logistic", "beta", "spline"]:
        cal = make_calibrator(name)
        f = cal.fit(s, lab)
        X = cal.design(f.basis, s) if hasattr(f, "basis") else None
        g = f.predict(s)
        H = (X * (g * (1 - g))[:, None]).T @ X / s.size
        B = (X * ((lab - g) ** 2)[:, None]).T @ X / s.size
        lam = np.sort(np.linalg.eigvals(np.linalg.solve(H, B)).real)
        k = lam.size
        draws = (stats.chi2.rvs(1, size=(400_000, k), random_state=1) * lam).sum(1)
        sizes = [np.mean(draws > stats.chi2.ppf(1 - a, k)) for a in (0.05, 0.10)]
        print(
            world,
            name,
            "lambda",
            lam.round(3),
            "asymptotic size at 5%, 10%:",
            [round(100 * x, 1) for x in sizes],
        )
