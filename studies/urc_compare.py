"""URC beside the quantification estimators users know: EMQ, ACC, PACC/BBSE (issue 14).

Estimators of the field base rates under prior shift, from a classifier's predictions on a
labelled lab set and an unlabelled field set:

* **URC** (Ziegler and Czyz, seed 003): :class:`puinfer.URC`, joint likelihood (lab counts as
  data), default ``n_bins`` (binary 4 cells; 3 classes 2 per predicted class), 95% profile CI.
* **EMQ** (Saerens, Latinne and Decaestecker 2002; QuaPy's ``EMQ``, default tolerance 1e-4):
  EM on the field posteriors with the lab class shares as training priors. Needs calibrated
  posteriors.
* **ACC** (adjusted classify and count, Forman 2008; QuaPy's ``ACC``, default solver):
  ``p = M^{-1} q`` with ``M[i, j] = P_lab(hat Y = i | Y = j)`` from arg-max predictions.
* **PACC** (probabilistic ACC; QuaPy's ``PACC``): the same with mean posteriors. BBSE-soft of
  Lipton, Wang and Smola (2018) solves ``q = C w`` with ``C = M diag(pi_lab)`` and returns
  ``w * pi_lab``, which is PACC's solution; BBSE-hard likewise equals ACC. QuaPy's
  ``BBSEhard`` is run beside ACC to show it (column ``bbse_minus_acc`` of the raw CSV).
* **EMQ-BCTS** (part ``recal``; QuaPy's ``EMQ`` with ``calib="bcts"``, Alexandari, Kundaje and
  Shrikumar 2020): the posteriors recalibrated on the lab set by bias-corrected temperature
  scaling before EM -- what a careful user does with a miscalibrated classifier. Same data sets
  as part ``main`` (same seeds); a point estimate only (a bootstrap that refits the calibration
  was not affordable here).

Intervals for the peers: a 95% bootstrap percentile interval (``--boot`` replicates; the lab
set resampled within class, as it was drawn stratified, and the field set resampled), computed
by a vectorised re-implementation of each estimator from its definition (EMQ as the maximum
likelihood estimate of the field mixture ``sum_n log sum_j post_nj p_j / pi_lab_j`` by Newton's
method, to which EM converges; ACC/PACC by exact inversion, clipped and renormalised as QuaPy's
``norm="clip"``). On the original sample these re-implementations agree with QuaPy (recorded
per replicate: ``emq_minus_mle``, ``acc_minus_exact``).

Designs (:func:`puinfer.simulate.urc.simulate_urc`, Gaussian scores, separation 1.5, lab set
stratified): binary (lab base rate 0.5, field 0.2); 3 classes (lab 1/3 each, field 0.6, 0.3,
0.1); lab n 300 and 1000, field n 3000. Settings: ``calibrated`` (the simulator's exact Bayes
posteriors for the lab population) and ``overconfident`` (logits scaled by 2:
``expit(2 logit c)``, ``softmax(2 log c)``).

Part ``bins``: URC's bias, SD, RMSE and coverage against ``n_bins`` (binary 2..32 cells, 3
classes 1..8 per predicted class) in the calibrated setting, lab n 300, 1000 and 20000 (the
last isolates the loss from binning from the lab set's sampling error), beside the EMQ MLE on
the same replicates; it also evaluates the candidate rules :func:`choose_n_bins_variance` and
:func:`choose_n_bins_rule` for a data-driven ``n_bins``.

Usage (restartable: each replicate is appended to the raw CSV as it finishes, and a rerun
skips the replicates already there; every replicate has its own seed)::

    PYTHONPATH=. nice -n 10 python studies/urc_compare.py --part main --reps 500 --boot 200
    PYTHONPATH=. nice -n 10 python studies/urc_compare.py --part recal --reps 500
    PYTHONPATH=. nice -n 10 python studies/urc_compare.py --part bins --reps 300
    python studies/urc_compare.py --report        # tables -> studies/results/urc_compare.md
"""

from __future__ import annotations

import argparse
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

from puinfer import URC
from puinfer.simulate.urc import simulate_urc

OUT = Path(__file__).resolve().parent / "results"
RAW_MAIN = OUT / "urc_compare_raw.csv"
RAW_BINS = OUT / "urc_compare_bins_raw.csv"
RAW_RECAL = OUT / "urc_compare_recal_raw.csv"
REPORT = OUT / "urc_compare.md"

