"""The smoothed empirical-likelihood bootstrap of DETM/SETM.

SCAR test (SETM against DETM): resamples are drawn from the fitted SETM (the null): source rows
and target positives from the EL weights ``p_i`` (the estimate of ``p_s``), target negatives
from ``p_i w2_i``; with smoothing, every row is jittered by ``N(0, h^2 S)`` and the negatives
are tilted so that the resampling world lies exactly inside SETM. Both models are refitted on
every resample.

Interval for pi (issue 19): resamples from the fitted DETM (:func:`detm_world`: target
positives from ``p_i w1_i``, negatives from ``p_i w2_i``, both tilts carried through the
smoothing the same way), refitted, give ``R*_b(pi-hat)``, the profile statistic at the world's
true pi; their quantile calibrates the cut-off of the profile interval.

Covariate-subset likelihood-ratio test (:func:`puinfer.lr_test` with ``reference="bootstrap"``,
session 78): resamples from the fitted restricted model (:func:`subset_world`: its EL weights
and tilts, the slopes carried to the full model's features, so that the null holds), smoothed
as above; both models refitted on every resample.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ...base.results import readonly
from ._data import prepare

__all__ = ["BootstrapWorld", "bandwidth", "bandwidth_for", "world", "sample", "statistic",
           "replicate", "DETMWorld", "detm_world", "sample_detm", "interval_statistic",
           "interval_replicate", "subset_map", "subset_world", "subset_replicate"]


@dataclass(frozen=True)
class BootstrapWorld:
    """The fitted SETM as a distribution on the pooled sample (read-only arrays).

    ``ps``: the EL weights ``p_i`` (source rows and target positives); ``pn``: ``p_i w2_i``
    (target negatives); ``pi``; ``pt = pi ps + (1 - pi) pn`` (the fitted target); ``L`` with
    ``L L' = S``, the EL-weighted source covariance with the rows and columns of two-valued
    (dummy) columns set to zero (they are not jittered); ``beta``: SETM's slopes on the scale
    of ``X``; ``smooth_cols``: the jittered columns."""

    ps: np.ndarray
    pn: np.ndarray
    pt: np.ndarray
    pi: float
    L: np.ndarray
    S: np.ndarray
    beta: np.ndarray
    smooth_cols: np.ndarray


def bandwidth(data, smooth) -> float:
    """Kernel bandwidth of the smoothed bootstrap (in units of the source covariance):
    Silverman's rule ``(4 / (p + 2))^(1/(p+4)) N^(-1/(p+4))`` or the number given."""
    return bandwidth_for(data.N, data.p, smooth)


def bandwidth_for(N: int, p: int, smooth) -> float:
    """:func:`bandwidth` for ``N`` rows and ``p`` features."""
    if check_smooth(smooth) == "silverman":
        return float((4 / (p + 2)) ** (1 / (p + 4)) * N ** (-1 / (p + 4)))
    return float(smooth)


def check_smooth(smooth):
    """``smooth`` if it is ``"silverman"`` or a finite number >= 0, else ``ValueError`` (needs
    no data: :meth:`~puinfer.models.detm.results.DETMResults.test_scar` checks it before its
    ``reference="chi2"`` branch, which does not use it)."""
    if isinstance(smooth, str):
        if smooth != "silverman":
            raise ValueError(f"smooth must be 'silverman' or a number >= 0; got {smooth!r}")
        return smooth
    if isinstance(smooth, bool) or not isinstance(smooth, (int, float, np.floating)) \
            or not np.isfinite(smooth) or smooth < 0:
        raise ValueError(f"smooth must be 'silverman' or a number >= 0; got {smooth!r}")
    return smooth


