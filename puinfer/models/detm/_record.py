"""The fit record of DETM/SETM: everything ``fit()`` estimated, computed once from the best
start (label switching resolved, exact log-EL, covariance, start diagnostics, separation)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from ..._validation import INFLUENCE_SHARE, largest_share
from ...base.numeric import logaddexp, softplus
from ...base.results import ConvergenceInfo, ReadOnlyArrays, readonly
from ...exceptions import (
    BoundaryWarning,
    ConvergenceWarning,
    InfluenceWarning,
    LabelAmbiguityWarning,
    PenaltyWarning,
    SeparationWarning,
    StartsDisagreeWarning,
)
from . import _el
from ._label import (
    LABEL_RULES,
    LabelCheck,
    kl_difference_se,
    kl_divergences,
    label_check,
    swap_needed,
)
from ._separation import check_separation
from ._starts import StartRun, fit_fixed_pi, free_fun, pi_of_v, theta_pi

__all__ = ["TiltFit", "build_record", "LABEL_RULES", "param_names", "to_original_map"]

@dataclass(frozen=True)
class TiltFit(ReadOnlyArrays):
    """What a DETM/SETM fit estimated (standardised scale unless said otherwise). A lean
    record (the bootstrap's refits, :func:`build_record`) has None for ``label_check``,
    ``params``, ``cov``, ``starts``, ``separated_points``, ``ridge_binding`` and
    ``pi_unpenalised``."""

    restricted: bool
    name: str
    penalty_strength: float
    label_rule: str
    maxiter: int
    tol: float
    v: np.ndarray                 # binary-regression solution, labels resolved
    theta: np.ndarray             # (a1, b1, a2, b2)
    pi: float
    labels_swapped: bool
    kl_divergences: tuple
    label_check: LabelCheck | None   # None for SETM (no switching)
    llf: float
    llf_penalized: float
    llf_method: str
    lagrange_multipliers: np.ndarray
    el_weights: np.ndarray
    omega: np.ndarray             # posterior of component 1 on the target rows
    params: pd.Series             # user's scale
    cov: pd.DataFrame             # user's scale
    convergence: ConvergenceInfo
    runs: tuple                   # StartRun
    starts: pd.DataFrame
    n_starts_at_best: int
    separated_points: np.ndarray | None
    ridge_binding: bool | None
    warnings: tuple               # (category name, message)
    seed: int = 0                 # of the search's random moves (basin hopping)
    pi_unpenalised: float | None = None  # pi at the unpenalised maximum nearest the fit


#: a ``PenaltyWarning`` when the ridge moves pi-hat from the unpenalised maximum nearest the
#: fit by more than this many standard errors (observed information). The default vanishing
#: ridge moved it by at most 0.09 SE on 48 SAR and SCAR samples (n = m = 300-3000, p = 5 and
#: 15, SETM and DETM; session 74); an uncentred ``age + I(age**2)`` by 0.42 (SETM) and 0.93
#: (DETM) at n = m = 500
RIDGE_SHIFT_SE = 0.25


def param_names(names) -> list:
    return (["alpha1"] + [f"beta1[{c}]" for c in names] + ["alpha2"]
            + [f"beta2[{c}]" for c in names] + ["pi"])


def to_original_map(data) -> np.ndarray:
    """Linear map J with ``params_original = J @ (a1, b1, a2, b2, pi)`` (standardised)."""
    k = data.p + 1
    J = np.eye(2 * k + 1)
    for t in range(2):
        o = t * k
        J[o + 1:o + k, o + 1:o + k] = np.diag(1.0 / data.sd)
        J[o, o + 1:o + k] = -data.mean / data.sd
    return J


def labelled_pi(data, restricted, rule, v) -> float:
    pi = pi_of_v(data, v)
    if not restricted and swap_needed(data, v, pi, rule):
        pi = 1 - pi
    return pi


def normalise_alphas(data, restricted: bool, v, theta) -> np.ndarray:
    """``theta`` with each alpha_t set so that its constraint (10), ``sum_i p_i w_t(x_i) = 1``,
    holds exactly under the EL weights of the binary-regression solution ``v``.

    At an interior maximum ``alpha_t = s_t - log(m pi_t / n)`` satisfies it to the Newton
    tolerance already (nothing changes). When a component's share tends to 0 (pi-hat at a
    bound), ``s_t -> -inf`` and Newton's absolute tolerance leaves the constraint violated in
    relative terms: eq. (12) evaluated at that theta is then well below the maximum (the
    profile of pi found higher points, n = m = 5). The normalised alpha gives the limit.
    """
    if getattr(data, "lazy", False):  # rows in Dask collections: block sums
        return data.normalise_alphas(restricted, v, theta)
    p = data.p
    s1, b1, s2, b2 = _el.split(v, p)
    logS = logaddexp(s1 + data.Z @ b1, s2 + data.Z @ b2)
    logp = -softplus(logS) - np.log(data.n)  # EL weights p_i = 1/(n (1 + S_i))
    out = np.array(theta, dtype=float)
    for t, (a_idx, b) in enumerate(((0, b1), (p + 1, b2))):
        if restricted and t == 0:
            continue
        a_new = -np.logaddexp.reduce(logp + data.Z @ b)
        if np.isfinite(a_new) and abs(a_new - out[a_idx]) > 1e-8 * max(1.0, abs(a_new)):
            out[a_idx] = a_new
    return out


def _exact_llf(data, v, theta, pi, record, name):
    """Exact log-EL (eq. 12) with the multipliers solved; the closed form on overflow."""
    p = data.p
    lazy = getattr(data, "lazy", False)  # rows in Dask collections: block sums
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f, _, H, extra = (data.profile_log_el(theta, pi, 0.0, with_pi=True, strict=True)
                          if lazy else
                          _el.profile_log_el(theta, pi, data.Z, data.y, 0.0, X1=data.X1,
                                             with_pi=True, X1F=data.X1F))
    method = "eq. (12), multipliers of (11) solved numerically"
    if extra is None or not np.isfinite(f) or not np.all(np.isfinite(H)):
        # A tilt has run off (w overflows). At the pi-free maximum the multipliers are known
        # exactly, lambda_t = m pi_t / N, and 1 + lambda'(w_i - 1) = (n/N)(1 + S_i): evaluate
        # eq. (12) with them in log space.
        fun, _ = free_fun(data, 0.0, False)
        f = fun(v, 0) - data.n * np.log(data.n) - data.m * np.log(data.m)
        method = "eq. (12) with the closed-form multipliers m pi_t / N (overflow)"
        H = np.full((2 * p + 3, 2 * p + 3), np.nan)
        extra = {"lam": np.array([data.m * pi, data.m * (1 - pi)]) / data.N,
                 "p": None, "omega": None}  # per-row values: not kept for Dask rows
        if not lazy:
            s1, b1, s2, b2 = _el.split(v, p)
            eta1, eta2 = s1 + data.Z @ b1, s2 + data.Z @ b2
            logS = logaddexp(eta1, eta2)
            extra["p"] = np.exp(-softplus(logS)) / data.n
            extra["omega"] = expit((eta1 - eta2)[data.n:])
        record.append((SeparationWarning, f"{name}: a tilt diverges (exp overflow); the log-EL "
                       "uses the closed-form multipliers and standard errors are not available"))
    return float(f), H, extra, method


def _covariance(data, restricted, H, record, name) -> pd.DataFrame:
    """Inverse observed information of the (penalised) profile log-EL (Theorem 2)."""
    p = data.p
    k = 2 * (p + 1) + 1
    idx = np.r_[p + 1:k] if restricted else np.arange(k)  # SETM: alpha2, beta2, pi
    try:
        cov_s = np.linalg.inv(-H[np.ix_(idx, idx)])
        if np.any(np.diag(cov_s) < 0):
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        record.append((ConvergenceWarning, f"{name}: the observed information is singular or "
                       "not positive definite; standard errors are NaN"))
        cov_s = np.full((len(idx), len(idx)), np.nan)
    cov = np.zeros((k, k))
    cov[np.ix_(idx, idx)] = cov_s
    J = to_original_map(data)
    names = param_names(data.names)
    out = pd.DataFrame(J @ cov @ J.T, index=names, columns=names)
    return out.drop(index=names[: p + 1], columns=names[: p + 1]) if restricted else out


def _starts_table(data, restricted, rule, runs, pi, record, name):
    st = pd.DataFrame({
        "start": [r.label for r in runs],
        # on the scale of llf_penalized: the binary-regression form minus n log n + m log m
        "objective": [r.f - data.n * np.log(data.n) - data.m * np.log(data.m) for r in runs],
        "pi": [labelled_pi(data, restricted, rule, r.v) for r in runs],
        "converged": [r.info.converged for r in runs],
        "iterations": [r.info.iterations for r in runs],
    })
    f_best = st["objective"].max()
    gap = f_best - st["objective"]
    at_best = gap <= 1e-9 * max(1.0, abs(f_best))
    near = (~at_best) & (gap < 2.0) & (np.abs(st["pi"] - pi) > 0.05)
    if near.any():
        alt = st.loc[near].sort_values("objective").iloc[-1]
        record.append((StartsDisagreeWarning, f"{name}: starts disagree: a local maximum with "
                       f"pi = {alt['pi']:.4f} is within {f_best - alt['objective']:.3f} log-EL "
                       f"units of the best (pi = {pi:.4f})"))
    return st, int(at_best.sum())


def _lr_at_half(data, theta, llf_pen: float, c: float, maxiter: int, tol: float, runs=()):
    """The profile likelihood ratio statistic of pi = 0.5, ``2 (l(pi-hat) - l_p(0.5))`` on the
    penalised log-EL, the maximum at 0.5 by Newton's method from the fit's theta and from the
    other local maxima the starts reached (one run from the fit's theta alone can stop at a
    lower maximum at 0.5, overstating the statistic against ``test_pi(0.5)``), the best
    converged value (None if no run converges): the pi rules' test of equality
    (:func:`._label.label_check`)."""
    starts, seen = [theta], []
    for r in sorted(runs, key=lambda r: -r.f):
        if not (r.info.converged and np.isfinite(r.f)):
            continue
        th, pi_r = theta_pi(data, False, r.v)
        if not np.all(np.isfinite(th)) or any(abs(pi_r - q) < 1e-3 for q in seen):
            continue
        seen += [pi_r, 1 - pi_r]
        starts.append(th)
    best = None
    for th in starts:
        f, _, info = fit_fixed_pi(data, False, 0.5, th, c, maxiter, tol)
        if info.converged and np.isfinite(f) and (best is None or f > best):
            best = f
    return None if best is None else 2.0 * (llf_pen - best)


def _inference(data, restricted, name, v, pi, kl, theta, H, runs, record, *, c, label_rule,
               check_separation_opt, llf_pen, maxiter, tol):
    """What a fit reports beyond its estimates: the starts table, the covariance, the label
    rule's check, the parameters on the user's scale and the separation check."""
    p = data.p
    _, b1, _, b2 = _el.split(v, p)
    _dominating_rows(data, name, record)
    starts, n_at_best = _starts_table(data, restricted, label_rule, runs, pi, record, name)
    if c and np.all(np.isfinite(H)):
        # the curvature of the penalised log-EL actually maximised: what the profile of pi
        # sees, and positive definite when a direction is nearly separated
        _, _, ph = _el.penalty(b1, b2, c, 2)
        pidx = np.r_[1:p + 1, p + 2:2 * p + 2]
        H = H.copy()
        H[np.ix_(pidx, pidx)] -= ph
    cov = _covariance(data, restricted, H, record, name)
    check = None
    if not restricted:
        kl_se = kl_difference_se(data, v, c) if label_rule == "kl" else float("nan")
        check = label_check(label_rule, kl, kl_se, pi, float(np.sqrt(cov.loc["pi", "pi"])),
                            None if label_rule == "kl" else
                            _lr_at_half(data, theta, llf_pen, c, maxiter, tol, runs))
        if check.near_tie:
            record.append((LabelAmbiguityWarning, f"{name}: the labelling is weakly determined: "
                           f"rule {label_rule!r} compared {check.compared}; equality has "
                           f"p = {check.pvalue:.2g}, so the mirror labelling (pi = "
                           f"{1 - pi:.4f}) is about as well supported by the rule; choose the "
                           "labelling from what is known about the data (label_rule="
                           "'pi<0.5' or 'pi>0.5')"))
    names = param_names(data.names)
    params = pd.Series(to_original_map(data) @ np.r_[theta, pi], index=names, name="coef")
    if restricted:
        params = params.drop(names[: p + 1])
    sep, binding, msg, pi_free = check_separation(data, restricted, name, c,
                                                  check_separation_opt, v,
                                                  label_rule=label_rule)
    if msg:
        record.append((SeparationWarning, msg))
        if check is not None and label_rule == "kl" and not check.near_tie and c and \
                np.abs(b2).max(initial=0) >= np.abs(b1).max(initial=0):
            # the component with the longer (diverging) tilt, which the rule labelled the
            # negatives: its KL divergence grows as the ridge weakens, so the rule's
            # comparison is the penalty's, whatever its sandwich SE says (session 86's audit:
            # SAR design, pi = 0.01, the mirror in 5 of 10 fits, 13 of 19 mirrors with no
            # label warning; a diverging tilt's KL 41-68 at the default ridge, 198-536 at a
            # hundredth of it, the other component's 5.7-7.3)
            how = "diverges" if binding else "may diverge (see the SeparationWarning)"
            record.append((LabelAmbiguityWarning, f"{name}: a tilt {how}, so the label rule "
                           f"'kl' compared a divergence that the ridge sets, not the data "
                           f"({check.compared}): the component of the diverging tilt is "
                           "called the negatives whatever its size. The mirror labelling (pi "
                           f"= {1 - pi:.4f}) has the same penalised log-EL; choose the "
                           "labelling from what is known about the data (label_rule='pi<0.5' "
                           "where positives are rare, or 'pi>0.5')"))
    se = float(np.sqrt(cov.loc["pi", "pi"])) if cov.loc["pi", "pi"] > 0 else float("nan")
    if pi_free is not None and abs(pi - pi_free) > RIDGE_SHIFT_SE * se:
        record.append((PenaltyWarning, f"{name}: the ridge (c = {c:.3g}) moves pi-hat by "
                       f"{abs(pi - pi_free) / se:.2g} standard errors (observed information): "
                       f"{pi:.4f}, against {pi_free:.4f} at the unpenalised maximum nearest the "
                       "fit. The estimate depends on the penalty (more so in small samples) "
                       "and on how the features are written "
                       "(the ridge acts on each standardised column: strongly correlated "
                       "columns, such as an uncentred feature and its square, draw more of "
                       "it); write such terms as poly(x, k) or of centred features, or compare "
                       "with penalty='none'"))
    if pi_on_boundary(pi):
        record.append((BoundaryWarning, f"{name}: pi-hat = {pi:.3g} is at the boundary of "
                       "[0, 1]; its interval is one-sided and its SE is not valid"))
    return starts, n_at_best, cov, check, params, sep, binding, pi_free


def _dominating_rows(data, name: str, record: list) -> None:
    """An ``InfluenceWarning`` for each feature one row of which carries more than
    :data:`~puinfer._validation.INFLUENCE_SHARE` of its sum of squares about the mean (``z^2 > 0.9 N`` on the
    standardised scale, whose ``z^2`` sum to ``N``), indicators (two values) left out. The
    search and the default ridge act on standardised columns: one value of 1e4 among 600 of
    about unit size squashed the others' ``z`` to a few thousandths, the ridge then forbade
    any real slope, and SETM's pi-hat fell from 0.29 to 0.14 with a log-EL 74 units below
    the maximum (session 83's audit; ``penalty="none"`` did not reach it either). In-memory
    rows only."""
    if getattr(data, "lazy", False):
        return
    X = data.X
    share = largest_share(X, data.mean, data.sd)
    for j in np.flatnonzero(share > INFLUENCE_SHARE):
        if np.unique(X[:, j]).size <= 2:
            continue  # (a rare indicator: a level's few rows, no outlier to check)
        far = X[np.argmax(np.abs(X[:, j] - data.mean[j])), j]
        record.append((InfluenceWarning, f"{name}: one row carries {share[j]:.0%} of the "
                       f"spread of column {data.names[j]!r} (its value {far:.4g}): the fit, on "
                       "standardised features, and its default ridge hinge on that row; check "
                       "it, or transform (e.g. log) or winsorise the column"))


def pi_on_boundary(pi: float) -> bool:
    """pi-hat at 0 or 1 (within 1e-6): the fit's BoundaryWarning, and where the default
    interval's bootstrap calibration may not narrow it (``DETMResults.conf_int_pi``)."""
    return bool(pi < 1e-6 or pi > 1 - 1e-6)


def build_record(data, restricted: bool, name: str, best: StartRun, runs: list, *, c: float,
                 label_rule: str, check_separation_opt, maxiter: int, tol: float,
                 seed: int = 0, lean: bool = False):
    """The :class:`TiltFit` of the best run. Warnings are collected, not issued: the caller
    issues those of the final record.

    ``lean``: for the bootstrap's refits, which read only the estimates (``v``, ``theta``,
    ``pi``, the log-EL) and ``runs``: the tables, the covariance, the label rule's check and
    the separation check (``starts``, ``cov``, ``params``, ``label_check``,
    ``separated_points``, ``ridge_binding``) are skipped (None). The estimates are the same
    arithmetic either way."""
    record: list = []
    p = data.p
    v = best.v
    if getattr(data, "lazy", False):  # Dask rows: pi and KL of every run in one pass
        data.prefetch([r.v for r in runs] + [v])
    pi = pi_of_v(data, v)
    swapped = not restricted and swap_needed(data, v, pi, label_rule)
    if swapped:
        v, pi = np.r_[v[p + 1:], v[: p + 1]], 1.0 - pi
    kl = kl_divergences(data, v, pi) if not restricted else (0.0, float("nan"))
    theta, _ = theta_pi(data, restricted, v)
    theta = normalise_alphas(data, restricted, v, theta)
    llf, H, extra, llf_method = _exact_llf(data, v, theta, pi, record, name)
    _, b1, _, b2 = _el.split(v, p)
    llf_pen = float(llf - (_el.penalty(b1, b2, c) if c else 0.0))
    if not best.info.converged:
        record.append((ConvergenceWarning, f"{name}: the optimiser did not converge "
                       f"({best.info.message})"))
    if lean:
        starts, n_at_best, cov, check, params, sep, binding, pi_free = \
            None, 0, None, None, None, None, None, None
    else:
        starts, n_at_best, cov, check, params, sep, binding, pi_free = _inference(
            data, restricted, name, v, pi, kl, theta, H, runs, record, c=c,
            label_rule=label_rule, check_separation_opt=check_separation_opt,
            llf_pen=llf_pen, maxiter=maxiter, tol=tol)
    return TiltFit(
        restricted=restricted, name=name, penalty_strength=c,
        label_rule=label_rule if not restricted else "none (SETM)", maxiter=maxiter, tol=tol,
        v=readonly(v), theta=readonly(theta), pi=pi, labels_swapped=swapped, kl_divergences=kl,
        label_check=check,
        llf=llf, llf_penalized=llf_pen,
        llf_method=llf_method, lagrange_multipliers=readonly(extra["lam"]),
        # per-row values (None for rows in Dask collections)
        el_weights=None if extra["p"] is None else readonly(extra["p"]),
        omega=None if extra["omega"] is None else readonly(extra["omega"]), params=params, cov=cov,
        convergence=best.info, runs=tuple(runs), starts=starts, n_starts_at_best=n_at_best,
        separated_points=None if sep is None else readonly(sep), ridge_binding=binding,
        warnings=tuple((cat.__name__, msg) for cat, msg in record), seed=seed,
        pi_unpenalised=pi_free)