DESIGNS = {
    "binary": dict(lab=0.5, field=0.2, truth=np.array([0.8, 0.2])),
    "3class": dict(lab=np.full(3, 1 / 3), field=np.array([0.6, 0.3, 0.1]),
                   truth=np.array([0.6, 0.3, 0.1])),
}
SEPARATION = 1.5
N_FIELD = 3000
MAIN_CELLS = [(d, n, s) for d in DESIGNS for n in (300, 1000)
              for s in ("calibrated", "overconfident")]
BINS = {"binary": (2, 4, 8, 16, 32), "3class": (1, 2, 4, 8)}
BINS_CELLS = [(d, n) for d in DESIGNS for n in (300, 1000, 20000)]
ESTIMATORS = ("URC", "EMQ", "ACC", "PACC")


# -- data --------------------------------------------------------------------------------------
def simulate(design: str, n_lab: int, rng: np.random.Generator, n_field: int = N_FIELD):
    """Lab posteriors (n, k), lab labels, field posteriors (N, k) of the calibrated classifier,
    and the lab population's class shares."""
    d = DESIGNS[design]
    s = simulate_urc(n_lab=n_lab, n_field=n_field, lab_base_rates=d["lab"],
                     field_base_rate=d["field"], separation=SEPARATION, rng=rng)
    lab, field = s.lab_pred, s.field_pred
    if lab.ndim == 1:
        lab = np.column_stack([1 - lab, lab])
        field = np.column_stack([1 - field, field])
    return lab, s.lab_y, field, s.lab_base_rates


def miscalibrate(post: np.ndarray, setting: str) -> np.ndarray:
    """``calibrated``: unchanged; ``overconfident``: logits scaled by 2 (temperature 1/2)."""
    if setting == "calibrated":
        return post
    if setting == "overconfident":
        return special.softmax(2 * np.log(np.clip(post, 1e-300, None)), axis=1)
    raise ValueError(f"unknown setting {setting!r}")


def urc_input(post: np.ndarray) -> np.ndarray:
    """What URC takes: ``P(Y = 1)`` for a binary classifier, the matrix otherwise."""
    return post[:, 1] if post.shape[1] == 2 else post


# -- QuaPy's estimators on given posteriors ----------------------------------------------------
def _posterior_passthrough(k: int):
    """A fitted scikit-learn classifier whose 'features' are the posteriors themselves, so that
    QuaPy's quantifiers run on given predictions (``fit_classifier=False``)."""
    from sklearn.base import BaseEstimator, ClassifierMixin

    class Posteriors(ClassifierMixin, BaseEstimator):
        def __init__(self, k=2):
            self.k = k

        def fit(self, X=None, y=None):
            self.classes_ = np.arange(self.k)
            return self

        def predict_proba(self, X):
            return np.asarray(X)

        def predict(self, X):
            return np.argmax(np.asarray(X), axis=1)

    return Posteriors(k).fit()