def _tilted_probs(ps, eta, shift: bool = True) -> np.ndarray:
    """``p_i exp(eta_i)`` normalised (``shift``: computed as ``exp(eta - max eta)``). Where a
    tilt diverges (``penalty="none"`` on separated data) the largest ``eta`` can sit on rows
    of EL weight 0, every other term underflows, and the sum is 0 (or ``inf * 0``): numpy's
    "Probabilities contain NaN" from every bootstrap (session 85's audit). Those are
    computed in logs over the rows of positive weight; elsewhere the product as it was
    (the same draws)."""
    with np.errstate(over="ignore", invalid="ignore"):
        pr = ps * np.exp(eta - eta.max() if shift else eta)
        tot = pr.sum()
    if np.isfinite(tot) and tot > 0:
        return pr / tot
    pos = ps > 0
    lw = np.full(eta.shape, -np.inf)
    lw[pos] = np.log(ps[pos]) + eta[pos]
    pr = np.exp(lw - lw[pos].max())
    return pr / pr.sum()


def world(data, setm) -> BootstrapWorld:
    """The resampling world of the fitted SETM ``setm`` (a fit record or results)."""
    p = data.p
    ps = _el_weights(setm)
    a2, b2 = setm.theta[p + 1], setm.theta[p + 2:]
    pn = _tilted_probs(ps, a2 + data.Z @ b2, shift=False)
    pt = setm.pi * ps + (1 - setm.pi) * pn
    L, S, smooth_cols = _kernel(data.X, ps)
    return BootstrapWorld(readonly(ps), readonly(pn), readonly(pt / pt.sum()), float(setm.pi),
                          readonly(L), readonly(S), readonly(b2 / data.sd),
                          readonly(smooth_cols))


def _el_weights(fit) -> np.ndarray:
    """A fit's EL weights ``p_i`` (a record's or a results object's, which is labelled),
    normalised."""
    ps = np.asarray(fit.el_weights, dtype=float)
    return ps / ps.sum()


def _kernel(X, ps, smooth_cols=None):
    """``(L, S, smooth_cols)`` of the smoothing kernel on rows ``X`` weighted by ``ps``: ``S``
    the weighted covariance with the rows and columns of two-valued (dummy) columns set to zero
    (they are not jittered; ``smooth_cols`` given: the columns jittered), ``L L' = S``."""
    Xc = X - ps @ X
    S = Xc.T @ (Xc * ps[:, None])
    if smooth_cols is None:
        smooth_cols = np.array([np.unique(X[:, j]).size > 2 for j in range(X.shape[1])])
    S = S * np.outer(smooth_cols, smooth_cols)
    try:
        L = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:  # singular (dummy columns): L = V diag(sqrt(w))
        w, V = np.linalg.eigh(S)
        L = V * np.sqrt(np.clip(w, 0, None))
    return L, S, smooth_cols


def sample(data, w: BootstrapWorld, rng: np.random.Generator, smooth: float = 0.0):
    """One resample ``(Xs, Xt)`` from the fitted null (SETM).

    Discrete (``smooth=0``): source rows and target positives (``Binomial(m, pi)`` of the
    target rows) are drawn from ``p_i``, target negatives from ``p_i w2_i``.

    Smoothed (``smooth = h > 0``): every row is jittered by ``N(0, V)``, ``V = h^2 S``, and
    the negatives are the smoothed source tilted by ``exp(a* + beta*'x)``. Because
    ``exp(b'x) phi(x; x_i, V) = exp(b'x_i + b'Vb / 2) phi(x; x_i + Vb, V)``, that is:
    negatives drawn from ``p_i exp(beta*'x_i)`` (normalised) and shifted by ``V beta*``, so
    the world lies exactly inside SETM whatever the distribution of the data. The tilt is
    ``beta* = beta / sqrt(1 + h^2)`` on the jittered columns: jittering inflates the
    within-component covariance by ``1 + h^2``, and this tilt inflates the distance between
    the component means by ``sqrt(1 + h^2)`` with it, so the world is (for Gaussian components
    exactly) an affine image of the fitted one, with the same separation of the components and
    the same pi; ``R_N`` is affine invariant.
    """
    m_pos = rng.binomial(data.m, w.pi)
    if smooth:
        # jittered columns only: unjittered (dummy) columns keep their spread and tilt
        beta = np.where(w.smooth_cols, w.beta / np.sqrt(1 + smooth ** 2), w.beta)
        pn = _tilted_probs(w.ps, data.X @ beta)
    else:
        pn = w.pn
    i_s = rng.choice(data.N, size=data.n, p=w.ps)
    i_t = np.r_[rng.choice(data.N, size=m_pos, p=w.ps),
                rng.choice(data.N, size=data.m - m_pos, p=pn)]
    Xs, Xt = data.X[i_s], data.X[i_t]
    if smooth:
        Xs = Xs + smooth * rng.standard_normal(Xs.shape) @ w.L.T
        Xt = Xt + smooth * rng.standard_normal(Xt.shape) @ w.L.T
        Xt[m_pos:] += smooth ** 2 * (w.S @ beta)
    return Xs, Xt


