"""Issue 17: the faster search and profile reach the same maxima and intervals.

The reference (``data/speed_reference.csv``) holds the fits and 95% profile intervals of the
implementation before issue 17's changes (commit d0d0a0b), made by
``studies/detm_speed_reference.py`` on the test suite's datasets (the command is in its
docstring). A second test checks the limits against the profile evaluated by plain Newton
runs (no merging of runs, no predicted starts) from every start the search uses and more.
"""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import puinfer as pu
from puinfer._validation import as_float_matrix
from puinfer.models.detm import _starts
from puinfer.models.detm._starts import fit_fixed_pi
from puinfer.simulate import sar_design, scar_design

REF = pd.read_csv(pathlib.Path(__file__).parent / "data" / "speed_reference.csv")
FEATS15 = "labeled ~ " + " + ".join(f"x{j}" for j in range(1, 16))
MOBILE = "labeled ~ battery_power + ram + px_height"

# the datasets of studies/detm_speed_reference.py (same seeds)
CASES = {
    "sar3000": (lambda: sar_design(3000, 3000, 0.3, rng=np.random.default_rng(3000)),
                FEATS15, {}),
    "sar500x700": (lambda: sar_design(500, 700, 0.3, rng=np.random.default_rng(7)),
                   FEATS15, {}),
    "scar400x600p3": (lambda: scar_design(400, 600, 0.3, rng=np.random.default_rng(5), p=3),
                      "labeled ~ x1 + x2 + x3", {}),
    "sar800p5": (lambda: sar_design(800, 800, 0.3, p=5, rng=np.random.default_rng(8)),
                 "labeled ~ " + " + ".join(f"x{j}" for j in range(1, 6)), {}),
    "sar1000_12000001": (lambda: sar_design(1000, 1000, 0.7, p=15,
                                            rng=np.random.default_rng(12000001)), FEATS15, {}),
    "sar1000_12000005": (lambda: sar_design(1000, 1000, 0.7, p=15,
                                            rng=np.random.default_rng(12000005)), FEATS15, {}),
    "mobile_pi>0.5": (pu.datasets.load_mobile_pu, MOBILE, {"label_rule": "pi>0.5"}),
    "mobile_kl": (pu.datasets.load_mobile_pu, MOBILE, {}),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("model", ["SETM", "DETM"])
def test_same_maximum_and_interval_as_before(case, model):
    """Never a lower maximum than before. At the same maximum (1e-8), the same pi-hat and the
    same limits to 1e-8 -- or a limit further out, where the profile now finds a higher
    point than before (the profile is a maximum over theta, so a higher value is closer to
    it; SAR seed 12000005: the upper limit moved 2e-4, the new profile being 0.095 log-EL
    units higher there). A limit moved inwards would mean a lower profile: it fails."""
    make, formula, opts = CASES[case]
    ref = REF[(REF.case == case) & (REF.model == model)].iloc[0]
    cls = getattr(pu, model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = cls.from_formula(formula, data=make()).fit(**(opts if model == "DETM" else {}))
        ci = r.conf_int_pi(method="profile")
    tol = 1e-8 * abs(ref.llf_penalized)
    assert r.llf_penalized >= ref.llf_penalized - tol
    if r.llf_penalized > ref.llf_penalized + tol:
        return  # a higher maximum than before: the intervals are not comparable
    assert r.pi == pytest.approx(ref.pi, abs=1e-8)
    assert ci["lower"] <= ref.lower + 1e-8
    assert ci["upper"] >= ref.upper - 1e-8
    for new, old in ((ci["lower"], ref.lower), (ci["upper"], ref.upper)):
        if abs(new - old) > 1e-8:  # moved out: the profile is below the cut-off at the old limit
            assert r.profile_pi().statistic(old) < ci.attrs["cutoff"]


@pytest.mark.slow
def test_limits_are_roots_of_the_plainly_computed_profile():
    """The limits against the profile from plain Newton runs (no merging, no predicted
    starts) from the fit, every skeleton solution and the fit's other local maxima: R* equals
    the chi2 cut-off there, and no point on a grid of step 0.05 is above the fit."""
    make, formula, _ = CASES["scar400x600p3"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pu.DETM.from_formula(formula, data=make()).fit()
        ci = r.conf_int_pi(method="profile")
    fit, data = r._fit, r.model.data
    prof = r._profiler
    starts = [fit.theta, *prof.skeleton.values(), *prof.branch_starts]

    def plain(pi):
        best = -np.inf
        for th0 in starts:
            f, th, info = fit_fixed_pi(data, False, pi, th0, fit.penalty_strength,
                                       fit.maxiter, fit.tol)
            if info.converged and np.isfinite(f) and prof.labelled(th, pi):
                best = max(best, f)
        return best

    cut = stats.chi2.ppf(0.95, 1)
    for lim in (ci["lower"], ci["upper"]):
        R = 2 * (fit.llf_penalized - plain(lim))
        assert R == pytest.approx(cut, abs=1e-6)
    grid = np.arange(0.05, 0.96, 0.05)
    assert max(plain(g) for g in grid) <= fit.llf_penalized + 1e-7 * abs(fit.llf_penalized)


def _blas_threads(samples):
    """The BLAS thread count of the process running it, once per sample (for
    ``_in_processes``)."""
    from threadpoolctl import threadpool_info

    n = max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"),
            default=1)
    return [n for _ in samples]


def test_bootstrap_workers_use_one_blas_thread():
    """Each worker process runs one BLAS thread: n_jobs pools of BLAS threads on small
    matrices oversubscribe the cores (session 44: the SCAR test with n_jobs=2 took 9.9 s on
    two cores, 3.1 s with one thread per worker)."""
    from threadpoolctl import threadpool_limits

    from puinfer.models.detm import bootstrap as boot

    with threadpool_limits(limits=2, user_api="blas"):  # the tests' default is one
        assert _blas_threads([None]) == [2]  # what a forked worker would inherit
        assert boot._in_processes(_blas_threads, (), lambda: None, 4, 2) == [1, 1, 1, 1]


def test_bootstrap_n_jobs_gives_the_same_statistics():
    """The resamples are drawn before they are refitted: two processes give exactly the
    serial statistics (and a bad n_jobs is refused, naming it)."""
    from puinfer.models.detm import bootstrap as boot

    df = scar_design(300, 300, 0.75, rng=np.random.default_rng(9), p=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit()
        a = boot.replicate(res, res.null_fit, 6, np.random.default_rng(4), smooth=0.3)
        b = boot.replicate(res, res.null_fit, 6, np.random.default_rng(4), smooth=0.3,
                           n_jobs=2)
        t1 = res.test_scar("bootstrap", n_boot=6, rng=2)
        t2 = res.test_scar("bootstrap", n_boot=6, rng=2, n_jobs=2)
    np.testing.assert_array_equal(a, b)
    assert np.isfinite(a).all()
    assert t1.pvalue == t2.pvalue
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="n_jobs"):
            res.test_scar("bootstrap", n_boot=3, rng=1, n_jobs=bad)


@pytest.mark.parametrize("restricted", [True, False])
def test_lean_record_has_the_full_records_estimates(restricted):
    """The bootstrap's refits build a lean record (no starts table, covariance or label
    check): its estimates and log-EL are bitwise those of the full record of the same fit,
    the search shares one logistic start between SETM and DETM, and a lean record cannot be
    probed (the probe steps by the SE)."""
    from puinfer.models.detm._data import prepare
    from puinfer.models.detm.model import fit_data

    df = sar_design(400, 500, 0.3, p=4, rng=np.random.default_rng(11))
    cols = [f"x{j}" for j in range(1, 5)]
    src, tgt = df.loc[df.labeled == 1, cols], df.loc[df.labeled == 0, cols]
    dat = prepare(src, tgt)
    setm_v = np.zeros(2 * len(cols) + 2)
    opts = dict(c=0.01, label_rule="kl", maxiter=200, tol=1e-10, check_separation=False,
                probe=False, start_options=dict(setm_start=setm_v, grid=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = fit_data(dat, restricted, **opts)[0]
        lean = fit_data(prepare(src, tgt), restricted, lean=True, **opts)[0]
    for name in ("v", "theta", "lagrange_multipliers", "el_weights"):
        np.testing.assert_array_equal(getattr(lean, name), getattr(full, name))
    assert (lean.pi, lean.llf, lean.llf_penalized) == (full.pi, full.llf, full.llf_penalized)
    assert [r.f for r in lean.runs] == [r.f for r in full.runs]
    assert full.starts is not None and full.cov is not None
    assert lean.starts is None and lean.cov is None and lean.label_check is None
    np.testing.assert_array_equal(dat.logistic_slopes, _starts.logistic_start(dat))
    assert not dat.logistic_slopes.flags.writeable
    with pytest.raises(ValueError, match="lean record"):
        fit_data(dat, restricted, **{**opts, "probe": True}, lean=True)


@pytest.mark.parametrize("p", [4, 15])
def test_row_chunked_hessian_blocks_equal_the_single_products(p):
    # _blocks sums X1' diag(w) X1 over chunks of gemm_rows(k) rows (base.gram: small
    # products, one buffer for the weighted chunk); on more rows than two chunks, the last one
    # partial, it must equal the plain products up to summation-order rounding
    from puinfer.base.gram import gemm_rows
    from puinfer.models.detm import _el

    rng = np.random.default_rng(17)
    N = 2 * gemm_rows(p + 1) + 123
    X1 = np.column_stack([np.ones(N), rng.standard_normal((N, p))])
    w11, w12, w22 = rng.standard_normal((3, N))
    H = _el._blocks(X1, [[w11, w12], [None, w22]])
    B12 = X1.T @ (X1 * w12[:, None])
    expected = np.block([[X1.T @ (X1 * w11[:, None]), B12],
                         [B12.T, X1.T @ (X1 * w22[:, None])]])
    np.testing.assert_allclose(H, expected, rtol=1e-11, atol=1e-9 * np.abs(expected).max())
    # up to one chunk's rows the result is the single product's, bitwise (the bootstrap's
    # refits at n = m = 1000 and p = 15 are 2,000 rows: their draws do not change)
    # whether X1 is C- or F-ordered (a design from a DataFrame's to_numpy() is F-ordered; CI,
    # session 47: with a C buffer for an F-ordered X1 a fit at n = m = 1000 changed)
    n1 = gemm_rows(p + 1)
    for X in (X1[:n1], np.asfortranarray(X1[:n1])):
        H1 = _el._blocks(X, [[None, None], [None, w22[:n1]]])
        np.testing.assert_array_equal(H1[p + 1:, p + 1:], X.T @ (X * w22[:n1, None]))


def test_profile_derivatives_summed_over_row_chunks_equal_one_pass(monkeypatch):
    # profile_sums adds its sums up over chunks of BLOCK_ROWS rows, and so do the multipliers'
    # Newton steps; with the target rows interleaved (each chunk must take its own target
    # rows' posterior terms) and pi's derivatives appended, the value, gradient, Hessian, EL
    # weights and multipliers must equal the single pass's to rounding (the sums add up in
    # another order), the posteriors (no sum) bitwise
    from puinfer.models.detm import _el

    rng = np.random.default_rng(5)
    N, p = 5003, 4
    Z = rng.standard_normal((N, p))
    y = (rng.random(N) < 0.4).astype(float)
    X1 = np.column_stack([np.ones(N), Z])
    theta = np.r_[-1.0, 0.3 * rng.standard_normal(p), -0.5, 0.2 * rng.standard_normal(p)]
    one = _el.profile_log_el(theta, 0.3, Z, y, 0.01, order=2, X1=X1, with_pi=True)
    monkeypatch.setattr(_el, "BLOCK_ROWS", 1000)
    chunked = _el.profile_log_el(theta, 0.3, Z, y, 0.01, order=2, X1=X1, with_pi=True)
    assert chunked[0] == pytest.approx(one[0], rel=1e-14)
    for a, b in zip(chunked[1:3], one[1:3], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * np.abs(b).max())
    for key in ("p", "lam"):
        np.testing.assert_allclose(chunked[3][key], one[3][key], rtol=1e-12, atol=0)
    np.testing.assert_array_equal(chunked[3]["omega"], one[3]["omega"])


@pytest.mark.parametrize("block_rows", [1000, 1337])
def test_multiplier_solve_on_row_chunks_equals_the_whole_array_solve(monkeypatch, block_rows):
    # above BLOCK_ROWS rows each Newton step of the multipliers sums over chunks of rows (the
    # per-row arrays in cache); from a damped start (line search, sums of logs), from a start
    # with some D <= 0 (restarted at lambda = 0) and with one constraint inactive (SETM's
    # first tilt identically 1) the multipliers, denominators and verdict must be the whole
    # array solve's to rounding; a NaN row fails both alike
    from puinfer.models.detm import _el

    rng = np.random.default_rng(11)
    x = rng.normal(size=(4000, 2))
    zz = np.expm1(np.stack([0.3 * x[:, 0] - 0.05, -0.4 * x[:, 1] - 0.08]))
    one_active = np.stack([np.zeros(4000), zz[1]])
    with_nan = zz.copy()
    with_nan[1, 2500] = np.nan
    cases = [(zz, [0.3, 0.2]), (zz, [40.0, -40.0]), (one_active, [0.0, 0.2]),
             (with_nan, [0.3, 0.2])]
    whole = [_el._solve_lambda_zz(z, np.array(l0)) for z, l0 in cases]
    monkeypatch.setattr(_el, "BLOCK_ROWS", block_rows)
    chunked = [_el._solve_lambda_zz(z, np.array(l0)) for z, l0 in cases]
    assert [w[2] for w in whole] == [True, True, True, False]
    for (lam_w, D_w, ok_w, act_w), (lam_c, D_c, ok_c, act_c) in zip(whole, chunked,
                                                                       strict=True):
        assert ok_c == ok_w and np.array_equal(act_c, act_w)
        if ok_w:
            np.testing.assert_allclose(lam_c, lam_w, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(D_c, D_w, rtol=1e-13, atol=0)
    assert chunked[2][0][0] == 0.0  # the inactive constraint's multiplier
    # the chunks' extremes of D are the whole array's (NaN propagating)
    blocks = [slice(i, i + block_rows) for i in range(0, 4000, block_rows)]
    for z in (zz, with_nan):
        D, lo, hi = _el._denominators(np.array([0.3, 0.2]), z, blocks)
        D1, lo1, hi1 = _el._denominators(np.array([0.3, 0.2]), z, [slice(0, 4000)])
        np.testing.assert_allclose(D, D1, rtol=1e-15, atol=0)  # (each chunk's own product)
        assert np.isnan(lo) == np.isnan(lo1) and np.isnan(hi) == np.isnan(hi1)
        if not np.isnan(lo):
            assert (lo, hi) == (D.min(), D.max())


@pytest.mark.parametrize("block_rows", [None, 1000])
def test_target_rows_as_a_slice_give_the_boolean_index_bitwise(monkeypatch, block_rows):
    # the pooled sample puts the target rows last: _el.target_rows then indexes them by a
    # slice (a view) instead of the boolean mask; value, derivatives (with pi's), EL weights
    # and posteriors must be bitwise those of the boolean index, in one pass and in chunks
    # whose first one has no target row and one straddles the boundary
    from puinfer.models.detm import _el

    mask = np.r_[np.zeros(3, bool), np.ones(4, bool)]
    assert _el.target_rows(mask) == slice(3, None)
    assert _el.target_rows(np.zeros(5, bool)) == slice(5, None)
    assert _el.target_rows(np.ones(5, bool)) == slice(0, None)
    mixed = np.array([False, True, False, True])
    assert _el.target_rows(mixed) is mixed
    rng = np.random.default_rng(11)
    N, p = 4003, 4
    Z = rng.standard_normal((N, p))
    y = (np.arange(N) >= 1500).astype(float)
    X1 = np.column_stack([np.ones(N), Z])
    theta = np.r_[-1.0, 0.3 * rng.standard_normal(p), -0.5, 0.2 * rng.standard_normal(p)]
    if block_rows:
        monkeypatch.setattr(_el, "BLOCK_ROWS", block_rows)
    fast = _el.profile_log_el(theta, 0.3, Z, y, 0.01, order=2, X1=X1, with_pi=True)
    monkeypatch.setattr(_el, "target_rows", lambda m: m)
    plain = _el.profile_log_el(theta, 0.3, Z, y, 0.01, order=2, X1=X1, with_pi=True)
    assert fast[0] == plain[0]
    for a, b in zip(fast[1:3], plain[1:3], strict=True):
        np.testing.assert_array_equal(a, b)
    for key in ("p", "omega", "lam"):
        np.testing.assert_array_equal(fast[3][key], plain[3][key])


def _setm_rows(seed, N=4000, p=5):
    """A generator and the rows ``Z, y, X1`` of two samples (1,800 source rows first)."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((N, p))
    y = (np.arange(N) >= 1800).astype(float)
    return rng, Z, y, np.column_stack([np.ones(N), Z])


def _assert_setm_entries(part, full, used, skipped):
    """SETM's evaluation ``part`` against the full one: the same value and gradient, the used
    rows and columns of the Hessian equal to rounding, the ``skipped`` block really skipped
    (else the option saves nothing)."""
    assert part[0] == full[0]
    np.testing.assert_array_equal(part[1], full[1])
    sub = np.ix_(used, used)
    np.testing.assert_allclose(part[2][sub], full[2][sub], rtol=1e-12,
                               atol=1e-12 * np.abs(full[2]).max())
    assert not np.allclose(part[2][skipped], full[2][skipped])


def test_setm_profile_hessian_without_the_fixed_tilts_blocks():
    # SETM's fixed-pi Newton runs ask for the Hessian's (alpha2, beta2) block only
    # (fixed_tilt1=True skips the products of the other blocks)
    from puinfer.models.detm import _el

    p = 5
    rng, Z, y, X1 = _setm_rows(8, p=p)
    theta = np.r_[np.zeros(p + 1), -0.4, 0.3 * rng.standard_normal(p)]
    full = _el.profile_log_el(theta, 0.4, Z, y, 0.02, order=2, X1=X1)
    part = _el.profile_log_el(theta, 0.4, Z, y, 0.02, order=2, X1=X1, fixed_tilt1=True)
    k = p + 1
    _assert_setm_entries(part, full, np.arange(k, 2 * k), np.s_[:k, :k])


def test_setm_free_hessian_from_one_block():
    # SETM's pi-free Newton runs (b1 = 0 held) ask for the rows and columns of (s1, s2, b2)
    # only (free_objective(fixed_tilt1=True): one weighted product over the rows instead of
    # three, issue 17)
    from puinfer.models.detm import _el

    p = 5
    rng, Z, y, X1 = _setm_rows(9, p=p)
    v = np.r_[-1.2, np.zeros(p), -0.4, 0.3 * rng.standard_normal(p)]
    full = _el.free_objective(v, Z, y, 0.02, 2, X1)
    part = _el.free_objective(v, Z, y, 0.02, 2, X1, fixed_tilt1=True)
    _assert_setm_entries(part, full, np.r_[0, p + 1:2 * p + 2], np.s_[1:p + 1, 1:p + 1])


def _plain_free_objective(v, Z, y, c):
    # the binary-regression log-likelihood written out directly (P0 = 1 / (1 + e^eta1 +
    # e^eta2); target rows log(1 - P0)), with the symmetric ridge on the slopes
    p = Z.shape[1]
    s1, b1, s2, b2 = v[0], v[1:p + 1], v[p + 1], v[p + 2:]
    e1, e2 = np.exp(s1 + Z @ b1), np.exp(s2 + Z @ b2)
    P0 = 1 / (1 + e1 + e2)
    L = np.sum(np.where(y == 1, np.log1p(-P0), np.log(P0)))
    return L - c * (2 / 3) * (b1 @ b1 + b2 @ b2 - b1 @ b2)


def test_free_objective_memo_reuses_the_line_search_point_bitwise():
    # Newton's line search evaluates the pi-free objective at its accepted point, and the next
    # Hessian there reuses those per-row quantities from the memo: value, gradient and
    # Hessian must equal a fresh evaluation bitwise (the bootstrap's refits land on one of
    # several maxima by the last bits of the arithmetic, so "close" is not enough), and be
    # those of the plain formula (central differences for the gradient)
    from puinfer.models.detm import _el

    rng = np.random.default_rng(21)
    N, p, c = 3000, 4, 0.02
    Z = rng.standard_normal((N, p))
    y = (np.arange(N) >= 1300).astype(float)
    X1 = np.column_stack([np.ones(N), Z])
    v = np.r_[-1.2, 0.3 * rng.standard_normal(p), -0.3, 0.5 * rng.standard_normal(p)]
    fresh = _el.free_objective(v, Z, y, c, 2, X1)
    memo = {}
    f0 = _el.free_objective(v, Z, y, c, 0, X1, memo=memo)
    again = _el.free_objective(v, Z, y, c, 2, X1, memo=memo)
    assert f0 == again[0] == fresh[0] and len(memo) == 1
    for a, b in zip(again[1:], fresh[1:], strict=True):
        np.testing.assert_array_equal(a, b)
    assert fresh[0] == pytest.approx(_plain_free_objective(v, Z, y, c), rel=1e-12)
    h = 1e-5
    num = [(_plain_free_objective(v + h * e, Z, y, c) - _plain_free_objective(v - h * e, Z, y, c))
           / (2 * h) for e in np.eye(v.size)]
    np.testing.assert_allclose(fresh[1], num, rtol=1e-5, atol=1e-5)
    # a memo entry is only reused at its own point
    other = _el.free_objective(v + 0.1, Z, y, c, 2, X1, memo=memo)
    assert other[0] == _el.free_objective(v + 0.1, Z, y, c, 0, X1)
    assert other[0] != fresh[0]


def test_multiplier_solve_stops_at_once_where_eq_11_has_no_solution(monkeypatch):
    # a tilt above 1 at every row, or lambda'z >= 0 at every row (> 0 at some): no weights
    # p_i > 0 meet (11); the solve reports failure without Newton steps (it used to double
    # lambda for 100 of them) and still solves a feasible system to rounding
    from puinfer.models.detm import _el

    steps = []
    real = _el._solve_small
    monkeypatch.setattr(_el, "_solve_small", lambda H, b: steps.append(1) or real(H, b))
    rng = np.random.default_rng(3)
    z = rng.uniform(0.1, 2.0, 50)
    lam, D, ok, _ = _el._solve_lambda_z(z - 0.5, z, np.zeros(2))  # second tilt > 1 everywhere
    assert not ok and steps == []
    # both tilts cross 1, but z1 + z2 = 0.2 at every row: from lambda = (1, 1), D = 1.2
    z1 = rng.uniform(-0.5, 1.0, 50)
    assert (0.2 - z1).min() < 0 < (0.2 - z1).max()
    lam, D, ok, _ = _el._solve_lambda_z(z1, 0.2 - z1, np.array([1.0, 1.0]))
    assert not ok and steps == []
    # feasible: both signs in each column and the origin inside their hull
    z1, z2 = rng.normal(size=50), rng.normal(size=50)
    lam, D, ok, _ = _el._solve_lambda_z(z1, z2, np.zeros(2))
    assert ok and len(steps) > 0
    assert abs(np.sum(z1 / D)) < 1e-10 and abs(np.sum(z2 / D)) < 1e-10


def test_multiplier_solve_stops_after_the_step_that_certifies_convergence(monkeypatch):
    # -sum log(1 + lambda'z) is self-concordant: after a full Newton step from a decrement
    # below DECREMENT_STOP the new decrement is below its square, so the solve stops there
    # (no step of rounding size to confirm it), and steps from decrements below 1/16 are
    # taken without a line search (issue 17, session 50). Checked against eq. (11) solved by
    # scipy's root finder, and by the decrement at the returned multipliers.
    from scipy import optimize

    from puinfer.models.detm import _el

    decs, evals = [], []
    real_small = _el._solve_small

    def small(H, b):
        x = real_small(H, b)
        decs.append(float(b @ x))
        return x

    monkeypatch.setattr(_el, "_solve_small", small)
    real_log = np.log
    monkeypatch.setattr(_el.np, "log", lambda a: evals.append(1) or real_log(a))
    rng = np.random.default_rng(11)
    x = rng.normal(size=(4000, 2))
    zz = np.expm1(np.stack([0.3 * x[:, 0] - 0.05, -0.4 * x[:, 1] - 0.08]))
    lam, D, ok, act = _el._solve_lambda_zz(zz, np.array([0.3, 0.2]))
    monkeypatch.undo()
    assert ok and act.all()
    # every step but the last from a decrement above the threshold, the last from below it
    assert decs[-1] < _el.DECREMENT_STOP and min(decs[:-1]) >= _el.DECREMENT_STOP
    assert len(decs) >= 3
    assert decs[0] >= _el.PURE_NEWTON and len(evals) >= 2  # a damped start: logs evaluated
    # the same multipliers as eq. (11) solved by another method, and at rounding level
    root = optimize.root(lambda v: (zz / (1 + v @ zz)).sum(axis=1), np.zeros(2), tol=1e-15)
    assert root.success and np.allclose(lam, root.x, rtol=1e-12, atol=1e-15)
    R = zz / D
    g = R.sum(axis=1)
    assert g @ np.linalg.solve(R @ R.T, g) < 1e-22
    # from a start near the solution every step is a pure Newton step: no sum of logs at all
    decs.clear()
    monkeypatch.setattr(_el, "_solve_small", small)
    monkeypatch.setattr(_el.np, "log", lambda a: evals.append(1) or real_log(a))
    evals.clear()
    lam2, _, ok2, _ = _el._solve_lambda_zz(zz, lam * (1 + 1e-3))
    monkeypatch.undo()
    assert ok2 and evals == [] and max(decs) < _el.PURE_NEWTON
    assert np.allclose(lam2, lam, rtol=1e-13, atol=0)


def test_dataframes_and_arrays_fit_alike_to_the_last_bit():
    # a DataFrame's values are Fortran-ordered, arrays C-ordered: the pooled sample is stored
    # in one layout either way, so both take the same arithmetic (before session 50, 2 of 100
    # SAR replicates at n = m = 1000 gave other answers from the two: (F48), (F49) in
    # studies/results/README_detm.md)
    df = sar_design(300, 300, 0.7, p=5, rng=np.random.default_rng(47100044))
    cols = [f"x{j}" for j in range(1, 6)]
    lab = df.labeled.to_numpy() == 1
    out, layouts = [], []
    for X in (df[cols], df[cols].to_numpy()):
        layouts.append(np.isfortran(as_float_matrix(X[lab], "source")[0]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = pu.DETM(X[lab], X[~lab]).fit()
            ci = r.conf_int_pi(method="profile")
            out.append((r.pi, r.llf_penalized, *r.params.to_numpy(), ci["lower"], ci["upper"]))
    assert layouts == [True, False]  # the two inputs do come in the two layouts
    assert out[0] == out[1]


@pytest.mark.parametrize("model", ["SETM", "DETM"])
def test_probe_does_not_lift_a_subsample_maximum_twice(monkeypatch, model):
    # on large samples each start of the probe runs on the subsample first and its maximum
    # there is lifted to all rows; a subsample maximum that is the image of a full-data
    # maximum already found at that pi is not lifted again (issue 17). Forced here by a
    # small subsample: the same fit and interval as when every subsample maximum is lifted,
    # with fewer runs on all rows
    from puinfer.models.detm import _profile, _starts

    monkeypatch.setattr(_profile, "SUBSAMPLE_SIZE", 800)
    monkeypatch.setattr(_starts, "SUBSAMPLE_SIZE", 800)
    df = sar_design(1500, 1500, 0.3, p=4, rng=np.random.default_rng(41))
    f = "labeled ~ x1 + x2 + x3 + x4"
    runs = {}
    real = _starts.solve_fixed_pi

    def counted(data, *args, **kwargs):
        runs[key] += data.N == 3000
        return real(data, *args, **kwargs)

    monkeypatch.setattr(_profile, "solve_fixed_pi", counted)
    out = {}
    for key in ("skip", "lift every one"):
        runs[key] = 0
        if key != "skip":
            monkeypatch.setattr(_profile.PiProfiler, "_known_with_image", lambda *a: None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = getattr(pu, model).from_formula(f, data=df).fit()
            ci = res.conf_int_pi(method="profile")
        out[key] = np.r_[res.llf_penalized, res.pi, ci.to_numpy().ravel()]
    np.testing.assert_allclose(out["skip"], out["lift every one"], rtol=1e-10, atol=1e-10)
    assert runs["skip"] < runs["lift every one"], runs


def test_penalise_subtracts_the_penalty_derivatives_exactly():
    """``_el.penalise`` (flat-index updates, issue 17) against the penalty's own gradient and
    Hessian subtracted densely, with and without the appended pi row and column."""
    from puinfer.models.detm import _el

    rng = np.random.default_rng(5)
    p, c = 4, 0.37
    b1, b2 = rng.normal(size=p), rng.normal(size=p)
    _, pg, ph = _el.penalty(b1, b2, c, 2)
    idx = np.r_[1:p + 1, p + 2:2 * p + 2]
    for extra in (0, 1):
        k = 2 * p + 2 + extra
        H0 = rng.normal(size=(k, k))
        g0 = rng.normal(size=k)
        H, g = H0.copy(), g0.copy()
        _el.penalise(g, H, b1, b2, c)
        Hr, gr = H0.copy(), g0.copy()
        Hr[np.ix_(idx, idx)] -= ph
        gr[idx] -= pg
        np.testing.assert_array_equal(H, Hr)
        np.testing.assert_array_equal(g, gr)


def test_boundary_rule_on_an_exponential_tail():
    """``_boundary_target`` on ``f = -|w|^2 / 2 + C e^{s1}`` (C = -3), whose supremum 0 is the
    limit ``s1 -> -inf, w = 0``: a point merges when its remaining rise ``-g_s1 + q / 2`` is
    below ``BOUNDARY_DROP`` and ``f`` is the limit's level less that rise; not when the known
    level does not match the tail (another maximum between), nor while ``s1`` rises."""
    C = -3.0

    def point(s1, w):
        w = np.asarray(w, dtype=float)
        return np.r_[s1, w], -w @ w / 2 + C * np.exp(s1), np.r_[C * np.exp(s1), -w]

    u_k, f_k, _ = point(-30.0, [0.0, 0.0])
    H_k = np.diag([C * np.exp(-30.0), -1.0, -1.0])
    known = [("limit", u_k, H_k), ("interior", np.zeros(3), -np.eye(3))]
    targets = _starts._boundary_targets(known)
    assert [t[0] for t in targets] == ["limit"]  # the interior maximum is for the other rule
    edge = [(f_k, u_k, A) for _, u_k, A in targets]
    u, f, g = point(np.log(1e-3 / 3), [0.01, -0.02])  # rise to go 1e-3 + 2.5e-4
    assert _starts.BOUNDARY_DROP > 1.25e-3
    assert _starts._boundary_target(u, f, g, edge) == 0
    assert _starts._boundary_target(u, f, g, [(f_k + 1e-3, u_k, edge[0][2])]) is None
    assert _starts._boundary_target(u, f, -g, edge) is None  # s1 on its way up
    u, f, g = point(np.log(0.02 / 3), [0.0, 0.0])  # too far: rise 0.02 to go
    assert _starts._boundary_target(u, f, g, edge) is None


def test_jump_rule_on_an_exponential_tail():
    """The jump of ``TAIL_STEP`` on ``f = -|w|^2 / 2 + C e^{s1} (1 + K w_1)`` (C = -3): at
    ``s1 = -5`` (a rise of 0.02 to go, too far for ``BOUNDARY_DROP``) with ``w`` settled, the
    Newton step is the tail's (``s1`` by -1) and the log-EL at the limit's ``s1`` is what the
    tail predicts: it merges, after one evaluation of the value there. Not without ``fun``,
    nor where the limit's level or the rise to it is not the tail's, nor while ``w`` is far
    from the limit's (``q / 2`` above ``BOUNDARY_DROP``), nor where Newton's step still moves
    ``w``, nor where ``s1`` is still coupled to ``w`` (``K = 6``: the step moves ``s1`` by
    -0.82)."""
    C, s1_k = -3.0, -30.0

    def objective(K):
        def fun(x, order):
            s1, w = x[0], x[1:]
            e = C * np.exp(s1)
            f = -w @ w / 2 + e * (1 + K * w[0])
            if order == 0:
                return f
            g = np.r_[e * (1 + K * w[0]), -w + np.r_[K * e, 0.0]]
            H = np.array([[e * (1 + K * w[0]), K * e, 0.0], [K * e, -1.0, 0.0],
                          [0.0, 0.0, -1.0]])
            return f, g, H
        return fun

    calls = []

    def counted(fun):
        def inner(x, order):
            calls.append(order)
            return fun(x, order)
        return inner

    fun = objective(0.0)
    u_k = np.r_[s1_k, 0.0, 0.0]
    f_k, _, H_k = fun(u_k, 2)
    edge = [(f_k, u_k, -H_k[1:, 1:])]
    u = np.r_[-5.0, 0.01, -0.02]
    f, g, H = fun(u, 2)
    assert _starts._boundary_target(u, f, g, edge) is None  # the rule of BOUNDARY_DROP alone
    assert _starts._boundary_target(u, f, g, edge, counted(fun), H) == 0
    assert calls == [0]
    assert _starts._boundary_target(u, f, g, [(f_k + 1e-3, u_k, edge[0][2])], fun, H) is None
    far = np.r_[-5.0, 0.2, 0.0]  # q / 2 = 0.02
    assert _starts._boundary_target(far, *fun(far, 2)[:2], edge, fun, fun(far, 2)[2]) is None
    # the rise to the limit's s1 not the tail's: half what the gradient (and the Hessian,
    # alike: the step is still the tail's) say
    f, g, H = fun(u, 2)
    g2, H2 = g.copy(), H.copy()
    g2[0] *= 2
    H2[0, 0] *= 2
    assert _starts._boundary_target(u, f, g2, edge, fun, H2) is None
    # Newton's step still moving w: by 0.2 along w_1 (q / 2 = 0.02), s1 by -1
    f, g, H = fun(u, 2)
    assert _starts._boundary_target(u, f, g + np.r_[0.0, 0.2, 0.0], edge, fun, H) is None
    # Newton's step settled (no gradient in w) at a w 0.2 from the limit's: q / 2 = 0.02 to go
    f, g, H = fun(far, 2)
    g[1:] = 0.0
    assert _starts._boundary_target(far, f, g, edge, fun, H) is None
    coupled = objective(6.0)  # s1 still coupled to w_1: Newton's step moves s1 by -0.82
    f, g, H = coupled(u, 2)
    assert np.all(np.linalg.eigvalsh(H) < 0)
    assert _starts._boundary_target(u, f, g, edge, coupled, H) is None
    assert _starts._boundary_target(u, f, g, edge) is None


def test_setm_runs_merge_into_the_maximum_at_pi_zero(monkeypatch):
    """On the bench's SAR data (n = m = 1000, p = 15) SETM's maximum is at pi = 0 (a limit:
    Newton creeps towards it, about 30 iterations per run). Runs merged into it by the
    boundary rule would have reached it: each merged run, rerun without merging, ends at
    pi < 1e-9 and that maximum's log-EL to 1e-8; the search's maximum is unchanged, with
    fewer Newton iterations."""
    from puinfer.models.detm._data import prepare
    from puinfer.models.detm._el import ridge_strength

    df = sar_design(1000, 1000, 0.3, p=15, rng=np.random.default_rng(1015))
    X = df[[f"x{j}" for j in range(1, 16)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    data = prepare(X[lab], X[~lab])
    c = ridge_strength(data.N)

    def search():
        runs = _starts.run_starts(data, True, c, 200, 1e-10)
        return runs, max(runs, key=lambda r: r.f)

    runs, best = search()
    monkeypatch.setattr(_starts, "BOUNDARY_DROP", 0.0)  # merging into the limit switched off
    runs0, best0 = search()
    assert _starts.pi_of_v(data, best.v) < 1e-9
    assert best.f == pytest.approx(best0.f, abs=1e-8)
    merged = [i for i, r in enumerate(runs) if "stopped there" in r.info.message
              and r.v is best.v]
    assert len(merged) >= 5
    assert sum(r.info.iterations for r in runs) < sum(r.info.iterations for r in runs0) - 100
    for i in merged:
        assert runs0[i].label == runs[i].label
        assert _starts.pi_of_v(data, runs0[i].v) < 1e-9
        assert runs0[i].f == pytest.approx(best.f, abs=1e-8)


def test_design_twin_in_fortran_order_gives_the_same_evaluations_bitwise():
    # TiltData.X1F (session 58): where the pooled sample is one chunk of the weighted Grams,
    # an F-ordered copy of X1 that the Grams weight column by column; the pi-free and the
    # profile objective's Hessians must be those of X1 alone, bit for bit, and above one
    # chunk there is no twin (two copies of the rows no longer fit in cache)
    from puinfer.base.gram import gemm_rows
    from puinfer.models.detm import _el
    from puinfer.models.detm._data import prepare

    p = 15
    df = sar_design(700, 900, 0.3, p=p, rng=np.random.default_rng(58))
    X = df[[f"x{j}" for j in range(1, p + 1)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    data = prepare(X[lab], X[~lab])
    assert data.N <= gemm_rows(p + 1)
    assert data.X1F.flags.f_contiguous and not data.X1.flags.f_contiguous
    np.testing.assert_array_equal(data.X1F, data.X1)
    rng = np.random.default_rng(1)
    v = np.r_[-0.3, 0.4 * rng.standard_normal(p), -0.8, 0.4 * rng.standard_normal(p)]
    for tilt1 in (False, True):
        plain = _el.free_objective(v, data.Z, data.y, 0.01, 2, data.X1, fixed_tilt1=tilt1)
        twin = _el.free_objective(v, data.Z, data.y, 0.01, 2, data.X1, fixed_tilt1=tilt1,
                                  X1F=data.X1F)
        for a, b in zip(plain, twin, strict=True):
            np.testing.assert_array_equal(a, b)
        theta = v.copy()
        if tilt1:
            theta[:p + 1] = 0.0
        plain = _el.profile_log_el(theta, 0.3, data.Z, data.y, 0.01, X1=data.X1,
                                   with_pi=not tilt1, fixed_tilt1=tilt1)
        twin = _el.profile_log_el(theta, 0.3, data.Z, data.y, 0.01, X1=data.X1,
                                  with_pi=not tilt1, fixed_tilt1=tilt1, X1F=data.X1F)
        assert np.isfinite(plain[0]) and plain[0] == twin[0]
        for a, b in zip(plain[1:3], twin[1:3], strict=True):
            np.testing.assert_array_equal(a, b)
    big = prepare(np.tile(X[lab], (3, 1)), np.tile(X[~lab], (3, 1)))
    assert big.N > gemm_rows(p + 1) and big.X1F is None
