"""simulate_calem (Sergazinov et al., Section 5.1): what event_prob fixes, and the clean rate."""

import re

import numpy as np
import pytest
from numpy.testing import assert_allclose

from puinfer.simulate import calem as C
from puinfer.simulate.calem import beta_params, clean_event_rate, simulate_calem

PS = (0.5, 0.4, 0.3, 0.2)


def _closed_form(P, transition):
    """E[p (1 - h(p))] for p ~ Beta(1, b), b = (1 - P) / P: E[p^3] = 6 / ((1+b)(2+b)(3+b)) and
    E[p 1{p >= c}] = c (1-c)^b + (1-c)^(b+1) / (b+1)."""
    b = (1 - P) / P
    if transition == "h1":
        return P - 0.5 * 6 / ((1 + b) * (2 + b) * (3 + b))
    return P - 0.3 * (0.3 * 0.7 ** b + 0.7 ** (b + 1) / (b + 1))


@pytest.mark.parametrize("transition", ["h1", "h2"])
@pytest.mark.parametrize("P", PS)
def test_clean_event_rate_closed_form(P, transition):
    assert_allclose(clean_event_rate(P, transition), _closed_form(P, transition), rtol=1e-8)


@pytest.mark.parametrize("transition", ["h1", "h2"])
def test_event_prob_is_the_biased_rate_and_y_has_the_clean_rate(transition):
    """event_prob = P(Z = 1); P(Y = 1) = clean_event_rate (0.375 for P = 0.5 under h1)."""
    n = 200_000
    for P in PS:
        d = simulate_calem(n, event_prob=P, transition=transition, rng=np.random.default_rng(0))
        se_z = np.sqrt(P * (1 - P) / n)
        q = clean_event_rate(P, transition)
        se_y = np.sqrt(q * (1 - q) / n)
        assert abs(d.z.mean() - P) < 4 * se_z
        assert abs(d.y.mean() - q) < 4 * se_y
        assert abs(d.p_clean.mean() - q) < 4 * se_y
    assert clean_event_rate(0.5, "h1") == pytest.approx(0.375, abs=1e-10)
    assert beta_params(0.5) == (1.0, 1.0)


def test_docstrings_state_what_event_prob_is():
    """The module's table of clean rates is clean_event_rate rounded; the parameter's doc says
    it is P(Z = 1), the biased label's rate (it used to say only "P in Table 1")."""
    rows = {m.group(1): [float(v) for v in m.group(2).split()]
            for m in re.finditer(r"^(h[12])\s+((?:0\.\d+\s*){4})$", C.__doc__, re.M)}
    assert set(rows) == {"h1", "h2"}
    for h, vals in rows.items():
        assert vals == [round(clean_event_rate(P, h), 3) for P in PS]
    doc = " ".join(simulate_calem.__doc__.split())
    assert "P(Z = 1) = P" in doc and "biased" in doc and "0.375" in doc