def statistic(detm, setm, Xs, Xt, refit: str = "quick") -> float:
    """``R*`` on a resample (design rows ``Xs`` and ``Xt``), given the observed DETM and SETM
    results. ``refit="full"`` fits both models exactly as the observed ones were fitted (every
    start, the hops and the profile probe), with the original solutions as extra starts;
    ``"quick"`` fits from the original solutions' parameter vectors (on the observed data's
    standardisation, taken as they are on the resample's own) and a reduced grid of starts,
    without the probe."""
    return _statistic(detm._fit, setm._fit.v, detm.model.data.names, Xs, Xt, refit)


def _statistic(fit, setm_v, names, Xs, Xt, refit: str) -> float:
    from .model import fit_data  # the estimation entry point shared with DETM/SETM.fit

    dat = prepare(Xs, Xt, names=names)
    opts = dict(c=fit.penalty_strength, label_rule="kl", maxiter=fit.maxiter, tol=fit.tol,
                check_separation=False, probe=refit == "full", lean=refit != "full")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s_opts = dict(setm_start=setm_v, grid=True)
        s_b = fit_data(dat, True, start_options=s_opts, **opts)[0]
        if refit == "full":
            # SETM also as the observed SETM was fitted (its grid, moment starts, hops and the
            # probe; from the original solution and the grid alone it missed that maximum in 9
            # of 40 resamples of a SCAR world, by up to 1.4: R* too high; session 74)
            s_all = fit_data(dat, True, **opts)[0]
            if s_all.llf_penalized > s_b.llf_penalized:
                s_b = s_all
            extra = [("original DETM", fit.v), ("resample SETM", s_b.v)]
            d_opts = dict(extra_starts=extra)
        else:
            # DETM's own SETM starts are s_opts on the same data: reuse s_b's runs (whose
            # best, s_b's solution, is then DETM's first start, "SETM solution")
            d_opts = dict(s_opts, extra_starts=[("original DETM", fit.v)],
                          setm_runs=list(s_b.runs))
        d_b = fit_data(dat, False, start_options=d_opts, **opts)[0]
    return max(0.0, 2 * (d_b.llf_penalized - s_b.llf_penalized))


def _each_sample(stat, samples, fail=float("nan")) -> list:
    """``stat(Xs, Xt)`` on each ``(Xs, Xt)`` of ``samples``; ``fail`` where one cannot be
    fitted (``ValueError``, e.g. a resample with a constant column)."""
    out = []
    for Xs, Xt in samples:
        try:
            out.append(stat(Xs, Xt))
        except ValueError:
            out.append(fail)
    return out


def _statistics(fit, setm_v, names, refit, samples) -> list:
    """:func:`_statistic` on each ``(Xs, Xt)`` of ``samples`` (NaN where one cannot be
    fitted); module level, so that worker processes can run it."""
    return _each_sample(lambda Xs, Xt: _statistic(fit, setm_v, names, Xs, Xt, refit), samples)