def quapy_estimates(lab_post, lab_y, field_post) -> dict:
    """Field class shares by QuaPy's EMQ, ACC, PACC and BBSEhard (default options)."""
    from quapy.method.aggregative import ACC, EMQ, PACC, BBSEhard

    k = lab_post.shape[1]
    out = {}
    for name, cls in (("EMQ", EMQ), ("ACC", ACC), ("PACC", PACC), ("BBSE", BBSEhard)):
        q = cls(_posterior_passthrough(k), fit_classifier=False, val_split=None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q.fit(lab_post, lab_y)
            out[name] = np.asarray(q.predict(field_post), dtype=float)
    return out


# -- vectorised re-implementations (for the bootstrap) -----------------------------------------
def _clip_norm(p):
    """QuaPy's ``norm="clip"``: clip to [0, 1], then divide by the sum."""
    p = np.clip(p, 0, 1)
    s = p.sum(axis=-1, keepdims=True)
    return np.where(s > 0, p / np.where(s > 0, s, 1), 1 / p.shape[-1])


def adjusted_count(lab_scores, lab_y, field_scores, k):
    """ACC (``scores`` one-hot arg-max predictions) or PACC (``scores`` posteriors) for a batch:
    ``lab_scores`` (B, n, k), ``lab_y`` (n,), ``field_scores`` (B, N, k) -> (B, k).

    ``M[b, i, j]`` = mean of score ``i`` over the lab items of class ``j``; ``q`` = mean field
    score; ``p = M^{-1} q`` (Forman 2008), clipped and renormalised."""
    Y = np.eye(k)[lab_y]                                    # (n, k)
    M = np.einsum("bni,nj->bij", lab_scores, Y) / Y.sum(axis=0)
    q = field_scores.mean(axis=1)
    p = np.linalg.solve(M, q[..., None])[..., 0]
    return _clip_norm(p)


def emq_mle(field_post, pi_lab, start=None, maxiter=50, tol=1e-10):
    """The maximum-likelihood estimate that EMQ's EM converges to, for a batch.

    ``field_post`` (B, N, k) posteriors calibrated for the lab priors ``pi_lab``; maximises
    ``sum_n log sum_j r_nj p_j`` with ``r_nj = post_nj / pi_lab_j`` (Saerens et al. 2002, eq.
    (2.9): the field likelihood under prior shift) by damped Newton's method over
    ``p_1..p_{k-1}`` (``p_k = 1 - sum``), staying inside the simplex. Returns (B, k)."""
    R = field_post / pi_lab
    B, N, k = R.shape
    p = np.tile(pi_lab, (B, 1)) if start is None else np.array(start, dtype=float)
    D = R[..., :-1] - R[..., -1:]                           # d(sum_j r_nj p_j) / d p_{1..k-1}
    for _ in range(maxiter):
        den = np.einsum("bnk,bk->bn", R, p)
        g = np.einsum("bnj,bn->bj", D, 1 / den)
        W = D / den[..., None]
        H = -np.einsum("bnj,bnl->bjl", W, W)
        step = -np.linalg.solve(H, g[..., None])[..., 0]
        full = np.concatenate([step, -step.sum(axis=1, keepdims=True)], axis=1)
        # largest fraction of the step keeping every p_j >= 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            lim = np.where(full < 0, (1e-12 - p) / full, np.inf).min(axis=1)
        t = np.minimum(1.0, 0.95 * lim)[:, None]
        p = p + t * full
        if np.max(np.abs(t * full)) < tol:
            break
    return p


def bootstrap_peers(lab_post, lab_y, field_post, pi_lab, B, rng, start):
    """(B, k) bootstrap replicates of EMQ (MLE), ACC and PACC: the lab set resampled within
    each class (it was drawn stratified), the field set resampled."""
    k = lab_post.shape[1]
    n, N = lab_y.size, field_post.shape[0]
    lab_idx = np.empty((B, n), dtype=np.intp)
    pos = 0
    order = np.argsort(lab_y, kind="stable")
    for j in range(k):
        members = order[lab_y[order] == j]
        lab_idx[:, pos:pos + members.size] = members[rng.integers(0, members.size,
                                                                  (B, members.size))]
        pos += members.size
    ly = lab_y[lab_idx[0]]                  # the same class layout in every replicate
    fidx = rng.integers(0, N, (B, N))
    fpost = field_post[fidx]
    lpost = lab_post[lab_idx]
    eye = np.eye(k)
    out = {"EMQ": emq_mle(fpost, pi_lab, start=np.tile(start, (B, 1))),
           "ACC": adjusted_count(eye[lpost.argmax(axis=2)], ly, eye[fpost.argmax(axis=2)], k),
           "PACC": adjusted_count(lpost, ly, fpost, k)}
    return out


# -- asymptotic standard deviations (expected information, population M_A) ---------------------
def asymptotic_sd(design: str, n_lab: int, n_bins_list, n_field: int = N_FIELD,
                  n_big: int = 400_000, seed: int = 99) -> pd.DataFrame:
    """Large-sample SDs of the field base rates: URC's joint likelihood (lab class counts fixed,
    stratified; lab and field multinomial histograms; ``M_A`` free) for each ``n_bins``, and
    EMQ's MLE with the exact posteriors (field information only: the posteriors carry no lab
    error). The population ``M_A`` and the expectations over the field are computed from a
    large simulated sample (``n_big`` lab items)."""
    d = DESIGNS[design]
    rng = np.random.default_rng(seed)
    lab, y, _, pi = simulate(design, n_big, rng, n_field=1)
    p = d["truth"]
    k = p.size
    T = np.vstack([np.eye(k - 1), -np.ones(k - 1)])          # p = T p_free + e_k
    rows = []
    # EMQ: per-item score of the field mixture in p_free, expectations over the field
    R = lab / pi
    den = R @ p
    S = (R[:, :-1] - R[:, -1:]) / den[:, None]
    w = (p / np.bincount(y, minlength=k))[y]                 # field expectation by class
    info = n_field * (S * w[:, None]).T @ S
    cov = T @ np.linalg.inv(info) @ T.T
    rows.append(dict(design=design, n_lab=n_lab, estimator="EMQ (exact posteriors)",
                     n_bins=0, **{f"sd{j}": np.sqrt(cov[j, j]) for j in range(k)}))
    for m in n_bins_list:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            M = URC(urc_input(lab), y, n_bins=m).M.to_numpy()
        A = M.shape[1]
        v = p @ M
        npar = (k - 1) + k * (A - 1)
        E = np.vstack([np.eye(A - 1), -np.ones(A - 1)])       # M_y = E M_y_free + e_A
        Jf = np.zeros((A, npar))
        Jf[:, :k - 1] = (M[:-1] - M[-1]).T
        info_f = np.zeros((npar, npar))
        info_l = np.zeros((npar, npar))
        for j in range(k):
            sl = slice(k - 1 + j * (A - 1), k - 1 + (j + 1) * (A - 1))
            Jf[:, sl] = p[j] * E
            Jl = np.zeros((A, npar))
            Jl[:, sl] = E
            info_l += n_lab * pi[j] * Jl.T @ (Jl / M[j][:, None])
        info_f = n_field * Jf.T @ (Jf / v[:, None])
        for lik_name, info in (("URC joint", info_f + info_l), ("URC, M_A known", None)):
            if info is None:   # field information only, M_A fixed at the truth
                sub = info_f[:k - 1, :k - 1]
                c = T @ np.linalg.inv(sub) @ T.T
            else:
                c = T @ np.linalg.inv(info)[:k - 1, :k - 1] @ T.T
            rows.append(dict(design=design, n_lab=n_lab, estimator=lik_name, n_bins=m,
                             **{f"sd{j}": np.sqrt(c[j, j]) for j in range(k)}))
    return pd.DataFrame(rows)


# -- the proposed data-driven n_bins (not in puinfer: for the lead to decide) ------------------
def _pick_by_variance(variances: dict, tol: float):
    """The smallest ``n_bins`` whose estimated SD is within a factor ``1 + tol`` of the
    smallest estimated SD (``tol = 0``: the minimiser)."""
    ok = {m: v for m, v in variances.items() if np.isfinite(v)}
    if not ok:
        return None
    best = min(ok.values())
    return min(m for m, v in ok.items() if v <= (1 + tol) ** 2 * best)


def choose_n_bins_variance(lab_pred, lab_y, field_pred, candidates, tol: float = 0.0) -> int:
    """``n_bins`` by URC's estimated variance: the sum over classes of the squared standard
    errors (inverse observed information of the joint likelihood) of the field base rates, for
    each of ``candidates``; the smallest candidate whose estimated SD is within a factor
    ``1 + tol`` of the best (``tol = 0``: the minimiser). Uses lab and field data; one fit per
    candidate."""
    var = {}
    for m in candidates:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                r = URC(lab_pred, lab_y, n_bins=m).fit(field_pred)
                var[m] = float(np.sum(np.asarray(r.bse) ** 2))
            except (ValueError, np.linalg.LinAlgError):
                continue
    return _pick_by_variance(var, tol)


def choose_n_bins_rule(n_lab: int, k: int, min_count: float = 20.0,
                       max_bins: int | None = None) -> int:
    """A rule in the lab size only: the largest power of 2 such that a cell holds about
    ``min_count`` lab items of each class on average, ``n_lab / (k |A|) >= min_count``, with
    ``|A| = n_bins`` (binary) or ``k n_bins`` (multiclass); at least 2 cells (binary) or 1 bin
    per predicted class; at most ``max_bins``."""
    cells = n_lab / (k * min_count)
    per = cells if k == 2 else cells / k
    lo = 2 if k == 2 else 1
    m = int(max(lo, 2 ** np.floor(np.log2(max(per, 1)))))
    return m if max_bins is None else min(m, max_bins)


# -- one replicate -----------------------------------------------------------------------------
def _seed(*parts) -> np.random.Generator:
    return np.random.default_rng([20261123, *parts])


def main_replicate(cell_id, rep, boot, ci=True):
    """Rows (one per class and estimator) of replicate ``rep`` of main cell ``cell_id``;
    ``ci=False`` skips URC's profile intervals (for the fast test)."""
    design, n_lab, setting = MAIN_CELLS[cell_id]
    rng = _seed(1, cell_id, rep)
    lab, lab_y, field, pi_lab = simulate(design, n_lab, rng)
    lab, field = miscalibrate(lab, setting), miscalibrate(field, setting)
    truth = DESIGNS[design]["truth"]
    k = truth.size
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = URC(urc_input(lab), lab_y).fit(urc_input(field))
        urc_est = r.base_rates.iloc[0].to_numpy()
        ci = r.conf_int() if ci else None
    urc_lo, urc_hi = np.full(k, np.nan), np.full(k, np.nan)
    if ci is None:
        pass
    elif k == 2:
        urc_lo[1], urc_hi[1] = ci["lower"].iloc[0], ci["upper"].iloc[0]
        urc_lo[0], urc_hi[0] = 1 - urc_hi[1], 1 - urc_lo[1]
    else:
        urc_lo, urc_hi = ci["lower"].to_numpy(), ci["upper"].to_numpy()
    t_urc = time.perf_counter() - t0
    t0 = time.perf_counter()
    qp = quapy_estimates(lab, lab_y, field)
    t_qp = time.perf_counter() - t0
    mle = emq_mle(field[None], pi_lab)[0]
    eye = np.eye(k)
    acc_exact = adjusted_count(eye[lab.argmax(1)][None], lab_y, eye[field.argmax(1)][None], k)[0]
    t0 = time.perf_counter()
    if boot > 0:
        bs = bootstrap_peers(lab, lab_y, field, pi_lab, boot, rng, mle)
        ints = {m: np.quantile(v, [0.025, 0.975], axis=0) for m, v in bs.items()}
    else:
        ints = {m: np.full((2, k), np.nan) for m in ("EMQ", "ACC", "PACC")}
    t_boot = time.perf_counter() - t0
    rows = []
    for j in range(k):
        base = dict(cell=cell_id, design=design, n_lab=n_lab, setting=setting, rep=rep, cls=j,
                    truth=truth[j])
        rows.append(dict(base, estimator="URC", est=urc_est[j], lower=urc_lo[j],
                         upper=urc_hi[j], seconds=t_urc))
        for m in ("EMQ", "ACC", "PACC"):
            rows.append(dict(base, estimator=m, est=qp[m][j], lower=ints[m][0, j],
                             upper=ints[m][1, j], seconds=t_qp / 4 + t_boot / 3))
        rows[-3]["emq_minus_mle"] = qp["EMQ"][j] - mle[j]
        rows[-2]["acc_minus_exact"] = qp["ACC"][j] - acc_exact[j]
        rows[-2]["bbse_minus_acc"] = qp["BBSE"][j] - qp["ACC"][j]
    return rows


def recal_replicate(cell_id, rep):
    """QuaPy's EMQ-BCTS (``EMQ.EMQ_BCTS``, Alexandari et al. 2020: bias-corrected temperature
    scaling fitted on the lab set, training prevalence from the recalibrated lab posteriors) on
    the same data sets as :func:`main_replicate` (same seeds); a point estimate only."""
    from quapy.method.aggregative import EMQ

    design, n_lab, setting = MAIN_CELLS[cell_id]
    rng = _seed(1, cell_id, rep)
    lab, lab_y, field, _ = simulate(design, n_lab, rng)
    lab, field = miscalibrate(lab, setting), miscalibrate(field, setting)
    truth = DESIGNS[design]["truth"]
    k = truth.size
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = EMQ(_posterior_passthrough(k), fit_classifier=False, val_split=(lab, lab_y),
                exact_train_prev=False, calib="bcts", on_calib_error="backup")
        q.fit(lab, lab_y)
        est = np.asarray(q.predict(field), dtype=float)
    sec = time.perf_counter() - t0
    return [dict(cell=cell_id, design=design, n_lab=n_lab, setting=setting, rep=rep, cls=j,
                 truth=truth[j], estimator="EMQ-BCTS", est=est[j], lower=np.nan,
                 upper=np.nan, seconds=sec) for j in range(k)]


def bins_replicate(cell_id, rep):
    design, n_lab = BINS_CELLS[cell_id]
    rng = _seed(2, cell_id, rep)
    lab, lab_y, field, pi_lab = simulate(design, n_lab, rng)
    truth = DESIGNS[design]["truth"]
    k = truth.size
    rows = []
    base = dict(cell=cell_id, design=design, n_lab=n_lab, rep=rep)
    mle = emq_mle(field[None], pi_lab)[0]
    for j in range(k):
        rows.append(dict(base, n_bins=0, estimator="EMQ-MLE", cls=j, truth=truth[j],
                         est=mle[j]))
    for m in BINS[design]:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                r = URC(urc_input(lab), lab_y, n_bins=m).fit(urc_input(field))
                est = r.base_rates.iloc[0].to_numpy()
                ci = r.conf_int()
                bse = np.asarray(r.bse, dtype=float)
                cells = r.model.partition.n_cells
            except (ValueError, np.linalg.LinAlgError):
                continue
        lo, hi = ci["lower"].to_numpy(), ci["upper"].to_numpy()
        if k == 2:
            lo, hi = np.array([1 - hi[0], lo[0]]), np.array([1 - lo[0], hi[0]])
            bse = np.array([bse[0], bse[0]])
        sec = time.perf_counter() - t0
        for j in range(k):
            rows.append(dict(base, n_bins=m, estimator="URC", cls=j, truth=truth[j], est=est[j],
                             lower=lo[j], upper=hi[j], bse=bse[j], cells=cells, seconds=sec))
    return rows


# -- driver ------------------------------------------------------------------------------------
def _done(path):
    if not path.exists():
        return set()
    d = pd.read_csv(path, usecols=["cell", "rep"], on_bad_lines="skip")
    return set(zip(d.cell, d.rep, strict=True))


def _commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=Path(__file__).resolve().parent).stdout.strip()
    except OSError:
        return ""


