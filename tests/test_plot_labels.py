"""Plots say what they show (issue 15): error-bar level, the band of h(score), URC cell ranges."""

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import LineCollection, PolyCollection

import puinfer as pu
from puinfer.models.calem._engine import ParametricEngine, canonical_rows
from puinfer.simulate.calem import simulate_calem
from puinfer.simulate.urc import spambase_lab_field

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.parametrize("alpha, level", [(0.05, "95%"), (0.1, "90%")])
def test_reliability_bars_are_labelled_and_are_the_clopper_pearson_intervals(alpha, level):
    rng = np.random.default_rng(1)
    p = rng.uniform(size=2000)
    y = (rng.uniform(size=p.size) < p).astype(int)
    ax = pu.metrics.plot_reliability(y, p, n_bins=5, alpha=alpha)
    assert f"{level} Clopper-Pearson interval" in ax.get_ylabel()
    rc = pu.metrics.reliability_curve(y, p, n_bins=5, alpha=alpha)
    segs = [c for c in ax.collections if isinstance(c, LineCollection)][0].get_segments()
    np.testing.assert_allclose([s[0][1] for s in segs], rc["lower"], rtol=1e-12)
    np.testing.assert_allclose([s[1][1] for s in segs], rc["upper"], rtol=1e-12)


@pytest.fixture(scope="module")
def calem_fit():
    d = simulate_calem(4000, rng=np.random.default_rng(7))
    return pu.CalEM(d["score"], d["label"], d["treated"]).fit()


def test_calem_reliability_says_what_the_bars_are(calem_fit):
    ax = calem_fit.plot_reliability()
    assert "95% Clopper-Pearson interval" in ax.get_ylabel()


def test_treatment_effect_band(calem_fit):
    res = calem_fit
    ax = res.plot_treatment_effect()
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 1
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "95% pointwise band (delta method, sandwich)" in texts
    s = res._grid(50)
    h = res.treatment_effect(s)
    lo95, hi95 = res._h_band(s, 0.05)
    lo80, hi80 = res._h_band(s, 0.2)
    assert np.all(lo95 <= h + 1e-12) and np.all(h <= hi95 + 1e-12)
    assert np.all(hi95 - lo95 > 0)
    assert np.all(hi80 - lo80 <= hi95 - lo95 + 1e-12) and np.any(hi80 - lo80 < hi95 - lo95)
    # the band's joint covariance is the fit's: its theta block is cov_params()
    cal = res.model.calibrator
    s_c, s_t, y, z, _ = canonical_rows(res.model)
    X = cal.design(res.basis, np.concatenate([s_c, s_t]))
    eng = ParametricEngine(cal, res.basis, X, s_c.size, y, z,
                           X[s_c.size:] @ res.biased.params.to_numpy(), cal.penalty(res.basis))
    V = eng.sandwich(res.params.to_numpy(), joint=True)
    k = res.params.size
    np.testing.assert_allclose(V[:k, :k], res.cov_params().to_numpy(), rtol=1e-10)
    # delta method against a numerical gradient of log(1 - h) = log g_theta - log g_eta
    s0, th, et = np.array([0.4]), res.params.to_numpy(), res.biased.params.to_numpy()

    def log1mh(v):
        eta_t, eta_e = (cal.design(res.basis, s0) @ v[:k])[0], (cal.design(res.basis, s0) @ v[k:])[0]
        return -np.log1p(np.exp(-eta_t)) + np.log1p(np.exp(-eta_e))

    v0, eps = np.r_[th, et], 1e-6
    grad = np.array([(log1mh(v0 + eps * e) - log1mh(v0 - eps * e)) / (2 * eps)
                     for e in np.eye(2 * k)])
    se = np.sqrt(grad @ V @ grad)
    lo, hi = res._h_band(s0, 0.05)
    ratio = 1 - res.treatment_effect(s0, clip=False)
    np.testing.assert_allclose(hi, np.clip(1 - ratio * np.exp(-1.959963984540054 * se), 0, 1),
                               rtol=1e-6)
    np.testing.assert_allclose(lo, np.clip(1 - ratio * np.exp(1.959963984540054 * se), 0, 1),
                               rtol=1e-6)


def test_treatment_effect_without_covariance_says_so():
    d = simulate_calem(3000, rng=np.random.default_rng(8))
    res = pu.CalEM(d["score"], d["label"], d["treated"], calibrator="isotonic").fit()
    ax = res.plot_treatment_effect()
    assert not [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert "no band: no covariance" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_urc_histogram_cells_show_their_score_ranges():
    sp = spambase_lab_field(seed=42)
    r = pu.URC(sp.lab_pred, sp.lab_y, n_bins=4).fit(sp.field_pred, groups=sp.field_group)
    ax = r.plot_histogram("A")
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == list(r.model.partition.labels)
    assert labels[0].startswith("[0, ") and labels[-1].endswith(", 1]")
    edges = r.model.partition.edges[0]
    assert f"{edges[0]:.4g})" in labels[0] and labels[1].startswith(f"[{edges[0]:.4g}, ")
    assert "range of predictions" in ax.get_xlabel()


def test_names_from_the_data_are_printed_literally_not_as_mathtext(tmp_path):
    # session 68's audit: a group "spend $5-$20" was titled "spend 5-20" (mathtext), and a
    # group "$x_{1}^$" made savefig raise; the profile plots put the name in three places
    import io

    sp = spambase_lab_field(seed=42)
    names = dict(zip(sorted(np.unique(sp.field_group)), ["spend $5-$20", "$x_{1}^$", "c"], strict=True))
    groups = np.array([names[g] for g in sp.field_group], dtype=object)
    r = pu.URC(sp.lab_pred, sp.lab_y, n_bins=4).fit(sp.field_pred, groups=groups)
    for g in ("spend $5-$20", "$x_{1}^$"):
        ax = r.plot_histogram(g)
        ax.figure.savefig(io.BytesIO(), format="png")  # (mathtext raised here)
        assert ax.get_title() == "URC histogram: " + g.replace("$", r"\$")
        ax = r.plot_profile(g, r.model.classes[1])
        ax.figure.savefig(io.BytesIO(), format="png")
        assert g.replace("$", r"\$") in ax.get_xlabel() and g not in ax.get_xlabel()
        plt.close("all")


@pytest.mark.parametrize("bad", ["x", 1, "figure"])
def test_ax_that_is_not_an_axes_is_refused(bad):
    # session 83's audit: matplotlib's "'str' object has no attribute 'errorbar'"
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes"):
        pu.metrics.plot_reliability([0, 1, 1, 0] * 25, [0.2, 0.7, 0.8, 0.3] * 25,
                                    ax=plt.figure() if bad == "figure" else bad)