def check_n_jobs(n_jobs) -> int:
    """``n_jobs`` as a positive number of processes (``-1``: every CPU)."""
    import os

    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or \
            n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs must be a positive integer or -1 (every CPU); got {n_jobs!r}")
    return int(os.cpu_count() or 1) if n_jobs == -1 else int(n_jobs)


def _one_blas_thread() -> None:
    """Initializer of the bootstrap's worker processes: one BLAS (and OpenMP) thread each.
    The refits' linear algebra is on small matrices, where BLAS threads do not shorten the
    wall time but, one pool per worker, oversubscribe the cores (issue 17, session 44: the
    SCAR test with ``n_jobs=2`` on two cores took 9.9 s with OpenBLAS's default threads, 3.1 s
    with one, against 5.9 s in one process)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)


def _in_processes(func, args, draw, n_boot, n_jobs) -> list:
    """``func(*args, samples)`` (a module-level function returning one value per sample) on
    ``n_boot`` samples ``draw()``, drawn in order; in ``n_jobs`` processes over interleaved
    chunks of the samples, the results in the order of the draws, whatever ``n_jobs``. With
    one process each sample is drawn when it is fitted (one in memory at a time); worker
    processes use one BLAS thread each (:func:`_one_blas_thread`)."""
    if n_jobs == 1 or n_boot < 2:
        return list(func(*args, (draw() for _ in range(n_boot))))
    from concurrent.futures import ProcessPoolExecutor

    samples = [draw() for _ in range(n_boot)]

    k = min(len(samples), 4 * n_jobs)  # a few chunks per process, for balance
    chunks = [samples[i::k] for i in range(k)]
    with ProcessPoolExecutor(max_workers=n_jobs, initializer=_one_blas_thread) as ex:
        res = list(ex.map(func, *zip(*[(*args, c) for c in chunks], strict=True)))
    out = [None] * len(samples)
    for i, r in enumerate(res):
        out[i::k] = r
    return out


def replicate(detm, setm, n_boot: int, rng: np.random.Generator, refit: str = "quick",
              smooth: float = 0.0, n_jobs: int = 1) -> np.ndarray:
    """``n_boot`` bootstrap statistics (NaN where a resample cannot be fitted).

    Every resample is drawn first (in order, from ``rng``), then refitted, in ``n_jobs``
    processes if more than one: the statistics do not depend on ``n_jobs``."""
    data = detm.model.data
    n_jobs = check_n_jobs(n_jobs)
    w = world(data, setm)
    args = (detm._fit, setm._fit.v, data.names, refit)
    out = _in_processes(_statistics, args, lambda: sample(data, w, rng, smooth), n_boot, n_jobs)
    return np.asarray(out, dtype=float)


# -- the interval for pi: resampling from the fitted DETM -----------------------------------
@dataclass(frozen=True)
class DETMWorld:
    """The fitted DETM as a distribution on the pooled sample (read-only arrays): ``ps`` the
    EL weights ``p_i``; ``pi``; ``beta1``, ``beta2`` the slopes on the scale of ``X``; ``L``,
    ``S`` and ``smooth_cols`` as in :class:`BootstrapWorld`."""

    ps: np.ndarray
    pi: float
    beta1: np.ndarray
    beta2: np.ndarray
    L: np.ndarray
    S: np.ndarray
    smooth_cols: np.ndarray


def detm_world(data, fit) -> DETMWorld:
    """The resampling world of a fitted DETM (a fit record or results; a SETM fit gives the
    world with ``beta1 = 0``, the target positives drawn as the source)."""
    p = data.p
    base = world(data, fit)  # p_s, its covariance and the jittered columns
    return DETMWorld(base.ps, float(fit.pi), readonly(fit.theta[1:p + 1] / data.sd),
                     readonly(fit.theta[p + 2:] / data.sd), base.L, base.S, base.smooth_cols)


def _tilted(data, w, beta, rng, size, smooth):
    """``size`` rows of the smoothed source tilted by ``exp(beta'x)`` (see :func:`sample`):
    rows drawn from ``p_i exp(beta*'x_i)``, jittered by ``N(0, h^2 S)`` and shifted by
    ``h^2 S beta*``, ``beta* = beta / sqrt(1 + h^2)`` on the jittered columns."""
    b = np.where(w.smooth_cols, beta / np.sqrt(1 + smooth ** 2), beta) if smooth else beta
    X = data.X[rng.choice(data.N, size=size, p=_tilted_probs(w.ps, data.X @ b))]
    if smooth:
        X = X + smooth * rng.standard_normal(X.shape) @ w.L.T + smooth ** 2 * (w.S @ b)
    return X


def sample_detm(data, w: DETMWorld, rng: np.random.Generator, smooth: float = 0.0):
    """One resample ``(Xs, Xt)`` from the fitted DETM: ``n`` source rows from ``p_s``, and
    ``m`` target rows of which ``Binomial(m, pi)`` from component 1 (``p_s`` tilted by
    ``beta1``) and the rest from component 2 (tilted by ``beta2``); smoothed as :func:`sample`
    (the world is then, for Gaussian components exactly, an affine image of the fitted DETM
    with the same pi)."""
    m_pos = rng.binomial(data.m, w.pi)
    zero = np.zeros(data.p)
    Xs = _tilted(data, w, zero, rng, data.n, smooth)
    Xt = np.vstack([_tilted(data, w, w.beta1, rng, m_pos, smooth),
                    _tilted(data, w, w.beta2, rng, data.m - m_pos, smooth)])
    return Xs, Xt


def interval_statistic(res, Xs, Xt, pi0: float) -> tuple[float, float]:
    """``(R*_b(pi0), pi-hat_b)`` on a resample: the model refitted (from the original solution's
    parameter vector taken as it is on the resample's standardisation, the SETM start and a
    reduced grid; no probe) and profiled at ``pi0`` from the resample's fit
    and the original fit, over the labelled parameter space of the fit's label rule (under
    the KL rule with the labelled maximum on the label boundary where only an unlabelled
    solution is above every labelled one, as the data's profile takes it)."""
    return _interval_statistic(res._fit, res.model.data.names, Xs, Xt, pi0)


def _interval_statistic(fit, names, Xs, Xt, pi0: float) -> tuple[float, float]:
    from ._profile import PiProfiler
    from ._starts import fit_fixed_pi
    from .model import fit_data

    p = Xs.shape[1]
    restricted = fit.restricted
    dat = prepare(Xs, Xt, names=names)
    setm_v = np.r_[fit.v[0], np.zeros(p), fit.v[p + 1:]]
    opts = dict(setm_start=setm_v, grid=True)
    if not restricted:
        opts["extra_starts"] = [("original DETM", fit.v)]
    rule = fit.label_rule if not restricted else "kl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = fit_data(dat, restricted, c=fit.penalty_strength, label_rule=rule,
                       maxiter=fit.maxiter, tol=fit.tol, check_separation=False, probe=False,
                       start_options=opts, lean=True)[0]
        prof = PiProfiler(dat, rec, np.nan, quick=True)
        best = best_any = -np.inf
        unlabelled = []  # converged unlabelled solutions above the best labelled one so far
        for th0 in (rec.theta, fit.theta):
            f, th, info = fit_fixed_pi(dat, restricted, pi0, th0, fit.penalty_strength,
                                       fit.maxiter, fit.tol)
            if not (info.converged and np.isfinite(f)):
                continue
            best_any = max(best_any, f)
            if f > best:
                if prof.labelled(th, pi0):
                    best = f
                else:
                    unlabelled.append((f, th))
        if unlabelled and prof._on_boundary_applies:
            # as the data's profile (PiProfiler.__call__): the labelled maximum on the label
            # boundary KL1 = KL2 where an unlabelled one lies above every labelled one (from
            # two starts, where the profile has many; studies/results/README_detm.md, (B53),
            # (B54), (B54b): coverage kept, inflated cut-offs gone)
            b = prof._on_boundary(pi0, unlabelled, (best,) if np.isfinite(best) else None)
            if b is not None:
                best = b.f
    best = best if np.isfinite(best) else best_any
    if not np.isfinite(best):
        return float("nan"), float(rec.pi)
    return max(0.0, 2 * (rec.llf_penalized - best)), float(rec.pi)


def _interval_statistics(fit, names, pi0, samples) -> list:
    """:func:`_interval_statistic` on each ``(Xs, Xt)`` of ``samples`` (NaNs where one cannot
    be fitted); module level, so that worker processes can run it."""
    return _each_sample(lambda Xs, Xt: _interval_statistic(fit, names, Xs, Xt, pi0), samples,
                        fail=(float("nan"), float("nan")))


def interval_replicate(res, n_boot: int, rng: np.random.Generator,
                       smooth: float = 0.0, n_jobs: int = 1) -> np.ndarray:
    """``(n_boot, 2)`` array of ``(R*_b(pi-hat), pi-hat_b)`` from the fitted model ``res``
    (NaN where a resample cannot be fitted). Every resample is drawn first (in order, from
    ``rng``), then refitted, in ``n_jobs`` processes if more than one: the draws do not
    depend on ``n_jobs``."""
    data = res.model.data
    n_jobs = check_n_jobs(n_jobs)
    w = detm_world(data, res._fit)
    args = (res._fit, data.names, float(res.pi))
    out = _in_processes(_interval_statistics, args,
                        lambda: sample_detm(data, w, rng, smooth), n_boot, n_jobs)
    return np.asarray(out, dtype=float).reshape(n_boot, 2)


# -- a covariate-subset likelihood-ratio test: resampling from the restricted fit ------------
def subset_map(small, big) -> np.ndarray:
    """``C``, ``(p_big + 1, p_small)``, with ``X_small = [1, X_big] C`` on the rows of both
    (exact where the models nest: the restricted features lie in the full ones' span)."""
    B = np.column_stack([np.ones(big.N), big.X])
    return np.linalg.lstsq(B, small.X, rcond=None)[0]


def subset_world(small_data, big_data, fit, C) -> DETMWorld:
    """The fitted restricted model ``fit`` (DETM or SETM on ``small_data``) as a distribution
    on the full model's rows: its EL weights and tilts, the slopes carried to the full
    features through ``C`` (:func:`subset_map`), the kernel of the full features. Its tilts
    are functions of the restricted features: the null holds in it."""
    p = small_data.p
    ps = _el_weights(fit)
    L, S, smooth_cols = _kernel(big_data.X, ps)
    # The smoothed world tilts by beta* = beta / sqrt(1 + h^2) on the jittered columns only:
    # a restricted feature that combines jittered and unjittered (dummy) columns of the full
    # model (span nesting) would have its tilt bent out of the restricted span (the null would
    # not hold; a review's reproducer: slope ratio 2.115 for the restricted 2). Such columns
    # are left unjittered together (a dummy stays two-valued, as in test_scar's bootstrap).
    C1 = C[1:]
    support = np.abs(C1) > 1e-8 * np.maximum(np.abs(C1).max(axis=0, keepdims=True), 1e-300)
    cols = smooth_cols.copy()
    changed = True
    while changed:
        changed = False
        for j in range(support.shape[1]):
            s = support[:, j]
            if cols[s].any() and not cols[s].all():
                cols[s], changed = False, True
    if not np.array_equal(cols, smooth_cols):
        L, S, smooth_cols = _kernel(big_data.X, ps, cols)
    b1 = C[1:] @ (fit.theta[1:p + 1] / small_data.sd)
    b2 = C[1:] @ (fit.theta[p + 2:] / small_data.sd)
    return DETMWorld(readonly(ps), float(fit.pi), readonly(b1), readonly(b2), readonly(L),
                     readonly(S), readonly(smooth_cols))


def _quick_fit(fit, names, Xs, Xt, extra=()):
    """A bootstrap refit of a DETM/SETM on a resample (no probe): from the original solution's
    parameter vector (taken as it is on the resample's standardisation), the SETM start and
    the reduced grid (:func:`_interval_statistic`'s refit), and ``extra`` starts (DETM)."""
    from .model import fit_data

    dat = prepare(Xs, Xt, names=names)
    p = dat.p
    if fit.restricted:
        opts = dict(setm_start=fit.v, grid=True)
    else:
        opts = dict(setm_start=np.r_[fit.v[0], np.zeros(p), fit.v[p + 1:]], grid=True,
                    extra_starts=[("original DETM", fit.v), *extra])
    rec = fit_data(dat, fit.restricted, c=fit.penalty_strength, label_rule="kl",
                   maxiter=fit.maxiter, tol=fit.tol, check_separation=False, probe=False,
                   start_options=opts, lean=True)[0]
    return dat, rec


def _subset_statistic(small, big, names, C, Xs, Xt) -> float:
    """``2 (l_full - l_restricted)`` on a resample (full-feature rows ``Xs``, ``Xt``): both
    models refitted quickly (:func:`_quick_fit`), the full one also from the restricted
    resample fit's solution carried to its features (so its maximum is at least that)."""
    from ._starts import v_from

    Xs_a, Xt_a = C[0] + Xs @ C[1:], C[0] + Xt @ C[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dat_a, r_a = _quick_fit(small, names[0], Xs_a, Xt_a)
        dat_b = prepare(Xs, Xt, names=names[1])
        # the restricted tilts a + Z_a b on the full features' standardised scale
        pa = dat_a.p
        D = (dat_b.sd[:, None] * C[1:]) / dat_a.sd[None, :]
        th = r_a.theta
        theta_b = np.r_[th[0], D @ th[1:pa + 1], th[pa + 1], D @ th[pa + 2:]]
        start = v_from(dat_b, False, theta_b, r_a.pi)
        _, r_b = _quick_fit(big, names[1], Xs, Xt, extra=[("restricted resample fit", start)])
    return max(0.0, 2 * (r_b.llf_penalized - r_a.llf_penalized))


def _subset_statistics(small, big, names, C, samples) -> list:
    """:func:`_subset_statistic` on each ``(Xs, Xt)`` of ``samples`` (NaN where one cannot be
    fitted); module level, so that worker processes can run it."""
    return _each_sample(lambda Xs, Xt: _subset_statistic(small, big, names, C, Xs, Xt), samples)


def subset_replicate(small, big, n_boot: int, rng: np.random.Generator, smooth: float = 0.0,
                     n_jobs: int = 1) -> np.ndarray:
    """``n_boot`` bootstrap likelihood-ratio statistics of the restricted results ``small``
    against the full DETM results ``big`` (fewer features, same rows), resampled from the
    fitted restricted model (:func:`subset_world`; NaN where a resample cannot be fitted).
    Drawn first, in order, then refitted in ``n_jobs`` processes: the statistics do not
    depend on ``n_jobs``."""
    a, b = small.model.data, big.model.data
    C = subset_map(a, b)
    w = subset_world(a, b, small._fit, C)
    args = (small._fit, big._fit, (a.names, b.names), C)
    out = _in_processes(_subset_statistics, args, lambda: sample_detm(b, w, rng, smooth),
                        n_boot, check_n_jobs(n_jobs))
    return np.asarray(out, dtype=float)