def run(part, reps, boot, cells=None, deadline=None):
    path = {"main": RAW_MAIN, "recal": RAW_RECAL, "bins": RAW_BINS}[part]
    ncell = len(BINS_CELLS) if part == "bins" else len(MAIN_CELLS)
    cells = range(ncell) if cells is None else cells
    done = _done(path)
    commit = _commit()
    OUT.mkdir(exist_ok=True)
    t_start = time.time()
    for rep in range(reps):          # replicate-major: every cell grows at the same pace
        for c in cells:
            if (c, rep) in done:
                continue
            if deadline is not None and time.time() > deadline:
                print("deadline reached", flush=True)
                return
            rows = (main_replicate(c, rep, boot) if part == "main" else
                    recal_replicate(c, rep) if part == "recal" else bins_replicate(c, rep))
            df = pd.DataFrame(rows)
            df["commit"] = commit
            if part != "bins":
                for col in ("emq_minus_mle", "acc_minus_exact", "bbse_minus_acc"):
                    if col not in df:
                        df[col] = np.nan
                df = df[["cell", "design", "n_lab", "setting", "rep", "cls", "truth",
                         "estimator", "est", "lower", "upper", "seconds", "emq_minus_mle",
                         "acc_minus_exact", "bbse_minus_acc", "commit"]]
            else:
                for col in ("lower", "upper", "bse", "cells", "seconds"):
                    if col not in df:
                        df[col] = np.nan
                df = df[["cell", "design", "n_lab", "rep", "n_bins", "estimator", "cls",
                         "truth", "est", "lower", "upper", "bse", "cells", "seconds",
                         "commit"]]
            df.to_csv(path, mode="a", header=not path.exists(), index=False)
        if rep % 25 == 0:
            print(f"{part}: replicate {rep} done, {time.time() - t_start:.0f} s", flush=True)


