"""Shared data for the CalEM tests."""

import numpy as np
import pytest


def _toy(n=600, seed=0):
    """Scores, labels and treatment of a small CalEM data set: clean labels on control rows,
    labels biased towards 1 (h = 0.3 s on negatives) on the 70% treated rows."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, n)
    tr = (rng.random(n) < 0.7).astype(int)
    y = rng.binomial(1, s)
    z = np.where(y == 1, 1, rng.binomial(1, 0.3 * s))
    return s, np.where(tr == 1, z, y), tr


@pytest.fixture(scope="session")
def make_toy():
    """The factory ``make_toy(n=600, seed=0) -> (score, label, treated)`` (fresh arrays)."""
    return _toy
