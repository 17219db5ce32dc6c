"""URC profile points solved as one stacked problem (``_stacked``; issue 17: the intervals of
many groups under the joint likelihood), against the scalar route
(``ProfileLoglik.loglik_at``) and a direct optimisation."""

import warnings

import numpy as np
import pytest
from scipy import optimize, special

from puinfer import URC
from puinfer.models.urc import _likelihood as lik
from puinfer.models.urc import _stacked
from puinfer.simulate.urc import simulate_urc


def _fit(seed, G, m, lowest=0.03, lab_rate=0.5, n_lab=1000, **fit):
    """A joint fit of ``G`` groups of about ``m`` field rows, base rates ``lowest``-0.6, a lab
    set with ``lab_rate`` positives (1% makes the face Hessian often indefinite)."""
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ylab = (rng.random(n_lab) < lab_rate).astype(int)
        ylab[:3] = 1

        def scores(y):
            return special.expit(1.5 * ((2 * y - 1) * 0.75 + rng.standard_normal(y.size)))
        y = rng.random(G * m) < np.repeat(np.linspace(lowest, 0.6, G), m)
        return URC(scores(ylab), ylab).fit(scores(y.astype(int)),
                                           groups=np.repeat(np.arange(G), m), **fit)


def _ml_fit():
    """Maximum likelihood for M (``lab_pseudocount=0``), 8 cells and a lab set of 150: two
    cells of M's positive row are 0 at the maximum (on the bound of its simplex)."""
    rng = np.random.default_rng(3)
    ylab = (rng.random(150) < 0.3).astype(int)

    def scores(y):
        return special.expit(2.5 * ((2 * y - 1) * 0.75 + rng.standard_normal(y.size)))
    G, m = 12, 800
    y = rng.random(G * m) < np.repeat(np.linspace(0.05, 0.6, G), m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return URC(scores(ylab), ylab, n_bins=8).fit(
            scores(y.astype(int)), groups=np.repeat(np.arange(G), m), lab_pseudocount=0.0)


@pytest.fixture(scope="module")
def fits():
    return {
        # 12 groups (dense modified steps): the lowest group's estimate falls to 0 when
        # another group's rate is held at its lower limit
        "12 groups": _fit(5, 12, 3000),
        # 70 groups, 1% positives in the lab set (modified steps by blocks)
        "70 groups, rare lab class": _fit(0, 70, 1500, lab_rate=0.01),
        "prior strength 2": _fit(3, 8, 400, prior_strength=2.0),
        "fixed likelihood": _fit(6, 20, 500, likelihood="fixed"),
        "M on its bound": _ml_fit(),
    }


def _points(res):
    """Every group's profile at the estimate +- 1, 2 and 3.5 standard errors (clipped to
    [0, 1]) and at 0: fresh ProfileLoglik objects (no slopes recorded yet)."""
    d, est = res._d, res._record.estimate
    curv = lik.ModeCurvature(d, est)
    se = np.sqrt(np.diag(res._cov.to_numpy()))
    lls, vals = [], []
    for g in range(d.F.shape[0]):
        ll = lik.profile_loglik(d, est, g, 1, res.llf_penalized, res._record.options, curv)
        for v in {0.0, *np.clip(est.P[g, 1] + se[g] * np.array([-3.5, -2, -1, 1, 2, 3.5]),
                                0, 1)}:
            lls.append(ll)
            vals.append(float(v))
    return lls, np.array(vals)


def _assert_scalar_route(lls, vals, got, ref_lls, which):
    """The stacked values ``got`` at the points ``which`` are the scalar route's (fresh
    ``ref_lls``), to the rounding of sums of 1e4-1e5 terms, and so are the slopes the
    stacked route recorded in ``lls``."""
    for i in which:
        assert got[i] == pytest.approx(ref_lls[i].loglik_at(vals[i]), abs=1e-7), (i, vals[i])
        slope, ref_slope = lls[i].slopes.get(vals[i], np.nan), ref_lls[i].slope(vals[i])
        if np.isfinite(ref_slope):
            assert slope == pytest.approx(ref_slope, rel=1e-5, abs=1e-4)
        else:
            assert np.isnan(slope)


@pytest.mark.parametrize("case", ["12 groups", "70 groups, rare lab class",
                                  "prior strength 2", "M on its bound"])
def test_points_equal_the_scalar_route(fits, case, monkeypatch):
    """Each point the stacked route solves has the scalar route's value (to the rounding of
    sums of 1e4-1e5 terms) and slope; it solves most points (the others are the scalar
    route's: NaN), and on these data it takes the steps onto a rate's bound and (rare lab
    class) the modified steps that the scalar route takes."""
    res = fits[case]
    assert all(_stacked.eligible(ll) for ll in _points(res)[0][:3])
    if case == "M on its bound":  # (cells of M held on the bound: its active face)
        assert (res._record.estimate.M < 1e-10).sum() == 2
    kinds = {"modified": 0, "bound": 0}
    steps, to_bound = _stacked._ascent_steps, _stacked._to_boundary

    def counted_steps(*args):
        out = steps(*args)
        kinds["modified"] += int((out[4] & ~out[3]).sum())
        return out

    def counted_bound(*args):
        out = to_bound(*args)
        kinds["bound"] += int(out[0].sum())
        return out

    monkeypatch.setattr(_stacked, "_ascent_steps", counted_steps)
    monkeypatch.setattr(_stacked, "_to_boundary", counted_bound)
    lls, vals = _points(res)
    got = _stacked.profile_points(lls, vals)
    solved = np.isfinite(got)
    assert solved.mean() > 0.7
    _assert_scalar_route(lls, vals, got, _points(res)[0], np.flatnonzero(solved))
    if case in ("12 groups", "70 groups, rare lab class"):
        assert kinds["bound"] > 0
    if case == "70 groups, rare lab class":
        assert kinds["modified"] > 0


def test_a_point_is_the_constrained_maximum(fits):
    """Against a direct optimisation of the same objective (BFGS on the logits of the rates
    and of M's rows, from the estimate), independent of either Newton route."""
    res = fits["prior strength 2"]
    d, est = res._d, res._record.estimate
    G, A = d.F.shape
    h, v = 3, float(np.clip(est.P[3, 1] + 0.05, 0, 1))
    ll = lik.profile_loglik(d, est, h, 1, res.llf_penalized, res._record.options)
    got = _stacked.profile_points([ll], [v])[0]
    free = np.arange(G) != h

    def unpack(u):
        x = np.full(G, v)
        x[free] = special.expit(u[:G - 1])
        M = special.softmax(u[G - 1:].reshape(2, A), axis=1)
        return np.column_stack([1 - x, x]), M

    def neg(u):
        return -lik.objective(*unpack(u), d)

    u0 = np.concatenate([special.logit(est.P[free, 1]), np.log(est.M).ravel()])
    opt = optimize.minimize(neg, u0, method="BFGS", options=dict(gtol=1e-8, maxiter=5000))
    assert np.isfinite(got)
    assert got == pytest.approx(-opt.fun + d.const, abs=1e-5)
    assert got >= -opt.fun + d.const - 1e-7


def test_intervals_equal_the_scalar_routes(fits, monkeypatch):
    """The results' intervals (every group's searches in lockstep, their points stacked)
    are those of the searches one at a time by the scalar route."""
    for res in fits.values():
        got = res._profile_intervals(0.05)
        # each profile's own search replays the lockstep one from its cache: the same limits,
        # bit for bit, without a new evaluation
        n_cached = sum(len(p._cache) for p in res._profiles.values())
        for g in range(len(res._groups)):
            alone = res._profiles[g, 1].conf_int(0.05)
            assert [alone["lower"], alone["upper"]] == got.iloc[g].tolist()
        assert sum(len(p._cache) for p in res._profiles.values()) == n_cached
        lls = [p._loglik_at.__self__ for p in res._profiles.values()]
        for ll in lls:
            ll.slopes.clear()
        for p in res._profiles.values():
            p._cache.clear()
        monkeypatch.setattr(_stacked, "eligible", lambda ll: False)
        ref = res._profile_intervals(0.05)
        monkeypatch.undo()
        np.testing.assert_allclose(got.to_numpy(), ref.to_numpy(), rtol=0, atol=1e-9)


def test_eligible_only_for_fits_without_a_penalty():
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = simulate_urc(n_lab=600, n_field=[300] * 3, lab_base_rates=[1 / 3] * 3,
                           field_base_rate=[[0.5, 0.3, 0.2]] * 3, separation=1.5, rng=rng)
        three = URC(sim.lab_pred, sim.lab_y).fit(sim.field_pred, groups=sim.field_group)
        three_fixed = URC(sim.lab_pred, sim.lab_y).fit(sim.field_pred, groups=sim.field_group,
                                                       likelihood="fixed")
    binary = _fit(2, 3, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fixed = _fit(2, 3, 300, likelihood="fixed")

    def ll(res, cls=1):
        return res._profiles[0, cls]._loglik_at.__self__
    assert _stacked.eligible(ll(binary)) and _stacked.eligible(ll(fixed))
    # (class 0's profile of a binary fit: not one the intervals use)
    assert not _stacked.eligible(ll(binary, 0))
    # three classes: every class's profile, under either likelihood
    assert all(_stacked.eligible(ll(three, j)) and _stacked.eligible(ll(three_fixed, j))
               for j in range(3))


@pytest.mark.parametrize("strength", [0.0, 1.0])
def test_fixed_likelihood_points_are_the_groups_own_objective(strength):
    """Under the fixed likelihood a binary group's profile is its objective at the point
    (nothing else moves): the stacked values and slopes are the scalar route's, also at 0
    and 1 (the prior's -inf: -1e300 there, no slope) and next to them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _fit(4, 6, 400, lowest=0.0, likelihood="fixed", prior_strength=strength)
    vals = np.array([0.0, 1e-9, 0.05, 0.3, 0.999, 1.0])
    lls = [res._profiles[g, 1]._loglik_at.__self__ for g in range(6)]
    pts = [(ll, v) for ll in lls for v in vals]
    got = _stacked.profile_points([p for p, _ in pts], np.array([v for _, v in pts]))
    for (ll, v), val in zip(pts, got, strict=True):
        fresh = lik.ProfileLoglik(ll.data, ll.group, ll.cls,
                                  lik.Estimate(*ll.mode, np.nan, None), ll.offset, ll.options)
        assert val == pytest.approx(fresh.loglik_at(v), rel=1e-13, abs=1e-10)
        ref = fresh.slope(v)
        if np.isnan(ref):
            assert v not in ll.slopes
        else:
            assert ll.slopes[v] == pytest.approx(ref, rel=1e-10)
    assert (got == -1e300).sum() == (12 if strength else 0)


def _assert_bootstrap_as_scalar(res, n_boot, seed, monkeypatch):
    """``bootstrap_lr``'s statistics with each resample's constrained fits solved together
    (most of them: the stacked route solves over 70%) are those of the scalar route alone,
    from the same draws."""
    d, est, opts = res._d, res._record.estimate, res._record.options
    targets = list(res._free_index)
    solved = []

    def counted(*args, entry_fits=_stacked.entry_fits):
        out = entry_fits(*args)
        solved.append(out[1].mean())
        return out
    monkeypatch.setattr(_stacked, "entry_fits", counted)
    R, at = lik.bootstrap_lr(d, est, targets, n_boot, np.random.default_rng(seed), opts)
    monkeypatch.setattr(_stacked, "entry_fits",
                        lambda d, s, g, v, c=None: (np.full(len(v), np.nan),
                                                    np.zeros(len(v), dtype=bool)))
    R0, at0 = lik.bootstrap_lr(d, est, targets, n_boot, np.random.default_rng(seed), opts)
    monkeypatch.undo()
    assert len(solved) == n_boot and np.mean(solved) > 0.7
    np.testing.assert_array_equal(at, at0)
    np.testing.assert_allclose(R, R0, rtol=0, atol=1e-7)


def test_bootstrap_statistics_equal_the_scalar_routes(fits, monkeypatch):
    """The Bartlett factors' parametric bootstrap: each resample's constrained fits at the
    estimates, solved together, give the scalar route's statistics (the same draws)."""
    for case in ("12 groups", "70 groups, rare lab class", "prior strength 2",
                 "M on its bound"):
        _assert_bootstrap_as_scalar(fits[case], 4, 3, monkeypatch)


# ---------------------------------------------------------------------------------------------
# Three or more classes: the runs that keep the face they start on
# ---------------------------------------------------------------------------------------------
def _multiclass_fit(seed, G, k, m=600, n_lab=900, concentration=2.0, **fit):
    """A joint fit of ``G`` groups of ``k`` classes, each group's base rates drawn from a
    Dirichlet(``concentration``) (some rates near 0)."""
    rng = np.random.default_rng(seed)
    rates = rng.dirichlet(concentration * np.ones(k), size=G)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = simulate_urc(n_lab=n_lab, n_field=[m] * G, lab_base_rates=[1 / k] * k,
                           field_base_rate=rates, separation=1.5, rng=rng)
        return URC(sim.lab_pred, sim.lab_y).fit(sim.field_pred, groups=sim.field_group, **fit)


@pytest.fixture(scope="module")
def multiclass_fits():
    return {"3 classes, 20 groups": _multiclass_fit(0, 20, 3),
            "4 classes, 8 groups, prior strength 1": _multiclass_fit(1, 8, 4,
                                                                     prior_strength=1.0),
            "4 classes, 8 groups, fixed likelihood": _multiclass_fit(2, 8, 4,
                                                                     likelihood="fixed")}


def _multiclass_points(res):
    """Every rate's profile at the estimate +- 0.02, 0.05 and 0.12 (clipped to [0, 1]) and at
    0: fresh ProfileLoglik objects."""
    d, est = res._d, res._record.estimate
    curv = lik.ModeCurvature(d, est) if d.joint else None
    lls, vals = [], []
    for g, j in res._free_index:
        ll = lik.profile_loglik(d, est, g, j, res.llf_penalized, res._record.options, curv)
        for v in {0.0, *np.clip(est.P[g, j] + np.array([-0.12, -0.05, -0.02, 0.02, 0.05,
                                                        0.12]), 0, 1)}:
            lls.append(ll)
            vals.append(float(v))
    return lls, np.array(vals)


@pytest.mark.parametrize("case", ["3 classes, 20 groups",
                                  "4 classes, 8 groups, prior strength 1",
                                  "4 classes, 8 groups, fixed likelihood"])
def test_multiclass_points_equal_the_scalar_route(multiclass_fits, case):
    """Each point the stacked route solves has the scalar route's value and slope; it
    solves most points, and leaves to the scalar route those whose run reaches a bound
    (under the joint likelihood a rate held at 0 moves M far)."""
    res = multiclass_fits[case]
    lls, vals = _multiclass_points(res)
    assert all(_stacked.eligible(ll) for ll in lls)
    got = _stacked.profile_points(lls, vals)
    solved = np.isfinite(got)
    assert solved.mean() > (0.9 if res.likelihood == "fixed" else 0.7)
    if res.likelihood == "joint":
        assert not solved.all()
    _assert_scalar_route(lls, vals, got, _multiclass_points(res)[0], np.flatnonzero(solved))


def test_multiclass_points_with_rates_on_the_bound(monkeypatch):
    """Small groups of four classes, rates drawn near the corners: many groups' estimates have
    rates at 0, in every class. The stacked runs hold them there (the scalar route's active
    face), with a basis of its own for a group whose reference rate is among them; the points
    they solve have the scalar route's values and slopes."""
    res = _multiclass_fit(4, 30, 4, m=80, n_lab=1000, concentration=0.4)
    P = res._record.estimate.P
    assert (P < 1e-10).any(axis=0).all()  # (no class is positive in every group)
    own = []
    bases = _stacked._own_bases

    def counted(*args):
        out = bases(*args)
        own.append(out[0].size)
        return out
    monkeypatch.setattr(_stacked, "_own_bases", counted)
    lls, vals = _multiclass_points(res)
    got = _stacked.profile_points(lls, vals)
    solved = np.isfinite(got)
    assert solved.mean() > 0.4 and max(own) > 0  # (about 0.55; none before session 90)
    _assert_scalar_route(lls, vals, got, _multiclass_points(res)[0], np.flatnonzero(solved)[::3])


def test_a_multiclass_point_is_the_constrained_maximum(multiclass_fits):
    """Against BFGS on the logits of every row (the held row's other rates sharing the rest),
    independent of either Newton route."""
    res = multiclass_fits["4 classes, 8 groups, prior strength 1"]
    d, est = res._d, res._record.estimate
    (G, A), k = d.F.shape, d.L.shape[0]
    h, j = 2, 1
    v = float(np.clip(est.P[h, j] + 0.06, 0, 1))
    ll = lik.profile_loglik(d, est, h, j, res.llf_penalized, res._record.options)
    got = _stacked.profile_points([ll], [v])[0]
    others = np.arange(k) != j

    def unpack(u):
        P = special.softmax(u[:G * k].reshape(G, k), axis=1)
        P[h] = 0.0
        P[h, others] = (1 - v) * special.softmax(u[h * k:(h + 1) * k][others])
        P[h, j] = v
        return P, special.softmax(u[G * k:].reshape(k, A), axis=1)

    def neg(u):
        return -lik.objective(*unpack(u), d)

    u0 = np.concatenate([np.log(est.P).ravel(), np.log(est.M).ravel()])
    opt = optimize.minimize(neg, u0, method="BFGS", options=dict(gtol=1e-8, maxiter=20000))
    assert np.isfinite(got)
    assert got == pytest.approx(-opt.fun + d.const, abs=1e-5)
    assert got >= -opt.fun + d.const - 1e-7


def test_multiclass_intervals_equal_the_scalar_routes(multiclass_fits, monkeypatch):
    """The results' intervals with the points stacked are the scalar route's."""
    for res in multiclass_fits.values():
        got = res._profile_intervals(0.05)
        for p in res._profiles.values():
            p._cache.clear()
            p._loglik_at.__self__.slopes.clear()
        monkeypatch.setattr(_stacked, "eligible", lambda ll: False)
        ref = res._profile_intervals(0.05)
        monkeypatch.undo()
        np.testing.assert_allclose(got.to_numpy(), ref.to_numpy(), rtol=0, atol=1e-9)


def test_small_cholesky_factors():
    """The inverses of the stacked Cholesky factors against numpy; a matrix that is not
    positive definite is flagged."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3, 4, 4))
    A = X @ X.swapaxes(2, 3) + 0.1 * np.eye(4)
    A[7, 2] = np.diag([1.0, 2.0, -0.5, 3.0])
    Ci, pd_ = _stacked._cholesky_inverse(A)
    assert not pd_[7, 2] and pd_.sum() == 149
    assert Ci.flags.c_contiguous
    np.testing.assert_allclose(Ci[pd_], np.linalg.inv(np.linalg.cholesky(A[pd_])),
                               rtol=1e-10, atol=1e-10)


def _cholesky_by_columns(A):
    """Session 90's stacked Cholesky factors (operations on the trailing axes), the reference
    of :func:`test_cholesky_inverse_by_planes_is_the_columns_bit_for_bit`."""
    n = A.shape[-1]
    C = np.zeros(A.shape)
    pd_ = np.ones(A.shape[:-2], dtype=bool)
    for j in range(n):
        piv = A[..., j, j] - (C[..., j, :j] ** 2).sum(axis=-1)
        pd_ &= piv > 0
        C[..., j, j] = np.sqrt(np.where(piv > 0, piv, 1.0))
        for i in range(j + 1, n):
            C[..., i, j] = (A[..., i, j] - (C[..., i, :j] * C[..., j, :j]).sum(axis=-1)) \
                / C[..., j, j]
    return C, pd_


def _forward_by_columns(C, B):
    """Session 90's substitution ``C^-1 B`` over the trailing axes (the reference)."""
    Y = B
    for i in range(C.shape[-1]):
        for j in range(i):
            Y[..., i, :] -= C[..., i, j, None] * Y[..., j, :]
        Y[..., i, :] /= C[..., i, i, None]
    return Y


@pytest.mark.parametrize("q", [1, 2, 3, 4])
def test_cholesky_inverse_by_planes_is_the_columns_bit_for_bit(q):
    """:func:`_stacked._cholesky_inverse` (each entry of the stack on a plane) gives the bits
    of the factorisation and substitution on the stack's trailing axes that it replaced
    (session 94), for every positive definite matrix, and flags the same others."""
    rng = np.random.default_rng(q)
    for trial in range(10):
        B = rng.standard_normal((40, 25, q, q + 2))
        A = B @ B.swapaxes(-1, -2)
        if trial % 2:
            A[..., 0, 0] -= rng.uniform(0, 5, A.shape[:2])  # some not positive definite
        C0, pd0 = _cholesky_by_columns(A)
        ref = _forward_by_columns(C0, np.broadcast_to(np.eye(q), C0.shape).copy())
        got, pd1 = _stacked._cholesky_inverse(A)
        np.testing.assert_array_equal(pd1, pd0)
        assert 0 < pd0.sum() and (trial % 2 == 0 or not pd0.all())
        np.testing.assert_array_equal(got[pd0].view(np.int64), ref[pd0].view(np.int64))


@pytest.mark.parametrize("case", ["4 classes, 8 groups, prior strength 1",
                                  "4 classes, 8 groups, fixed likelihood"])
def test_multiclass_runs_take_the_scalar_routes_newton_steps(multiclass_fits, case,
                                                             monkeypatch):
    """The same Newton iterations as the scalar route (``_warm_newton``) from the same start:
    the same count at each point (an inexact Hessian still reaches the maximum, in more
    steps)."""
    res = multiclass_fits[case]
    lls, vals = _multiclass_points(res)
    ref_lls, _ = _multiclass_points(res)
    steps, iters = _stacked._newton_k, []
    warm = lik._warm_newton

    def counted(*args):
        iters[-1] += 1
        return steps(*args)

    def warm_counted(*args, **kw):
        out = warm(*args, **kw)
        iters.append(out.convergence.iterations if out is not None else -1)
        return out
    monkeypatch.setattr(_stacked, "_newton_k", counted)
    monkeypatch.setattr(lik, "_warm_newton", warm_counted)
    compared = 0
    for i in range(0, len(vals), 3):
        iters.append(-1)  # (the stacked run's Hessians: its steps and the last check)
        if not np.isfinite(_stacked.profile_points([lls[i]], vals[i:i + 1])[0]):
            continue
        ref_lls[i].loglik_at(vals[i])
        assert iters[-2] == iters[-1], (i, vals[i])
        compared += 1
    assert compared > 15


def test_multiclass_bootstrap_statistics_equal_the_scalar_routes(multiclass_fits, monkeypatch):
    """The Bartlett factors' bootstrap of a fit of several classes: each resample's
    constrained fits solved together give the scalar route's statistics (the same draws)."""
    for case in ("3 classes, 20 groups", "4 classes, 8 groups, prior strength 1"):
        _assert_bootstrap_as_scalar(multiclass_fits[case], 3, 5, monkeypatch)


def test_multiclass_points_with_cells_of_M_on_the_bound():
    """Maximum-likelihood ``M`` (``lab_pseudocount=0``) from 90 lab items in 15 cells: cells
    of ``M`` at 0. The stacked runs hold them there while their KKT condition holds; the
    points they solve (none before session 90's last change) have the scalar route's values
    and slopes."""
    rng = np.random.default_rng(5)
    rates = rng.dirichlet(2 * np.ones(3), size=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = simulate_urc(n_lab=90, n_field=[500] * 10, lab_base_rates=[1 / 3] * 3,
                           field_base_rate=rates, separation=3.0, rng=rng)
        res = URC(sim.lab_pred, sim.lab_y, n_bins=5).fit(
            sim.field_pred, groups=sim.field_group, lab_pseudocount=0.0)
    assert (res._record.estimate.M < 1e-10).sum() >= 10
    lls, vals = _multiclass_points(res)
    got = _stacked.profile_points(lls, vals)
    solved = np.isfinite(got)
    assert solved.mean() > 0.15
    _assert_scalar_route(lls, vals, got, _multiclass_points(res)[0], np.flatnonzero(solved))


def _newton_iterations(monkeypatch):
    """The Newton iterations of the scalar route's runs, counted."""
    runs = []
    newton = lik.newton_maximize

    def counted(*args, **kwargs):
        out = newton(*args, **kwargs)
        runs.append(out[4].iterations)
        return out
    monkeypatch.setattr(lik, "newton_maximize", counted)
    return runs


def test_longer_moves_reach_the_same_points_in_fewer_iterations(monkeypatch):
    """Where a full Newton step raises a rate or cell near the bound by half of it or more,
    the scalar route tries the move its log term predicts (``_Problem.extend``). 15 groups of
    four classes with a lab set of 60 (rates near 0 that steps overshoot onto the bound and
    then climb back from, doubling at each step): the same profile values as without the
    moves, in fewer Newton iterations (305 against 341)."""
    res = _multiclass_fit(1, 15, 4, m=400, n_lab=60, concentration=0.5, prior_strength=0.5)
    vals = _multiclass_points(res)[1][::4]
    runs = _newton_iterations(monkeypatch)
    with_moves = np.array([ll.loglik_at(v) for ll, v in
                           zip(_multiclass_points(res)[0][::4], vals, strict=True)])
    n_with = sum(runs)
    runs.clear()
    monkeypatch.setattr(lik, "_EXTEND_RATIO", np.inf)
    without = np.array([ll.loglik_at(v) for ll, v in
                        zip(_multiclass_points(res)[0][::4], vals, strict=True)])
    np.testing.assert_allclose(with_moves, without, rtol=0, atol=1e-9)
    assert n_with < 0.95 * sum(runs)


def test_binary_stacked_route_takes_the_longer_moves(fits, monkeypatch):
    """The binary stacked route takes the scalar route's longer moves at some points of these
    data (its values then differ, by rounding, from the same route without them) and gives
    the scalar route's values."""
    res = fits["70 groups, rare lab class"]
    lls, vals = _points(res)
    got = _stacked.profile_points(lls, vals)
    moves = lik.longer_moves

    def none(blocks):
        for has, new in moves(blocks):
            yield np.zeros_like(has), new
    monkeypatch.setattr(lik, "longer_moves", none)
    plain = _stacked.profile_points(_points(res)[0], vals)
    both = np.isfinite(got) & np.isfinite(plain)
    assert (got[both] != plain[both]).sum() > 0
    np.testing.assert_allclose(got[both], plain[both], rtol=0, atol=1e-8)
    monkeypatch.undo()
    moved = np.flatnonzero(both & (got != plain))
    _assert_scalar_route(lls, vals, got, _points(res)[0], moved)


@pytest.mark.parametrize("case", ["70 groups, rare lab class", "3 classes, 20 groups"])
def test_stacked_routes_take_the_longer_moves_wherever_the_scalar_route_does(
        fits, multiclass_fits, case, monkeypatch):
    """With the longer moves tried after every full step that raises any component by half of
    it or more (``_EXTEND_BELOW`` 1: far more often than by default), the stacked routes
    still give the scalar route's values: the binary route takes the same candidates, the
    multiclass route leaves those points to the scalar route."""
    monkeypatch.setattr(lik, "_EXTEND_BELOW", 1.0)
    res = {**fits, **multiclass_fits}[case]
    points = _multiclass_points if res._d.L.shape[0] > 2 else _points
    lls, vals = points(res)
    got = _stacked.profile_points(lls, vals)
    solved = np.flatnonzero(np.isfinite(got))
    assert solved.size > 0.3 * got.size
    _assert_scalar_route(lls, vals, got, points(res)[0], solved[::2])