# -- report ------------------------------------------------------------------------------------
def to_markdown(df: pd.DataFrame) -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v)
                                       for v in row) + " |")
    return "\n".join(lines)


def summarise(d: pd.DataFrame) -> pd.Series:
    err = d.est - d.truth
    n = len(d)
    cov = ((d.lower <= d.truth) & (d.truth <= d.upper)).where(d.lower.notna())
    return pd.Series({"reps": n, "bias": err.mean(), "bias_se": err.std() / np.sqrt(n),
                      "sd": d.est.std(), "rmse": np.sqrt((err ** 2).mean()),
                      "coverage": cov.mean() if cov.notna().any() else np.nan,
                      "width": (d.upper - d.lower).mean()})


def main_tables(raw: pd.DataFrame) -> pd.DataFrame:
    g = raw.groupby(["design", "n_lab", "setting", "cls", "estimator"], sort=False)
    tab = g.apply(summarise, include_groups=False).reset_index()
    tab["reps"] = tab["reps"].astype(int)
    order = {m: i for i, m in enumerate(ESTIMATORS + ("EMQ-BCTS",))}
    tab["_d"] = tab.design.map({d: i for i, d in enumerate(DESIGNS)})
    tab["_s"] = tab.setting.map({"calibrated": 0, "overconfident": 1})
    tab["_e"] = tab.estimator.map(order)
    return tab.sort_values(["_d", "n_lab", "_s", "cls", "_e"]).drop(columns=["_d", "_s", "_e"])


