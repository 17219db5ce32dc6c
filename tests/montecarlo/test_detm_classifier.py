"""The approximate Bayes classifier study (studies/detm_classifier.py, Liu et al. Figure 4):
a fast version runs in the default suite; the full study is a script (slow, outside CI)."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

STUDY = Path(__file__).resolve().parents[2] / "studies" / "detm_classifier.py"
spec = importlib.util.spec_from_file_location("detm_classifier", STUDY)
study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study)


@pytest.mark.parametrize("design", ["SCAR", "SAR"])
def test_true_posterior_matches_the_densities(design):
    # independent computation: Bayes' rule with scipy's multivariate normal densities
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 15)) + 0.5
    mu1 = np.r_[np.ones(study.SHIFT[design]), np.zeros(15 - study.SHIFT[design])]
    f1 = stats.multivariate_normal(mu1, np.eye(15)).pdf(X)
    f0 = stats.multivariate_normal(np.ones(15), np.eye(15)).pdf(X)
    np.testing.assert_allclose(study.true_posterior(X, design, 0.3),
                               0.3 * f1 / (0.3 * f1 + 0.7 * f0), rtol=1e-10)


def test_scores_by_hand():
    post = np.array([0.9, 0.6, 0.4, 0.1])
    y = np.array([1, 0, 1, 0])
    s = study.scores("m", post, y, pi_hat=0.5)
    assert s["accuracy"] == 0.5  # 0.9 right, 0.6 wrong, 0.4 wrong, 0.1 right
    assert s["balanced_accuracy"] == 0.5
    assert s["brier"] == pytest.approx((0.01 + 0.36 + 0.36 + 0.01) / 4)
    s2 = study.scores("m", post, y, pi_hat=0.3)  # 0.4 now called positive
    assert s2["balanced_accuracy"] == pytest.approx(0.5 * (1.0 + 0.5))


def test_fast_version_of_figure_4():
    # 3 replicates per design at n = m = 1000, pi = 0.3 (the full study: 50-100 per cell)
    rows = []
    for design in ("SCAR", "SAR"):
        for seed in range(3):
            rows += study.replicate(design, 0.3, 1000, seed, baselines=False)
    tab = pd.DataFrame(rows).groupby(["design", "method"])["accuracy"].mean()
    # the paper: under SCAR every classifier is above 95% at pi = 0.3
    assert tab["SCAR", "DETM"] > 0.93 and tab["SCAR", "SETM"] > 0.95
    # no estimated classifier beats the true-parameter Bayes rule by more than noise
    for design in ("SCAR", "SAR"):
        assert tab[design, "DETM"] < tab[design, "Bayes (true parameters)"] + 0.01
    # under SAR, SETM (SCAR-based) falls well below DETM, which approaches the ceiling
    assert tab["SAR", "SETM"] < tab["SAR", "DETM"] - 0.05
    assert tab["SAR", "DETM"] > 0.8