def bins_tables(raw: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    g = raw.groupby(["design", "n_lab", "cls", "estimator", "n_bins"], sort=True)
    tab = g.apply(summarise, include_groups=False).reset_index()
    tab["reps"] = tab["reps"].astype(int)
    emq = tab[tab.estimator == "EMQ-MLE"].set_index(["design", "n_lab", "cls"])["sd"]
    tab["sd/sd_EMQ"] = tab["sd"].to_numpy() / emq.reindex(
        pd.MultiIndex.from_frame(tab[["design", "n_lab", "cls"]])).to_numpy()
    # the candidate rules, evaluated on the same replicates
    urc = raw[raw.estimator == "URC"].copy()
    urc["var"] = urc.bse ** 2
    tot = urc.groupby(["design", "n_lab", "rep", "n_bins"]).agg(
        v=("var", lambda s: s.sum() if s.notna().all() else np.inf))
    tot = tot.reset_index()
    rows = []
    rules = {"min est. variance": 0.0, "within 5% of min est. SD": 0.05,
             "lab-size rule": None}
    for rule, tol in rules.items():
        if tol is not None:
            key = tot.groupby(["design", "n_lab", "rep"]).apply(
                lambda g, t=tol: _pick_by_variance(dict(zip(g.n_bins, g.v, strict=True)), t),
                include_groups=False)
        else:
            idx = tot.groupby(["design", "n_lab", "rep"]).size().index
            key = pd.Series([choose_n_bins_rule(n, DESIGNS[d]["truth"].size,
                                                max_bins=max(BINS[d]))
                             for d, n, _ in idx], index=idx)
        sel = urc.merge(key.rename("pick").reset_index(), on=["design", "n_lab", "rep"])
        sel = sel[sel.n_bins == sel.pick]
        for (d, n, c), grp in sel.groupby(["design", "n_lab", "cls"]):
            s = summarise(grp)
            s["rule"] = rule
            s["design"], s["n_lab"], s["cls"] = d, n, c
            s["n_bins chosen (median)"] = float(grp.n_bins.median())
            s["sd/sd_EMQ"] = s["sd"] / emq.loc[(d, n, c)]
            rows.append(s)
    rules = pd.DataFrame(rows)[["design", "n_lab", "cls", "rule", "n_bins chosen (median)",
                                "reps", "bias", "sd", "rmse", "coverage", "sd/sd_EMQ"]]
    rules["reps"] = rules["reps"].astype(int)
    return tab, rules


NOTES = OUT / "urc_compare_notes.md"


def _fmt_main(tab: pd.DataFrame) -> pd.DataFrame:
    """Binary: class 1 only (class 0 mirrors it); the coverage with its Monte-Carlo SE."""
    keep = (tab.design != "binary") | (tab.cls == 1)
    t = tab[keep].copy()
    t["bias"] = [f"{b:+.4f} ({s:.4f})" for b, s in zip(t.bias, t.bias_se, strict=True)]
    t["coverage"] = [("no interval" if np.isnan(c) else f"{c:.3f} ({np.sqrt(c * (1 - c) / n):.3f})")
                     for c, n in zip(t.coverage, t.reps, strict=True)]
    t = t.rename(columns={"bias": "bias (MC SE)", "coverage": "coverage (MC SE)",
                          "width": "mean width"})
    return t[["design", "n_lab", "setting", "cls", "estimator", "reps", "bias (MC SE)", "sd",
              "rmse", "coverage (MC SE)", "mean width"]]


def write_report():
    """Write ``urc_compare.md``: the hand-written notes (``urc_compare_notes.md``, if present)
    followed by the tables computed from the raw CSVs."""
    out = []
    if NOTES.exists():
        out.append(NOTES.read_text().rstrip() + "\n")
    out.append("## Tables (generated by `python studies/urc_compare.py --report`)\n")
    if RAW_MAIN.exists():
        raw = pd.read_csv(RAW_MAIN)
        if RAW_RECAL.exists():
            raw = pd.concat([raw, pd.read_csv(RAW_RECAL)], ignore_index=True)
        out.append(f"### Main comparison (raw: `{RAW_MAIN.name}`; code commit(s) "
                   f"{', '.join(sorted(raw['commit'].dropna().astype(str).unique()))})\n")
        out.append("Field base-rate estimates; binary: class 1 (true 0.2). Coverage of 95% "
                   "intervals: URC profile likelihood; EMQ/ACC/PACC bootstrap percentile "
                   f"(B = 200). Up to {raw.rep.nunique()} replicates per cell.\n")
        out.append(to_markdown(_fmt_main(main_tables(raw))) + "\n")
        chk = pd.DataFrame({
            "check": ["max abs(QuaPy EMQ - Newton MLE)", "max abs(QuaPy ACC - exact ACC)",
                      "max abs(QuaPy BBSEhard - QuaPy ACC)"],
            "value": [raw.emq_minus_mle.abs().max(), raw.acc_minus_exact.abs().max(),
                      raw.bbse_minus_acc.abs().max()]})
        out.append("Agreement of the re-implementations used by the bootstrap with QuaPy, over "
                   "all replicates:\n")
        out.append(to_markdown(chk) + "\n")
        sec = raw.groupby(["design", "estimator"]).seconds.mean().unstack()
        out.append("Mean seconds per replicate (wall, nice -n 10 on a shared machine; the "
                   "peers' time includes their share of the bootstrap):\n")
        out.append(to_markdown(sec.reset_index()) + "\n")
    if RAW_BINS.exists():
        braw = pd.read_csv(RAW_BINS)
        btab, rules = bins_tables(braw)
        keep = (btab.design != "binary") | (btab.cls == 1)
        bt = btab[keep].copy()
        bt["_d"] = bt.design.map({d: i for i, d in enumerate(DESIGNS)})
        bt = bt.sort_values(["_d", "n_lab", "cls", "estimator", "n_bins"], kind="stable")
        bt["n_bins"] = bt.n_bins.astype(int).astype(str).replace("0", "-")
        out.append(f"### URC against n_bins, calibrated setting (raw: `{RAW_BINS.name}`)\n")
        out.append("`n_bins` = cells (binary) or bins per predicted class (3 classes); EMQ-MLE: "
                   "the maximum-likelihood estimate EMQ converges to, on the same replicates; "
                   "`sd/sd_EMQ` the ratio of SDs.\n")
        out.append(to_markdown(bt[["design", "n_lab", "cls", "estimator", "n_bins", "reps",
                                   "bias", "sd", "rmse", "coverage", "sd/sd_EMQ"]]) + "\n")
        rk = (rules.design != "binary") | (rules.cls == 1)
        out.append("### Candidate data-driven n_bins rules, evaluated on the same replicates\n")
        out.append("`min est. variance`: `choose_n_bins_variance` (the candidate with the "
                   "smallest sum of squared standard errors from the joint likelihood's observed "
                   "information); `lab-size rule`: `choose_n_bins_rule` (about 20 lab items per "
                   "class and cell).\n")
        rl = rules[rk].copy()
        rl["_d"] = rl.design.map({d: i for i, d in enumerate(DESIGNS)})
        rl = rl.sort_values(["_d", "n_lab", "cls"], kind="stable").drop(columns="_d")
        out.append(to_markdown(rl) + "\n")
    asy = pd.concat([asymptotic_sd(d, n, BINS[d]) for d in DESIGNS for n in (300, 1000, 20000)])
    wide = asy.pivot_table(index=["design", "estimator", "n_bins"], columns="n_lab",
                           values=["sd1", "sd2"]).dropna(axis=1, how="all")
    wide.columns = [f"{v} (lab {n})" for v, n in wide.columns]
    wide = wide.reset_index()
    wide["_d"] = wide.design.map({d: i for i, d in enumerate(DESIGNS)})
    wide = wide.sort_values(["_d", "estimator", "n_bins"]).drop(columns="_d")
    wide["n_bins"] = wide.n_bins.astype(int).astype(str).replace("0", "-")
    out.append("### Large-sample SDs (expected information; field n 3000)\n")
    out.append("From `asymptotic_sd`: the population `M_A` (and EMQ's field information) from "
               "400,000 simulated lab items. `URC joint`: lab and field histograms, `M_A` free "
               "(lab counts stratified); `URC, M_A known`: the field histogram only. `sd1`: "
               "class 1 (binary: the base rate 0.2; 3 classes: 0.3); `sd2`: class 2 (0.1).\n")
    out.append(to_markdown(wide) + "\n")
    REPORT.write_text("\n".join(out))
    return REPORT


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["main", "recal", "bins"], default=None)
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--boot", type=int, default=200, help="bootstrap replicates (main part)")
    ap.add_argument("--until", type=str, default=None,
                    help="stop starting replicates after this UTC time, HH:MM")
    ap.add_argument("--report", action="store_true", help="write urc_compare.md from the raw CSVs")
    args = ap.parse_args(argv)
    deadline = None
    if args.until:
        now = pd.Timestamp.now(tz="UTC")
        hh, mm = map(int, args.until.split(":"))
        deadline = now.normalize().replace(hour=hh, minute=mm).timestamp()
    if args.part:
        run(args.part, args.reps, args.boot, deadline=deadline)
    if args.report:
        print(write_report().read_text())


if __name__ == "__main__":
    main()
