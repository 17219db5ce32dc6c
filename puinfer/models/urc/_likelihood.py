"""URC likelihood and estimation: counts, constraints, objective, EM map, Newton, profiles.

Everything here works on the ``k x |A|`` lab and ``G x |A|`` field histograms only, so its cost
does not depend on the number of predictions. The results class calls these functions; it
contains no optimisation code itself.

Notes
-----
The joint log-likelihood (Ziegler and Czyż, "Unsupervised Recalibration", with the lab counts
treated as data) is

    l(p, M) = sum_{i,a} L[i,a] log M[i,a] + sum_{g,a} F[g,a] log (sum_i p_g[i] M[i,a]) + const,

and the fixed likelihood (the paper's eq. (13)) drops the first sum and fixes ``M`` at its lab
estimate ``L[i, a] / n_i``. A Dirichlet prior ``Dir(1 + s pi_lab)`` on each ``p_g`` adds
``s sum_i pi_lab[i] log p_g[i]``.

Lab design. For a lab set drawn at random from the lab population (``Data.random_lab``) the
lab class counts ``n_i`` are multinomial data too: ``sum_i n_i log pi[i]`` with ``pi`` the lab
population's base rates, a parameter. It separates from ``(p, M)`` except under the null
``p_g = pi`` for every group (:attr:`Data.pooled`, constraint ``"pooled"``: one ``p`` shared by
the groups and the lab population, estimated from the lab class counts and the field histograms
together), where the term is ``sum_i n_i log p[i]``: the lab class counts enter the objective as
``n_i / G`` pseudo-counts on each (tied) row of ``P``. Elsewhere ``pi`` is at its maximum
``n_i / n`` and the term is the constant ``sum_i n_i log(n_i / n)`` (in :attr:`Data.const`).
For a stratified lab set (class counts fixed by design) the term is absent.

:func:`maximize` runs EM (the latent class of every field item) accelerated by SQUAREM
(:func:`puinfer.base.optimize.squarem`, scheme S3, with the monotonicity safeguard and
backtracking of the extrapolation into the positive orthant), then Newton's method on the
active face of the simplices (:func:`puinfer.base.optimize.newton_maximize` with a sparse
tangent basis; a component at 0 is released when its KKT condition fails, unless the Newton
step would move it down; with many groups the step is solved by blocks, :mod:`._face`).
EM alone crawls along the ridge of the joint likelihood when the lab sample is small (its
rate is then close to 1); Newton converges quadratically from EM's neighbourhood of the
maximum. Warm-started fits (profiles, restricted fits) try Newton first.
EM cannot raise a component at exactly 0, so each EM run starts with the zeros whose KKT
condition fails lifted off the bound; where EM stops (its change is small) and Newton cannot
start (an indefinite Hessian on the face), modified Newton finishes.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg, sparse, special, stats

from ...base.optimize import _ascent_direction, newton_maximize, squarem
from ...base.results import ConvergenceInfo, ReadOnlyArrays, readonly
from ...inference.hypothesis import chisq_gof
from ._face import DENSE_MAX_DIM, BlockHessian, PairBasis, face_hessian

__all__ = ["Data", "Constraint", "Estimate", "FitOptions", "objective", "em_step", "grad_p",
           "grad_hess", "grad_hess_blocks", "tangent", "maximize", "ModeCurvature",
           "ProfileLoglik", "profile_loglik", "approx_se", "base_rate_cov", "gof_test",
           "group_fits", "BOUNDARY", "ROW_TOL", "FIXED_SE_RATIO", "lab_error_se_ratio",
           "fixed_gof_inflation", "permutation_lr_equal"]

ROW_TOL = 1e-6        # rows of class probabilities must sum to 1 within this
BOUNDARY = 1e-6       # base rates closer than this to 0 or 1 are on the boundary
_FREE_MIN = 1e-10     # components below this are treated as on the boundary by Newton
_AT_BOUND = 1e-11     # where Newton's step onto a bound leaves a component (not 0: EM could
                      # never raise it again)
_NEWTON_MAXITER = 50
_BROADCAST_HPM = 1024  # grad_hess_blocks' cross block by one broadcast up to G |A| of this
_EXTEND_RATIO = 0.5   # a full Newton step raising a component below _EXTEND_BELOW by this
_EXTEND_BELOW = 1e-6  # share of it or more is followed by a longer move of that component
                      # (see _Problem.extend)
_EM_FIRST = 100       # EM cycles before Newton takes over
_EM_WARM = 10         # ... after a warm start that Newton alone could not finish
_EM_PROBE = 20        # EM cycles from a further start of the joint likelihood before comparing
_SAME_MAX = 1e-3      # ... with the maximum found: this close means the same maximum
_PROFILE_MODE_LR = 30.0  # profiles also start from local maxima with 2 (l_max - l) up to this
#: the fixed likelihood (``M_A`` taken as known) warns where counting the lab set's sampling
#: error would widen a base rate's standard error by more than this factor
#: (:func:`lab_error_se_ratio`): a 95% interval then covers about 92.5% at most, and the tests
#: reject too often (session 75's audit, binary, |A| = 4: gof's size 26% at 5% with lab 5000 and
#: field 5000, 82% with lab 500)
FIXED_SE_RATIO = 1.1


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Data(ReadOnlyArrays):
    """The counts and the likelihood's options (its arrays read-only: the results hand the
    data out, and a pickle round trip keeps them so).

    Attributes
    ----------
    L : numpy.ndarray
        ``k x |A|`` lab counts.
    F : numpy.ndarray
        ``G x |A|`` field counts.
    pi_lab : numpy.ndarray
        Lab base rates (``k``).
    joint : bool
        Joint (lab + field) likelihood with ``M`` free, else ``M`` fixed at the lab estimate.
    strength : float
        Dirichlet prior strength (pseudo-counts); 0 is maximum likelihood.
    random_lab : bool
        The lab set is a random sample of the lab population: its class counts are multinomial
        data (``sum_i n_i log pi[i]``); False for a stratified lab set (counts fixed by design).
    pooled : bool
        With ``random_lab``: the lab population's base rates are tied to every group's base
        rates (the null of no shift), so the lab class counts inform ``P`` (see the module
        notes); used with the constraint ``"pooled"``.
    lab_pseudocount : float
        Pseudo-counts ``c`` per lab cell on average in the lab term of the joint likelihood
        (the penalised objective ``sum_{i,a} (L[i,a] + C[i,a]) log M[i,a]``, ``c |A|`` per
        row of ``M``; see :attr:`lab_prior` for ``C``). 0 is maximum likelihood. They keep
        ``M`` off the boundary of its simplices and are what makes the profile intervals and
        tests hold their level at small lab sets (``studies/results/urc_labdesign.md``). The
        lab class counts (``n_i``, the random design's multinomial) are the raw ``L``'s.
    lab_prior : {"pooled", "uniform"}
        Where the pseudo-counts go: ``"pooled"``, ``C[i, a] = c |A| h[a]`` with ``h`` the
        pooled lab histogram (each row of ``M`` shrunk towards the lab marginal: the
        pseudo-Bayes estimator of Bishop, Fienberg and Holland, 1975, ch. 12); ``"uniform"``,
        ``C[i, a] = c`` (the Jeffreys prior ``Dir(1/2)`` of each row, Firth's penalty, at
        ``c = 1/2``).
    penalty : object, optional
        An additive log-penalty on the base rates: an object with
        ``value(P)``, ``grad_hess(P)``, ``mstep(C, P, con)`` and ``describe()``, e.g.
        :class:`~puinfer.models.urc._smoothing.SmoothnessPenalty`. Objective, EM map, Newton,
        profiles and tests then all use the penalised objective. It penalises the shift from
        the lab population's base rates, so it vanishes on :attr:`pooled` data (no shift by
        construction; see :attr:`active_penalty`).
    """

    L: np.ndarray
    F: np.ndarray
    pi_lab: np.ndarray
    joint: bool
    strength: float
    random_lab: bool = False
    pooled: bool = False
    penalty: object = None
    lab_pseudocount: float = 0.0
    lab_prior: str = "uniform"

    def __post_init__(self):
        for name in ("L", "F", "pi_lab"):
            object.__setattr__(self, name, readonly(getattr(self, name)))

    @property
    def active_penalty(self):
        """The penalty in force: None on :attr:`pooled` data, where every group's base rates
        are the lab population's (a shift of 0 has penalty 0)."""
        return None if self.pooled else self.penalty

    @functools.cached_property
    def class_weight(self) -> np.ndarray | None:
        """Pseudo-counts of the lab class counts on each row of ``P`` (``n_i / G``) when the
        lab base rates are tied to ``P`` (:attr:`pooled`), else None."""
        if not (self.random_lab and self.pooled):
            return None
        return self.L.sum(axis=1) / self.F.shape[0]

    @functools.cached_property
    def L_lik(self) -> np.ndarray:
        """The lab counts as they enter the lab term of the joint likelihood (``L`` plus the
        pseudo-counts of :attr:`lab_pseudocount` and :attr:`lab_prior`)."""
        c = self.lab_pseudocount
        if c <= 0:
            return self.L
        if self.lab_prior == "uniform":
            return readonly(self.L + c)
        # every cell holds a lab item (empty cells are merged), so every C[i, a] > 0
        return readonly(self.L + c * self.L.shape[1] * (self.L.sum(axis=0) / self.L.sum()))

    @functools.cached_property
    def F_positive(self) -> tuple:
        """The positive field counts and their flat positions (:func:`_positive`; the
        objective's sum runs over them)."""
        return _positive(self.F)

    @functools.cached_property
    def L_lik_positive(self) -> tuple:
        """:attr:`L_lik`'s positive entries and their flat positions (:func:`_positive`)."""
        return _positive(self.L_lik)

    @functools.cached_property
    def M_lab(self) -> np.ndarray:
        """The lab estimate of ``M_A`` (eq. (9))."""
        return readonly(self.L / self.L.sum(axis=1, keepdims=True))

    @functools.cached_property
    def const(self) -> float:
        """Log multinomial coefficients (lab ones only for the joint likelihood); for a random
        lab set those of the lab class counts, and their maximised log-likelihood
        ``sum_i n_i log(n_i / n)`` unless the lab base rates are tied to ``P``."""
        F = self.F
        c = float(np.sum(special.gammaln(F.sum(axis=1) + 1)) - np.sum(special.gammaln(F + 1)))
        if self.joint:
            L = self.L
            c += float(np.sum(special.gammaln(L.sum(axis=1) + 1)) - np.sum(special.gammaln(L + 1)))
        if self.random_lab:
            n = self.L.sum(axis=1)
            c += float(special.gammaln(n.sum() + 1) - np.sum(special.gammaln(n + 1)))
            if not self.pooled:
                c += _xlogy_sum(n, n / n.sum())
        return c

    def group(self, g: int) -> Data:
        """The same data with group ``g``'s field histogram only."""
        return dataclasses.replace(self, F=self.F[g:g + 1])


@dataclass(frozen=True)
class Constraint:
    """What is held fixed.

    ``kind``: ``"free"`` (nothing), ``"rows"`` (every ``p_g`` equals ``value``), ``"equal"`` (one
    ``p`` shared by all groups), ``"pooled"`` (one ``p`` shared by all groups and the lab
    population: ``"equal"`` on :attr:`Data.pooled` data) or ``"entry"`` (``p_group[cls] = v``).
    """

    kind: str = "free"
    value: np.ndarray | None = None
    group: int = -1
    cls: int = -1
    v: float = float("nan")

    def __post_init__(self):
        # a read-only copy: a results' null (fit_no_shift().constraint) handed it out, and a
        # write to it changed the cached null's bootstrap test silently (session 82's audit)
        if self.value is not None:
            value = np.array(self.value, dtype=float)
            value.flags.writeable = False
            object.__setattr__(self, "value", value)


@dataclass(frozen=True)
class FitOptions:
    """Options of :func:`maximize`: EM cycles (``maxiter``), the EM tolerance (``tol``), and
    further random starts of the joint likelihood (``random_starts``, drawn with ``seed``)."""

    maxiter: int = 5000
    tol: float = 1e-10
    random_starts: int = 0
    seed: int = 0


#: how far beyond 0 or 1 an estimated probability can be by rounding alone
_ROUNDING = 1e-12


@dataclass(frozen=True)
class Estimate:
    """A maximum of the objective: base rates ``P`` (G x k), ``M`` (k x |A|), the objective
    (without the multinomial constants) and how the optimiser finished. ``others``: the
    other local maxima that :func:`maximize`'s starts reached (Estimates, highest first; the
    profiles start from them too)."""

    P: np.ndarray
    M: np.ndarray
    objective: float
    convergence: ConvergenceInfo
    others: tuple = ()

    def __post_init__(self):
        # probabilities beyond 0 or 1 by rounding are at the bound (session 87's study: a
        # fixed-likelihood group's rate of class 0 came out as 1.0000000000000002 where
        # class 1's was 0, and its profile refused the estimate as outside [0, 1])
        for name in ("P", "M"):
            v = getattr(self, name)
            if v is not None and np.any((v < 0) | (v > 1)):
                near = (v > -_ROUNDING) & (v < 1 + _ROUNDING)
                object.__setattr__(self, name, np.where(near, np.clip(v, 0.0, 1.0), v))

    def __setstate__(self, state):
        # unpickling does not call __post_init__: results pickled before session 87 carry
        # the unsnapped rates, whose conf_int() raised (snapped here as when built)
        self.__dict__.update(state)
        self.__post_init__()


# ---------------------------------------------------------------------------------------------
# Objective, EM map, derivatives
# ---------------------------------------------------------------------------------------------
def _xlogy_sum(x, y):
    """sum x log y with 0 log 0 = 0 and -inf where x > 0 = y."""
    return _xlogy_at(_positive(x), y)


def _positive(x):
    """``(i, x_i)`` for the positive entries of ``x`` (flat positions, in C order)."""
    idx = np.flatnonzero(x > 0)
    return idx, np.asarray(x).ravel()[idx]


def _xlogy_at(pos, y):
    """:func:`_xlogy_sum` with ``x``'s positive entries ``pos`` given (:func:`_positive`; the
    counts' are cached on :class:`Data`): the same terms in the same order."""
    idx, xv = pos
    yy = y.ravel()[idx]
    if (yy <= 0).any():
        return -np.inf
    return float((xv * np.log(yy)).sum())


def objective(P, M, d: Data) -> float:
    """Log-likelihood (without the multinomial constants) plus the log Dirichlet prior."""
    val = _xlogy_at(d.F_positive, P @ M)
    if d.joint:
        val += _xlogy_at(d.L_lik_positive, M)
    W = _pseudo(d, P.shape)
    if W is not None:
        val += _xlogy_sum(W, P)
    if d.active_penalty is not None:
        val += d.active_penalty.value(P)
    return val


def _pseudo(d: Data, shape):
    """Pseudo-counts on the rows of ``P``: the Dirichlet prior's ``s pi_lab`` and the tied lab
    class counts (``Data.class_weight``); None when there are none."""
    W = None
    if d.strength > 0:
        W = np.broadcast_to(d.strength * d.pi_lab, shape)
    if d.class_weight is not None:
        W = np.broadcast_to(d.class_weight, shape) if W is None else W + d.class_weight
    return W


def _fix_entry(c, j, v):
    """Maximise sum_i c_i log p_i subject to p_j = v, sum p = 1."""
    out = np.array(c, dtype=float)
    out[j] = 0.0
    s = out.sum()
    k = out.size
    if s > 0:
        out *= (1.0 - v) / s
    else:
        out[:] = (1.0 - v) / (k - 1)
    out[j] = v
    return out


def _shares(C, P):
    """Rows of ``C`` normalised to sum 1; a row of zeros (no field count the point makes
    possible: the data are impossible there) keeps its row of ``P``."""
    tot = C.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tot > 0, C / tot, P)


def em_step(P, M, d: Data, con: Constraint):
    """One EM step: E-step (split each field count over the classes in proportion to
    ``p_g[i] M[i, a]``), M-step (class shares under the constraint; ``M`` from the lab counts
    plus the expected field counts of each class under the joint likelihood)."""
    Q = P @ M
    # cells with counts that the point gives probability 0 (objective -inf: e.g. a null with a
    # base rate of 0) carry no information for the step; dividing by 0 would make it NaN
    with np.errstate(divide="ignore", invalid="ignore"):
        R = np.where((d.F > 0) & (Q > 0), d.F / Q, 0.0)
    # clipped at 0: a no-op at feasible points, and the map's image is always feasible
    C = np.maximum(P * (R @ M.T), 0.0)         # expected field class counts, G x k
    W = _pseudo(d, P.shape)
    if W is not None:
        C = C + W
    if d.active_penalty is not None and con.kind != "rows":
        # no closed form with a penalty: the penalised M-step is solved by the penalty itself
        Pn = d.active_penalty.mstep(C, P, con)
    elif con.kind == "free":
        Pn = _shares(C, P)
    elif con.kind in ("equal", "pooled"):
        c = C.sum(axis=0)
        Pn = np.broadcast_to(c / c.sum(), P.shape).copy() if c.sum() > 0 else P.copy()
    elif con.kind == "rows":
        Pn = P
    else:  # entry
        Pn = _shares(C, P)
        Pn[con.group] = _fix_entry(C[con.group], con.cls, con.v)
    if d.joint:
        D = np.maximum(M * (P.T @ R), 0.0) + d.L_lik
        Mn = D / D.sum(axis=1, keepdims=True)
    else:
        Mn = M
    return Pn, Mn


def grad_p(P, M, d: Data) -> np.ndarray:
    """Gradient of the objective in ``P`` (the first block of :func:`grad_hess`'s)."""
    Q = P @ M
    with np.errstate(divide="ignore", invalid="ignore"):
        W = np.where((d.F > 0) & (Q > 0), d.F / Q, 0.0)
    return _grad_p(W, P, M, d)


def _grad_p(W, P, M, d: Data) -> np.ndarray:
    """:func:`grad_p` from the field weights ``W = F / (P M)`` (0 where ``F`` or ``P M`` is)."""
    gP = W @ M.T
    sp = _pseudo(d, P.shape)
    if sp is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            gP = gP + np.where(sp > 0, sp / P, 0.0)
    if d.active_penalty is not None:
        gP = gP + d.active_penalty.grad_hess(P)[0]
    return gP


def grad_hess(P, M, d: Data):
    """Gradient and Hessian of the objective in ``theta = (vec P, vec M)`` (unconstrained)."""
    g, H = grad_hess_blocks(P, M, d)
    return g, H.dense()


def grad_hess_blocks(P, M, d: Data):
    """:func:`grad_hess` with the Hessian by blocks (a :class:`~._face.BlockHessian`: no
    ``P`` block outside the groups' diagonal ones is nonzero)."""
    G, k = P.shape
    A = M.shape[1]
    Q = P @ M
    ok = (d.F > 0) & (Q > 0)
    # F / Q and F / Q^2 where both are positive, 0 elsewhere (the quotients computed only
    # there: the same values as np.where of the full quotients, in fewer passes)
    W = np.zeros_like(Q)
    W2 = np.zeros_like(Q)
    with np.errstate(divide="ignore", invalid="ignore"):  # (Q^2 may underflow to 0)
        np.divide(d.F, Q, out=W, where=ok)
        np.divide(d.F, Q * Q, out=W2, where=ok)
    gP = _grad_p(W, P, M, d)
    # (products summed over the cells by one matrix product each: the three-operand einsums
    # took 10x longer with 100 groups and more, session 65)
    MM = (M[:, None, :] * M[None, :, :]).reshape(k * k, A)
    HPP = -(W2 @ MM.T).reshape(G, k, k)
    sp = _pseudo(d, P.shape)
    if sp is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            HPP[:, np.arange(k), np.arange(k)] -= np.where(sp > 0, sp / P ** 2, 0.0)
    if d.active_penalty is not None:
        HPP = HPP + d.active_penalty.grad_hess(P)[1]
    if not d.joint:
        return np.concatenate([gP.ravel(), np.zeros(k * A)]), BlockHessian(HPP, None, None,
                                                                           k * A)
    with np.errstate(divide="ignore", invalid="ignore"):
        Ll = d.L_lik
        gM = P.T @ W + np.where(Ll > 0, Ll / M, 0.0)
        lab2 = np.where(Ll > 0, Ll / M ** 2, 0.0)
    # HPM[g, i, j, a] = [i = j] W[g, a] - M[i, a] P[g, j] W2[g, a]: 0 - x off the diagonal,
    # W - x on it (the values of the broadcast formula eye * W - x)
    if G * A <= _BROADCAST_HPM:
        # one broadcast product: the loop below is k^2 x 3 numpy calls, 13x the time with 10
        # classes (RegressionURC's intervals) in 2 groups (session 93); (0 - x) + W is W - x
        HPM = M[None, :, None, :] * P[:, None, :, None]
        HPM *= W2[:, None, None, :]
        np.subtract(0.0, HPM, out=HPM)
        HPM[:, np.arange(k), np.arange(k), :] += W[:, None, :]
    else:
        # one (i, j) at a time: numpy broadcasts over the short last axis |A| element by
        # element, 3x slower at 1,000 groups
        HPM = np.empty((G, k, k, A))
        x = np.empty((G, A))
        for j in range(k):
            for i in range(k):
                np.multiply(M[i], P[:, j, None], out=x)
                x *= W2
                np.subtract(W if i == j else 0.0, x, out=HPM[:, i, j, :])
    PP = np.empty((G, k * k))
    for i in range(k):
        np.multiply(P[:, i, None], P, out=PP[:, i * k:(i + 1) * k])
    di = np.arange(k)
    T1 = -(PP.T @ W2).reshape(k, k, A).transpose(0, 2, 1)
    # HMM[i, a, j, b] = [a = b] T1[i, a, j] - [i = j, a = b] lab2[i, a]
    HMM = np.zeros((k, A, k, A))
    ai = np.arange(A)
    HMM[:, ai, :, ai] = T1.transpose(1, 0, 2)
    HMM[di[:, None], ai[None, :], di[:, None], ai[None, :]] -= lab2
    return (np.concatenate([gP.ravel(), gM.ravel()]),
            BlockHessian(HPP, HPM.reshape(G, k, k * A), HMM.reshape(k * A, k * A), k * A))


# ---------------------------------------------------------------------------------------------
# The tangent space of the constraints (the active face of the simplices)
# ---------------------------------------------------------------------------------------------
def _kkt_release(free, Gr, allowed):
    """The components of a stack of simplex blocks (rows) at the bound (not ``free``) whose
    KKT condition fails: ``allowed`` to move and a gradient ``Gr`` above the Lagrange multiplier
    of their block (the largest gradient among its free components)."""
    # (the maximum over each row as one over the columns of the transposed copy: numpy reduces
    # a short inner axis a row at a time, 10x slower with 1,000 rows of two)
    lam = np.ascontiguousarray(np.where(free, Gr, -np.inf).T).max(axis=0, initial=-np.inf)
    # a block with no free component (a fixed entry at 1) has nothing to release into: its
    # threshold is NaN (-inf + inf), which no gradient exceeds
    with np.errstate(invalid="ignore"):
        thr = lam + 1e-9 * (1.0 + np.abs(lam))
    return allowed & ~free & (Gr > thr[:, None])


def _simplex_columns(V, Gr, allowed, offsets):
    """Tangent columns of a stack of simplex blocks (vectorised over the blocks).

    ``V``, ``Gr``, ``allowed``: (n_blocks, m) values, gradients and which components may move;
    ``offsets``: (n_blocks, n_copies) positions of each block in theta (several copies when
    blocks share their values, as for equal base rates). A component at (numerically) zero is
    released only if its gradient exceeds the Lagrange multiplier of its simplex (the largest
    gradient among the free components): the KKT condition. Each column moves mass from the
    largest free component of its block to one other free component.
    Returns ``(plus, minus)``, each ``(n_columns, n_copies)``: the rows of theta where each
    column is +1 and -1."""
    nb = V.shape[0]
    free = allowed & (V > _FREE_MIN)
    # (only components at the bound can be released: free is within allowed)
    if np.count_nonzero(free) != np.count_nonzero(allowed):
        free = free | _kkt_release(free, Gr, allowed)
    last = np.argmax(np.where(free, V, -np.inf), axis=1)
    move = free.copy()
    # (a block with one free component has it as its largest: no column, as none is wanted)
    move[np.arange(nb), last] = False
    b, i = np.nonzero(move)
    ob = offsets[b]
    return ob + i[:, None], ob + last[b][:, None]


def tangent(P, M, d: Data, con: Constraint, grad, *, pairs: bool = False, hold=None):
    """Basis of the feasible directions (simplex constraints, fixed entries, the active set),
    as a sparse matrix ``T`` (n_theta x n_free), or None when there are more than
    :data:`~._face.DENSE_MAX_DIM` free parameters for the dense Newton step. ``pairs``: a
    :class:`PairBasis` instead where every column moves mass between two components (unless
    a simplex is shared by several rows of ``P``, as under equal or pooled base rates): the
    same basis, faster products, at any size (Newton's step on it is taken by blocks from
    32 groups or beyond the dense limit: :meth:`~._face.BlockHessian.reduce`). ``hold``: a
    boolean mask over ``theta`` of components at the bound that are not released whatever
    their gradient (see :meth:`_Problem.tangent`)."""
    G, k = P.shape
    A = M.shape[1]
    n = G * k + k * A
    parts = []
    gP = grad[:G * k].reshape(G, k)
    hold_P = np.zeros((G, k), dtype=bool) if hold is None else hold[:G * k].reshape(G, k)
    if con.kind in ("free", "entry"):
        allowed = ~hold_P
        if con.kind == "entry":
            allowed[con.group, con.cls] = False
        parts.append(_simplex_columns(P, gP, allowed, (np.arange(G) * k)[:, None]))
    elif con.kind in ("equal", "pooled"):
        parts.append(_simplex_columns(P[:1], gP.sum(axis=0, keepdims=True),
                                      ~hold_P.any(axis=0, keepdims=True),
                                      (np.arange(G) * k)[None, :]))
    if d.joint:
        gM = grad[G * k:].reshape(k, A)
        allowed = np.ones((k, A), dtype=bool) if hold is None else \
            ~hold[G * k:].reshape(k, A)
        parts.append(_simplex_columns(M, gM, allowed, (G * k + np.arange(k) * A)[:, None]))
    ncol = sum(plus.shape[0] for plus, _ in parts)
    if ncol == 0:
        return sparse.csr_matrix((n, 0))
    if pairs and all(plus.size == plus.shape[0] for plus, _ in parts):  # one copy each
        # (no limit: Newton's step on this basis costs O(G), see _face)
        return PairBasis(n, np.concatenate([plus.ravel() for plus, _ in parts]),
                         np.concatenate([minus.ravel() for _, minus in parts]))
    if ncol > DENSE_MAX_DIM:
        return None
    rows, cols, vals, c0 = [], [], [], 0
    for plus, minus in parts:
        nc, ncopy = plus.shape
        col = np.repeat(np.arange(c0, c0 + nc), ncopy)
        rows += [plus.ravel(), minus.ravel()]
        cols += [col, col]
        vals += [np.ones(nc * ncopy), -np.ones(nc * ncopy)]
        c0 += nc
    return sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                     np.concatenate(cols))), shape=(n, ncol))


def _reduced(T, grad, H):
    """Gradient and negative Hessian on the tangent space, ``T' g`` and ``-T' H T``."""
    Tt = T.T.tocsr()  # (a PairBasis's transpose is itself its fast form)
    return Tt @ grad, -(Tt @ np.asarray(Tt @ H).T)


# ---------------------------------------------------------------------------------------------
# The optimisation problem in theta = (vec P, vec M), for squarem and newton_maximize
# ---------------------------------------------------------------------------------------------
def longer_moves(blocks):
    """The candidate points of :meth:`_Problem.extend` for each of ``L`` points after its full
    Newton step (the stacked routes' ``L`` points, or one): ``blocks`` holds one
    ``(V, S, N, free)`` per kind of simplex (rows of ``(L, R, C)`` arrays: the values before
    the step, the step, the values after it, which components the constraint leaves free).
    Each component below :data:`_EXTEND_BELOW` that the step raises by at least
    :data:`_EXTEND_RATIO` of it is moved to where its log term puts the maximum (see
    :meth:`_Problem.extend`), the mass taken from the largest other free component of its
    row, which must hold more than twice it. Yields, for the extra moves scaled by 1, 1/16
    and 1/256 in turn, which points have that candidate and the blocks' new values."""
    parts = []
    want = False
    for V, S, N, free in blocks:
        sel = (S > 0) & (V > 0) & (V < _EXTEND_BELOW) & (S >= _EXTEND_RATIO * V) & free
        r = np.where(sel, S / np.where(sel, V, 1.0), 0.0)
        E = np.where(sel, S * np.where(r < 1.0, r / np.maximum(1.0 - r, 1e-3), 1e3), 0.0)
        cand = np.where(free & ~sel, N, -np.inf)
        j = cand.argmax(axis=2)[..., None]
        parts.append((N, E, j, np.take_along_axis(cand, j, 2)[..., 0]))
        want = want | sel.any(axis=(1, 2))
    for scale in (1.0, 1.0 / 16.0, 1.0 / 256.0):
        has, new = want, []
        for N, E, j, top in parts:
            Es = E * scale
            tot = Es.sum(axis=2)
            has = has & ((tot <= 0) | (top > 2.0 * tot)).all(axis=1)
            Nc = N + Es
            np.put_along_axis(Nc, j, np.take_along_axis(Nc, j, 2) - np.where(
                tot > 0, tot, 0.0)[..., None], 2)
            new.append(Nc)
        yield has, new


class _Problem:
    """The objective, EM map, tangent space and feasibility in ``theta`` for the shared
    optimisers. Feasibility keeps every component non-negative and the components that are
    positive at the current iterate positive (``threshold``: what counts as positive); the
    current iterate is tracked through the optimisers' callbacks."""

    def __init__(self, d: Data, con: Constraint, G: int, k: int, A: int):
        self.d, self.con, self.G, self.k, self.A = d, con, G, k, A
        self.pos = None
        self.threshold = 0.0
        self.last_T = None
        self.last_gH = None
        self.last_map = None
        self.last_value = None  # (theta, objective) of the last fun call
        self._gnorm_at = None  # (T, g) at the last tangent (see gnorm)
        self.modify = False  # Newton's direction where the Hessian is indefinite (see _newton)
        self.n_modified = 0  # modified Newton steps taken (counted by newton_moved)
        self.interior_only = False  # a run with modified steps stops at the bound (_warm_newton)

    def unpack(self, t):
        Gk = self.G * self.k
        return t[:Gk].reshape(self.G, self.k), t[Gk:].reshape(self.k, self.A)

    @staticmethod
    def pack(P, M):
        return np.concatenate([P.ravel(), M.ravel()])

    def emap(self, t):
        self.last_map = self.pack(*em_step(*self.unpack(t), self.d, self.con))
        return self.last_map

    def objective(self, t):
        return objective(*self.unpack(t), self.d)

    def fun(self, t, order):
        P, M = self.unpack(t)
        last = self.last_value
        if last is not None and np.array_equal(last[0], t):
            f = last[1]  # (Newton's derivatives at the point its line search just valued)
        else:
            f = objective(P, M, self.d)
            self.last_value = (t.copy(), f)
        if order == 0:
            return f
        g, H = grad_hess_blocks(P, M, self.d)
        self.last_gH = (g, H)
        return f, g, H

    def tangent(self, t, g):
        """:func:`tangent` at ``t``, holding at the bound every component there whose release
        (its KKT condition fails: :func:`_simplex_columns`) the Newton step on the face would
        not honour: a released component that the step moves down makes every step
        infeasible, and the search stopped there, below the maximum (two components at 0
        released together where only one may rise; an active-set method's usual rule). The
        step is computed as :func:`~puinfer.base.optimize.newton_maximize` computes it, from
        the Hessian :meth:`fun` evaluated at ``t``; only where some component is released."""
        P, M = self.unpack(t)
        T = self._same_face(tangent(P, M, self.d, self.con, g, pairs=True))
        low = (t <= _FREE_MIN) & ~self._fixed  # (what the tangent may release)
        hold = None
        while T is not None and T.shape[1] and low.any() and self.last_gH is not None:
            step, _ = _ascent_direction(T.T @ g, face_hessian(T, self.last_gH[1]),
                                        self.modify)
            if step is None:
                break
            down = low & (np.asarray(T @ step).ravel() < 0)
            if not down.any():
                break
            hold = down if hold is None else hold | down
            T = self._same_face(tangent(P, M, self.d, self.con, g, pairs=True, hold=hold))
        if T is not None:
            self.last_T = T
            self._gnorm_at = (T, g)
        return T

    @property
    def gnorm(self) -> float:
        """Max-norm of the reduced gradient where :meth:`tangent` was last taken (NaN before
        any; computed when asked: only a run's last one is reported)."""
        if self._gnorm_at is None:
            return np.nan
        T, g = self._gnorm_at
        return float(np.max(np.abs(T.T @ g))) if T.shape[1] else 0.0

    def _same_face(self, T):
        """``T``, or the last basis where it has the same columns (its block layout is kept:
        Newton's iterations mostly stay on one face, see :meth:`._face.PairBasis.layout`)."""
        if isinstance(T, PairBasis) and T.same_as(self.last_T):
            return self.last_T
        return T

    def track(self, t, threshold):
        self.pos = t > threshold
        self.threshold = threshold

    def feasible(self, t):
        # SQUAREM's extrapolation with step -1 is the plain EM step (the last map image, up
        # to rounding): always acceptable, even where EM set a component to exactly 0 (the
        # maximum on the boundary, e.g. a field of one item); refusing it made the step-halving
        # loop of squarem spin forever at alpha = -1
        if self.last_map is not None and t.shape == self.last_map.shape and \
                np.max(np.abs(t - self.last_map)) <= 1e-12:
            return True
        return bool((t[self.pos] > 0).all() and (t >= 0).all())

    def extend(self, t, dx):
        """Points to try after the full Newton step ``dx`` from ``t`` (see
        :func:`~puinfer.base.optimize.newton_maximize`), where it raises components below
        :data:`_EXTEND_BELOW` by at least :data:`_EXTEND_RATIO` of their values.

        A rate or cell ``x`` far below its maximum contributes like ``c log x - a x``, whose
        Newton step from ``x`` is ``x (1 - a x / c)``: it about doubles ``x`` each iteration,
        and a component left near the bound by an earlier step (``_AT_BOUND``) then takes some
        25 iterations to climb to a maximum at 1e-4 (most of the profile points of
        multiclass fits with small lab sets took 28-37 iterations so; session 91). The same
        model puts that maximum at ``x + dx / (1 - r)``, ``r = dx / x`` (1e3 ``dx`` where
        ``r >= 1``): the candidates of :func:`longer_moves` move each such component there,
        then a sixteenth and a 256th as far."""
        if self.con.kind not in ("free", "entry"):
            return ()
        Gk, shapes = self.G * self.k, [(1, self.G, self.k), (1, self.k, self.A)]
        free = ~self._fixed[: t.size]
        cuts = [slice(0, Gk), slice(Gk, t.size)][: 1 + self.d.joint]
        blocks = [(t[c].reshape(sh), dx[c].reshape(sh), (t + dx)[c].reshape(sh),
                   free[c].reshape(sh)) for c, sh in zip(cuts, shapes, strict=False)]
        tail = (t + dx)[Gk:] if not self.d.joint else np.empty(0)
        return [np.concatenate([*(b.ravel() for b in new), tail])
                for has, new in longer_moves(blocks) if has[0]]

    def to_boundary(self, t, dx):
        """Where the Newton step ``dx`` from ``t`` first brings a component to 0, and that
        point (Newton's line search tries it before halving: see
        :func:`~puinfer.base.optimize.newton_maximize`); None if no component falls.

        The components reaching 0 are left at :data:`_AT_BOUND` (a tenth of
        :data:`_FREE_MIN`), the mass taken from the largest other free component of their
        simplex: below ``_FREE_MIN`` the active set treats them as 0 (:meth:`newton_moved`
        re-tracks it, so :meth:`feasible` keeps them at or above 0 unless the tangent space
        releases them), which is where halving the step used to leave them after 15-26
        iterations; at exactly 0, EM (multiplicative) could never raise them again, and a
        later fit that needed to got stuck below its maximum."""
        down = dx < 0
        if self.pos is not None and (down & ~self.pos).any():
            return None  # (a component already on the bound moving down: halving, as before)
        if not np.any(down):
            return None
        ratio = np.full(t.shape, np.inf)
        ratio[down] = t[down] / -dx[down]
        tb = float(np.min(ratio))
        if not 0.0 < tb < 1.0:
            return None
        out = t + tb * dx
        hit = np.flatnonzero(ratio <= tb * (1.0 + 1e-12))  # (within rounding of 0 already)
        out[hit] = 0.0
        if np.any(out < 0):
            return None  # (never set a component to 0 that is not there: that adds mass)
        self._lift(out, hit)
        return tb, out

    def lift_zeros(self, t):
        """``t`` with its components at exactly 0 whose KKT condition fails (the objective
        rises as they rise: :func:`_kkt_release`) lifted to :data:`_AT_BOUND`, as
        :meth:`to_boundary` leaves them: EM multiplies a component by a factor per cycle, so it
        can never raise an exact 0 (SQUAREM's extrapolations and the clipped EM map produce
        them), and a search that needed it (a profile whose Newton steps cannot start: an
        indefinite Hessian on the face) stopped below its maximum (problem 173 of session
        63's randomised comparison: 2096 log-lik units). Zeros whose KKT condition holds stay:
        lifting those changed EM's path on a ridge of the penalised likelihood (problem 92)."""
        zero = t[:self._n_free] == 0.0
        if not np.any(zero):
            return t
        P, M = self.unpack(t)
        with np.errstate(divide="ignore", invalid="ignore"):
            Q = P @ M
            W = np.where((self.d.F > 0) & (Q > 0), self.d.F / Q, 0.0)
        Gk, fixed = self.G * self.k, self._fixed
        lift = np.zeros(t.shape, dtype=bool)
        if self.con.kind in ("free", "entry"):
            gP = _grad_p(W, P, M, self.d)
            lift[:Gk] = _kkt_release(P > _FREE_MIN, gP, ~fixed[:Gk].reshape(P.shape)).ravel()
        elif self.con.kind in ("equal", "pooled"):
            gP = _grad_p(W, P, M, self.d).sum(axis=0, keepdims=True)
            lift[:Gk] = np.tile(_kkt_release(P[:1] > _FREE_MIN, gP,
                                             np.ones_like(gP, dtype=bool)), self.G).ravel()
        if self.d.joint:
            with np.errstate(divide="ignore", invalid="ignore"):
                gM = P.T @ W + np.where(self.d.L_lik > 0, self.d.L_lik / M, 0.0)
            lift[Gk:] = _kkt_release(M > _FREE_MIN, gM, np.ones_like(M, dtype=bool)).ravel()
        idx = np.flatnonzero(lift[:self._n_free] & zero)
        if idx.size == 0:
            return t
        out = t.copy()
        self._lift(out, idx)
        return out

    @functools.cached_property
    def _n_free(self) -> int:
        """The leading components of ``theta`` that the fit moves (``M`` only jointly)."""
        return self.G * self.k + (self.k * self.A if self.d.joint else 0)

    @functools.cached_property
    def _fixed(self) -> np.ndarray:
        """Which components of ``theta`` the constraint fixes."""
        Gk = self.G * self.k
        fixed = np.zeros(Gk + self.k * self.A, dtype=bool)
        if self.con.kind == "entry":
            fixed[self.con.group * self.k + self.con.cls] = True
        elif self.con.kind == "rows":
            fixed[:Gk] = True
        if not self.d.joint:
            fixed[Gk:] = True
        return fixed

    def _lift(self, out, idx):
        """Set the components ``idx`` of ``out`` (at 0, not fixed) to :data:`_AT_BOUND`, the
        mass from the largest free component of each one's simplex (in place); a simplex with
        nothing to take from keeps its 0."""
        Gk, fixed = self.G * self.k, self._fixed
        for i in idx:
            if fixed[i]:
                continue
            lo, n = (i - i % self.k, self.k) if i < Gk else \
                (i - (i - Gk) % self.A, self.A)
            block = np.arange(lo, lo + n)
            donor = block[np.argmax(np.where(fixed[block], -np.inf, out[block]))]
            if fixed[donor] or out[donor] <= 2 * _AT_BOUND:
                continue  # (nothing to take from: stays 0)
            out[i] += _AT_BOUND
            out[donor] -= _AT_BOUND

    def em_moved(self, t_old, t_new, change):
        self.track(t_new, self.threshold)

    def newton_moved(self, t, f, step):
        self.track(t, self.threshold)
        self.n_modified += step.kind == "modified"
        if self.interior_only and self.n_modified and not self._interior(t):
            raise _LeftInterior  # (such a run is not kept: see _warm_newton)

    def strict_interior_maximum(self, t) -> bool:
        """Whether ``t``, where Newton last evaluated the Hessian, is a strict local maximum
        inside every simplex: the Hessian on the face negative definite and no component
        the constraint leaves free at the bound."""
        return self._interior(t) and np.isfinite(self.decrement())

    def keeps_modified_run(self, t) -> bool:
        """Whether a converged run that was allowed modified steps ends at ``t`` where it is
        kept: the Hessian on the face negative definite there (where it is not, modified
        Newton also stops at a stationary point without a step, which plain Newton refused:
        session 64's review), and inside the simplices if it took a modified step."""
        if self.n_modified:
            return self.strict_interior_maximum(t)
        return bool(np.isfinite(self.decrement()))

    def _interior(self, t) -> bool:
        """Whether no component of ``t`` that the constraint leaves free is at the bound."""
        return bool(np.all(t[~self._fixed[: t.size]] > _FREE_MIN))

    def decrement(self):
        """Newton decrement at the last point where the Hessian was evaluated."""
        (g, H), T = self.last_gH, self.last_T
        gr = T.T @ g
        step, newton = _ascent_direction(gr, face_hessian(T, H), modify=False)
        return float(gr @ step) if newton else np.inf


class _LeftInterior(Exception):
    """A modified Newton run that must stay inside the simplices reached the bound."""


def _em(P0, M0, prob: _Problem, maxiter, tol):
    """SQUAREM-accelerated EM from ``(P0, M0)``. Returns P, M, objective, ConvergenceInfo."""
    t0 = prob.lift_zeros(prob.pack(P0, M0))
    prob.track(t0, 0.0)
    t, info = squarem(prob.emap, t0, objective=prob.objective, maxiter=maxiter, tol=tol,
                      feasible=prob.feasible, callback=prob.em_moved)
    P, M = prob.unpack(t)
    return P.copy(), M.copy(), float(info.trace[-1]), info


def _newton(P0, M0, prob: _Problem, modify: bool = False):
    """Newton on the active face from ``(P0, M0)`` (exact; quadratic convergence; ``modify``:
    where the Hessian on the face is not negative definite, the modified Newton direction of
    :func:`~puinfer.base.optimize.newton_maximize` instead of stopping).

    Stops when the Newton decrement ``g' H^{-1} g`` (twice the predicted gain) is below 1e-10 or
    the rounding noise of the objective (``1e-14 |f|``); a failed line search counts as
    converged when the decrement is below ``max(1e-6, 1e-11 |f|)``. Returns P, M, f, success,
    iterations, trace (without the start), the max-norm of the reduced gradient."""
    t0 = prob.pack(P0, M0)
    prob.track(t0, _FREE_MIN)
    prob._gnorm_at = None
    prob.modify = modify
    prob.n_modified = 0
    t, f, _, _, info = newton_maximize(
        prob.fun, t0, maxiter=_NEWTON_MAXITER, tol=1e-10, ftol_rel=1e-14, armijo=0.0,
        slack=1e-14, min_step=1e-10, modify=modify, escape_saddles=False, polish=False,
        tangent=prob.tangent, feasible=prob.feasible, callback=prob.newton_moved,
        to_boundary=prob.to_boundary, extend=prob.extend, method="Newton (active face)")
    ok = info.converged
    if not ok and info.message == "line search failed":
        ok = prob.decrement() < max(1e-6, 1e-11 * abs(f))
    P, M = prob.unpack(t)
    return P, M, f, ok, info.iterations, list(info.trace[1:]), prob.gnorm


def _initial(d: Data, con: Constraint, start):
    """Starting values satisfying the constraint (a least-squares start when ``start`` is
    None: the solution of ``M' p = v_g`` (Lemma 7), clipped and shrunk to the lab rates)."""
    if start is None:
        M0 = (d.L_lik / d.L_lik.sum(axis=1, keepdims=True)) if d.joint else d.M_lab.copy()
        v = d.F / np.maximum(d.F.sum(axis=1, keepdims=True), 1)
        sol, *_ = np.linalg.lstsq(M0.T, v.T, rcond=None)
        P0 = np.clip(sol.T, 0.02, None)
        P0 = P0 / P0.sum(axis=1, keepdims=True)
        P0 = 0.5 * P0 + 0.5 * d.pi_lab  # shrink towards the lab rates: a safe interior start
    else:
        P0, M0 = (np.array(a, dtype=float) for a in start)
    if con.kind == "rows":
        P0 = np.broadcast_to(con.value, P0.shape).copy()
    elif con.kind in ("equal", "pooled"):
        w = d.F.sum(axis=1)
        P0 = np.broadcast_to((w @ P0) / w.sum(), P0.shape).copy()
    elif con.kind == "entry":
        P0[con.group] = _fix_entry(P0[con.group], con.cls, con.v)
    if not d.joint:
        M0 = d.M_lab.copy()
    return P0, M0


def _smoothed_M(d: Data) -> np.ndarray:
    """The lab estimate of ``M`` with half a count added to every cell (an interior point)."""
    A = d.L.shape[1]
    return (d.L + 0.5) / (d.L.sum(axis=1, keepdims=True) + 0.5 * A)


def _extra_starts(d: Data, con: Constraint, start):
    """Further starting points for the joint likelihood: ``M`` at the lab estimate smoothed
    into the interior (EM cannot leave a zero of ``M``) with ``p`` at the lab rates and near
    each vertex of the simplex (the same for every group)."""
    G, k = d.F.shape[0], d.L.shape[0]
    Ms = _smoothed_M(d)
    cands = [d.pi_lab] + [np.where(np.arange(k) == j, 0.95, 0.05 / (k - 1)) for j in range(k)]
    out = [(np.tile(p, (G, 1)), Ms) for p in cands]
    if start is not None:  # the caller's start with the smoothed M
        out.append((np.array(start[0], dtype=float), Ms))
    return out


def _random_starts(d: Data, options: FitOptions) -> list:
    """``options.random_starts`` further starts of the joint likelihood, drawn with
    ``options.seed``: each row of ``M`` and one row of base rates (the same for every group)
    uniform on their simplices. (Options pickled before session 86 have none.)"""
    n = getattr(options, "random_starts", 0)
    if not n:
        return []
    rng = np.random.default_rng(getattr(options, "seed", 0))
    G, (k, A) = d.F.shape[0], d.L.shape
    return [(np.tile(rng.dirichlet(np.ones(k)), (G, 1)), rng.dirichlet(np.ones(A), size=k))
            for _ in range(n)]


def more_random_starts(options: FitOptions) -> int:
    """The number of random starts to suggest after a fit with ``options`` that may have
    missed the highest maximum (the fit's warning and the profiles' ``ProfileError`` say it)."""
    return max(20, 4 * getattr(options, "random_starts", 0))


def maximize(d: Data, con: Constraint = Constraint(), start=None,
             options: FitOptions = FitOptions()) -> Estimate:
    """Maximise the objective under ``con``.

    EM (SQUAREM) to the neighbourhood of the maximum, then Newton on the active face; EM
    continues if Newton cannot be used (too many free parameters, an indefinite Hessian). With
    a warm ``start`` ``(P, M)`` (profiles, restricted fits) Newton is tried first.

    The fixed likelihood is concave in ``p``: its maximum is unique. The joint likelihood is
    only biconcave (concave in ``p`` for fixed ``M`` and in ``M`` for fixed ``p``) and can have
    several local maxima when the lab set is small, so the unrestricted fit and the fit with
    equal (or pooled) base rates also start from :func:`_extra_starts` and
    :func:`_random_starts` (cold: EM first) and keep the highest maximum; the other local
    maxima they reach are kept in the result's ``others`` (the profiles start from them:
    :class:`ProfileLoglik`). Fits with every ``p`` fixed
    (``"rows"``) are concave in ``M``; profiles (``"entry"``) start where they are told.
    """
    est = _maximize_once(d, con, start, options, warm=start is not None)
    found = [est]
    if d.joint and con.kind in ("free", "equal", "pooled"):
        for st in _extra_starts(d, con, start) + _random_starts(d, options):
            # a few EM cycles first: a start that is then next to the maximum found is in its
            # basin (EM increases the objective), so only the others are followed to the end
            P0, M0 = _initial(d, con, st)
            prob = _Problem(d, con, P0.shape[0], P0.shape[1], M0.shape[1])
            P, M, f, _ = _em(P0, M0, prob, min(options.maxiter, _EM_PROBE), options.tol)
            if _same_point(P, M, est) and f <= est.objective:
                continue
            e = _maximize_once(d, con, (P, M), options, warm=False)
            found.append(e)
            if e.objective > est.objective + 1e-9 * (1.0 + abs(est.objective)):
                est = e
    others = []
    for e in sorted(found, key=lambda e: -e.objective):
        if e.convergence.converged and np.isfinite(e.objective) and \
                not any(_same_point(e.P, e.M, o) for o in [est, *others]):
            others.append(e)
    return dataclasses.replace(est, others=tuple(others)) if others else est


def _same_point(P, M, e: Estimate) -> bool:
    """Whether ``(P, M)`` is within :data:`_SAME_MAX` of the estimate ``e`` (the same
    maximum)."""
    return max(np.max(np.abs(P - e.P)), np.max(np.abs(M - e.M))) < _SAME_MAX


def _start_values(d: Data, con: Constraint, start):
    """:func:`_initial`, with ``M`` smoothed into the interior where its zeros (from the lab
    counts) make the data impossible at the start (e.g. a base rate fixed at 0): EM cannot
    leave a zero."""
    P0, M0 = _initial(d, con, start)
    if d.joint and not np.isfinite(objective(P0, M0, d)):
        M0 = _smoothed_M(d)
    return P0, M0


def _warm_newton(d: Data, con: Constraint, P0, M0, prob: _Problem | None = None,
                 modify: bool = False) -> Estimate | None:
    """Newton alone from the start values ``(P0, M0)``: the maximum it converged to, or None.
    ``modify``: modified Newton steps where the Hessian on the face is indefinite (the same
    run where it never is); a run that took any is kept only if it ends at a strict local
    maximum inside the simplices (:meth:`_Problem.keeps_modified_run`)."""
    prob = prob or _Problem(d, con, P0.shape[0], P0.shape[1], M0.shape[1])
    f0 = objective(P0, M0, d)
    if not np.isfinite(f0):
        return None
    # (modified steps only from a start inside the simplices; a run that took one is
    # abandoned where it reaches the bound: it could only be kept back inside)
    prob.interior_only = modify = modify and prob._interior(prob.pack(P0, M0))
    try:
        P, M, f, ok, nit, ntrace, gnorm = _newton(P0, M0, prob, modify)
    except _LeftInterior:
        return None
    finally:
        prob.interior_only = False
    if not ok or (modify and not prob.keeps_modified_run(prob.pack(P, M))):
        return None
    conv = ConvergenceInfo(True, nit, "Newton (warm start)", "", np.asarray([f0, *ntrace]),
                           gnorm)
    return Estimate(P, M, f, conv)


def _maximize_once(d: Data, con: Constraint, start, options: FitOptions, warm: bool
                   ) -> Estimate:
    """One run of :func:`maximize` from ``start`` (None: the least-squares start); ``warm``:
    try Newton first."""
    P0, M0 = _start_values(d, con, start)
    prob = _Problem(d, con, P0.shape[0], P0.shape[1], M0.shape[1])
    if warm:
        est = _warm_newton(d, con, P0, M0, prob)
        if est is not None:
            return est
    # EM in rounds of _EM_FIRST cycles, each followed by a Newton attempt: Newton finishes as
    # soon as EM has reached its region of quadratic convergence (with a million field rows EM
    # alone can need thousands of cycles along the ridge of the joint likelihood)
    # (a warm start that Newton could not finish is near the maximum: a short first round)
    used = n_em = min(options.maxiter, _EM_WARM if warm else _EM_FIRST)
    P, M, f, info = _em(P0, M0, prob, n_em, options.tol)
    trace = list(info.trace)
    iters = info.iterations
    while True:
        ok, gnorm = False, np.nan
        if np.isfinite(f):
            P, M, f, ok, nit, ntrace, gnorm = _newton(P, M, prob)
            trace += ntrace
            iters += nit
        if ok:
            conv = ConvergenceInfo(True, iters, "EM (SQUAREM) + Newton", "", np.asarray(trace),
                                   gnorm)
            return Estimate(P, M, f, conv)
        if info.converged or used >= options.maxiter:
            break
        n_em = min(2 * n_em, _EM_FIRST, options.maxiter - used)
        used += n_em
        P, M, f, info = _em(P, M, prob, n_em, options.tol)
        trace += list(info.trace[1:])
        iters += info.iterations
    if np.isfinite(f):
        # EM's convergence test (a small change) also passes where it crawls along a ridge,
        # below the maximum, and Newton stops where the Hessian on the face is indefinite:
        # modified Newton, an ascent method there, finishes (session 63's randomised
        # comparison: profile points up to 43 log-lik units higher than at 83f8280, e.g.
        # RegressionURC's in test_profile_point_where_em_stops_on_a_ridge)
        P2, M2, f2, ok, nit, ntrace, gnorm = _newton(P, M, prob, modify=True)
        if ok and f2 >= f:
            conv = ConvergenceInfo(True, iters + nit, "EM (SQUAREM) + modified Newton", "",
                                   np.asarray(trace + ntrace), gnorm)
            return Estimate(P2, M2, f2, conv)
    conv = ConvergenceInfo(info.converged, iters, "EM (SQUAREM)", info.message,
                           np.asarray(trace), info.grad_norm)
    return Estimate(P, M, f, conv)


# ---------------------------------------------------------------------------------------------
# Inference helpers
# ---------------------------------------------------------------------------------------------
class ModeCurvature:
    """The objective's curvature at the unrestricted maximum, factorised once and shared by
    the profiles of one fit: :meth:`direction` gives the first-order path of the constrained
    maximum as one base rate moves away from its estimate.

    Parameters
    ----------
    data : Data
    estimate : Estimate
        The unrestricted maximum of ``data``'s objective.
    """

    def __init__(self, data: Data, estimate: Estimate):
        self.data, self.estimate = data, estimate
        self._factor = None  # (T, Cholesky factor of the reduced negative Hessian) or False

    def _factorised(self):
        if self._factor is None:
            P, M = self.estimate.P, self.estimate.M
            grad, H = grad_hess(P, M, self.data)
            T = tangent(P, M, self.data, Constraint(), grad)
            self._factor = False
            if T is not None and T.shape[1] > 0:
                _, Hr = _reduced(T, grad, H)
                try:
                    self._factor = (T.tocsr(), linalg.cho_factor(Hr, lower=True))
                except linalg.LinAlgError:
                    pass
        return self._factor

    def direction(self, group: int, cls: int) -> np.ndarray | None:
        """``d theta / d v`` of the maximum of the quadratic model at the estimate under
        ``p_group[cls] = v`` (theta = (vec P, vec M)); None where the Hessian is not negative
        definite on the tangent space or the rate is on the boundary."""
        fac = self._factorised()
        if not fac:
            return None
        T, chol = fac
        s = group * self.estimate.P.shape[1] + cls
        ts = T[s].toarray().ravel()
        if not np.any(ts):  # the rate is on the boundary (no free direction moves it)
            return None
        # (the factor was checked when it was made: each profile's solve skips the O(n^2) scan)
        a = linalg.cho_solve(chol, ts, check_finite=False)
        var = float(ts @ a)
        if not (np.isfinite(var) and var > 0):
            return None
        return np.asarray(T @ a).ravel() / var

    def directions(self, lls) -> None:
        """:meth:`direction` of the profiles ``lls`` (of this curvature) whose
        :meth:`ProfileLoglik.path_direction` is not yet known, solved together (one solve
        with a column per profile: many groups' profiles made hundreds of solves) and kept
        in each."""
        todo = [ll for ll in lls if not hasattr(ll, "_direction")]
        if not todo:
            return
        fac = self._factorised()
        if not fac:
            for ll in todo:
                ll._direction = None
            return
        T, chol = fac
        k = self.estimate.P.shape[1]
        TS = T[[ll.group * k + ll.cls for ll in todo]].toarray().T        # (n_free, L)
        a = linalg.cho_solve(chol, TS, check_finite=False)
        var = np.einsum("ij,ij->j", TS, a)
        out = np.asarray(T @ a) / np.where(var != 0, var, 1.0)
        good = TS.any(axis=0) & np.isfinite(var) & (var > 0)
        for i, ll in enumerate(todo):
            ll._direction = out[:, i].copy() if good[i] else None

    def __getstate__(self):
        return {"data": self.data, "estimate": self.estimate, "_factor": None}


class ProfileLoglik:
    """The profile log-likelihood of ``p_g[j]`` as a picklable callable
    (``ProfileLoglik(...).loglik_at`` is what :class:`~puinfer.inference.Profile` calls).

    Each evaluation is a constrained fit started from the unrestricted maximum moved along the
    first-order path of the constrained maximum (:meth:`ModeCurvature.direction`; nearer than
    the maximum itself, so Newton needs fewer steps; under the fixed likelihood with two
    classes nothing else moves, and the start is the maximum) by Newton alone (modified
    Newton where the Hessian on the face is indefinite, kept only at a strict maximum inside
    the simplices: :func:`_warm_newton`), or where that does not converge, by
    :func:`maximize` from the maximum itself; and from each other local maximum that
    the fit's starts reached (``estimate.others``) whose likelihood-ratio statistic against the
    maximum is at most :data:`_PROFILE_MODE_LR`; under a penalty, where the point is near 0
    or the profile from these beyond :data:`_PROFILE_MODE_LR`, also from the fit's interior
    start (:func:`_extra_starts`' first); the highest is kept. The starts depend on the
    point alone, so its value is the same whatever was evaluated before (a warm start from
    the previous point could follow a lower ridge of the joint likelihood). Under the fixed
    likelihood the groups are independent, so ``data`` may hold group ``g`` alone and
    ``offset`` adds the other groups' maximised objective.

    With a penalty on the base rates (``data.active_penalty``: its log is -inf where a rate
    is 0) a value within :data:`BOUNDARY` of 0 or 1 is evaluated at that distance from the
    bound: the profile there is its limit at the bound, which is finite when the penalty's
    null space reaches the bound (e.g. the second-order smoothness penalty and a steep
    log-linear shift), and the fits at the bound itself would be -inf.

    Parameters
    ----------
    data : Data
    group, cls : int
        Positions of the parameter in ``P`` (``group`` within ``data``).
    estimate : Estimate
        The unrestricted maximum (restricted to ``data``'s groups).
    offset : float
        Added to every objective (the multinomial constants, the other groups).
    options : FitOptions
    curvature : ModeCurvature, optional
        Of ``data`` at ``estimate`` (shared by the joint likelihood's profiles of one fit);
        None: built here (factorised at the first evaluation that needs it).
    """

    def __init__(self, data: Data, group: int, cls: int, estimate: Estimate, offset: float,
                 options: FitOptions, curvature: ModeCurvature | None = None):
        self.data, self.group, self.cls, self.offset = data, group, cls, offset
        self.options = options
        self.mode = (estimate.P, estimate.M)
        self.mode_objective = objective(*self.mode, data)  # (on ``data``: one group's alone)
        self.curvature = curvature if curvature is not None else ModeCurvature(data, estimate)
        # (a profile through a lower local maximum has R >= _PROFILE_MODE_LR near it: beyond
        # any cut-off in use)
        self.starts = (self.mode,) + tuple(
            (e.P, e.M) for e in estimate.others
            if 2.0 * (estimate.objective - e.objective) <= _PROFILE_MODE_LR)
        self.slopes: dict = {}  # v -> slope of the profile there (see slope)

    def loglik_at(self, v: float) -> float:
        """Maximised objective with ``p_group[cls] = v`` (-1e300 where the data are impossible)."""
        v = float(v)
        at = v
        if self.data.active_penalty is not None:
            at = min(max(v, BOUNDARY), 1.0 - BOUNDARY)
        con = Constraint("entry", group=self.group, cls=self.cls, v=at)
        # Newton from the predicted start, with modified steps where the Hessian on the face
        # is indefinite (a nearly flat ridge of the joint likelihood curving the other way)
        # kept only at a strict maximum inside the simplices; otherwise the full search from
        # the maximum itself. (Randomised comparison, 44,158 points: the full search from the
        # predicted start, or modified Newton from it kept wherever it converged, reached
        # lower points, by up to 1.2 log-lik units; this rule none, sessions 63-64.)
        pred = self._predicted(at)
        f = None if pred is self.mode else \
            _warm_newton(self.data, con, *_start_values(self.data, con, pred), modify=True)
        if f is None:
            f = maximize(self.data, con, start=self.mode, options=self.options)
        starts = list(self.starts[1:])
        if self.data.active_penalty is not None and (
                at != v or np.min(f.P[self.group]) < BOUNDARY
                or 2.0 * (self.mode_objective - f.objective) > _PROFILE_MODE_LR):
            # a penalised rate held near 0 (its log-penalty is -inf at 0) pushes the other
            # rates of its row towards 0, far from the fit's maximum along a path whose
            # endpoint EM's route decides; the search from there stopped at lower points than
            # the fit's interior start reaches (session 63's randomised comparison, problem
            # 92: R(0) 18.3 and 177 instead of 1.77 and 1.79; R(5e-5) 15.6 instead of 1.76;
            # R 51-215 instead of 1.79 from 1e-4 to 0.0058, a lower limit 0.0058 instead of
            # 0): that start too, where the point is near 0 or the profile from the maximum
            # beyond any cut-off in use (the start costs a search from afar: tried at every
            # point, RegressionURC's intervals took 5x as long)
            starts.append(_extra_starts(self.data, con, None)[0])
        for start in starts:
            e = maximize(self.data, con, start=start, options=self.options)
            if e.objective > f.objective:
                f = e
        self.slopes.pop(v, None)  # only this evaluation's slope may stand
        if np.isfinite(f.objective):
            if f.convergence.converged and at == v:
                self.slopes[v] = self._envelope_slope(f, v)
            return f.objective + self.offset
        return -1e300  # the data are impossible at this value (R is "infinite")

    def _predicted(self, v: float):
        """The maximum moved to ``p_group[cls] = v`` along :meth:`ModeCurvature.direction`,
        the step shortened where a component would fall below half its value (the start
        must stay inside the simplices; :func:`_initial` then sets the rate to ``v``)."""
        P, M = self.mode
        if not self.data.joint and P.shape[1] == 2:
            return self.mode  # (one binary group, M fixed: nothing else moves)
        direction = self.path_direction()
        if direction is None:
            return self.mode
        theta = np.concatenate([P.ravel(), M.ravel()])
        step = (v - P[self.group, self.cls]) * direction
        down = step < 0
        down[self.group * P.shape[1] + self.cls] = False  # (set to v by _initial anyway)
        scale = min(1.0, 0.5 * float(np.min(theta[down] / -step[down], initial=np.inf)))
        theta = np.maximum(theta + scale * step, 0.0)
        G, k = P.shape
        P1, M1 = theta[:G * k].reshape(G, k), theta[G * k:].reshape(M.shape)
        return P1 / P1.sum(axis=1, keepdims=True), M1 / M1.sum(axis=1, keepdims=True)

    def path_direction(self) -> np.ndarray | None:
        """:meth:`ModeCurvature.direction` of this profile's rate (computed at the first
        evaluation that needs it, then kept)."""
        if not hasattr(self, "_direction"):
            self._direction = self.curvature.direction(self.group, self.cls)
        return self._direction

    def __setstate__(self, state):
        # (results pickled before session 62 have no curvature: built on first use)
        self.__dict__.update(state)
        if "mode_objective" not in state:  # (pickled before session 63)
            self.mode_objective = objective(*self.mode, self.data)
        if "curvature" not in state:
            self.curvature = ModeCurvature(self.data, Estimate(*self.mode, np.nan, None))

    def _envelope_slope(self, f: Estimate, v: float) -> float:
        """``d profile / d v`` at the constrained maximum ``f`` (envelope theorem): the
        objective's derivative along one feasible direction of the constraint, ``p_g[j]`` up
        by one and the group's other rates down in proportion (zeros stay zero, so the
        direction stays on the active face); any other feasible direction differs from it by
        a tangent direction, along which the gradient vanishes at the maximum."""
        rest = 1.0 - v
        if not rest > 0:
            return float("nan")
        g = grad_p(f.P, f.M, self.data)[self.group]
        d = -f.P[self.group] / rest
        d[self.cls] = 1.0
        with np.errstate(invalid="ignore"):
            out = float(np.dot(np.where(d != 0, g, 0.0), d))
        return out if np.isfinite(out) else float("nan")

    def slope(self, v: float) -> float:
        """The profile's slope at ``v`` where :meth:`loglik_at` has evaluated it (NaN if not
        converged there): :class:`~puinfer.inference.Profile`'s ``derivative``."""
        return self.slopes.get(float(v), float("nan"))


def profile_loglik(d: Data, est: Estimate, g: int, j: int, llf_penalized: float,
                   options: FitOptions, curvature: ModeCurvature | None = None
                   ) -> ProfileLoglik:
    """The :class:`ProfileLoglik` of ``p_g[j]`` (whole data under the joint likelihood; group
    ``g`` alone under the fixed one, the others keeping their maximum). ``curvature``: the
    :class:`ModeCurvature` at ``est`` shared by the joint likelihood's profiles (of ``d``),
    or by one group's under the fixed likelihood (of that group's data: another profile's of
    the group)."""
    if d.joint:
        return ProfileLoglik(d, g, j, est, d.const, options, curvature)
    dg = d.group(g)
    # (maximize tries no further starts under the fixed likelihood)
    est_g = dataclasses.replace(est, P=est.P[g:g + 1], others=())
    offset = llf_penalized - objective(est_g.P, est.M, dg)
    return ProfileLoglik(dg, 0, j, est_g, offset, options, curvature)


def approx_se(P, M, F, j) -> float:
    """Standard error of ``p[j]`` (one group's rates ``P``, counts ``F``) from the fixed-M
    information: a first bracketing step for the profile."""
    q = P @ M
    ok = q > 0
    w = np.delete(P, j)
    rest = np.delete(M, j, axis=0)
    w = w / w.sum() if w.sum() > 0 else np.full(w.size, 1.0 / w.size)
    dq = M[j, ok] - w @ rest[:, ok]  # d q / d p_j, the others scaled proportionally
    info = float(np.sum(F[ok] * dq ** 2 / q[ok] ** 2))
    return float(min(0.25, 1.0 / np.sqrt(info))) if info > 0 else 0.05


def base_rate_cov(est: Estimate, d: Data, idx) -> np.ndarray | None:
    """Inverse observed information of the base rates ``P.flat[idx]`` (None if unavailable).

    The Hessian of the objective in ``(p, M_A)`` is projected on the simplex constraints
    (every other parameter, ``M_A`` included under the joint likelihood, is profiled out by the
    inverse); estimates on the boundary get NaN."""
    P, M = est.P, est.M
    grad, H = grad_hess(P, M, d)
    T = tangent(P, M, d, Constraint(), grad)
    if T is None or T.shape[1] == 0:
        return None
    _, Hr = _reduced(T, grad, H)
    try:
        chol = linalg.cho_factor(Hr, lower=True)
    except linalg.LinAlgError:
        return None
    Ts = T[idx].toarray()                       # rows of theta for the base rates
    cov = Ts @ linalg.cho_solve(chol, Ts.T)
    p = P.ravel()[idx]
    at_b = (p < BOUNDARY) | (p > 1 - BOUNDARY)
    cov[at_b, :] = np.nan
    cov[:, at_b] = np.nan
    return cov


def lab_error_se_ratio(d: Data, est: Estimate, idx) -> float:
    """For a fit of the fixed likelihood (``M_A`` at its lab estimate): the largest ratio, over
    the base rates ``P.flat[idx]``, of the standard error with ``M_A``'s lab sampling error
    counted to the one with ``M_A`` known; NaN where not available (e.g. a base rate on the
    boundary). Near 1 where the lab set is much larger than the field.

    The two-step (Murphy-Topel) variance: ``P``'s estimate moves with ``M_A`` by
    ``dP/dM = (-T' H_PP T)^{-1} T' H_PM`` (implicit function theorem on the tangent space ``T``
    of the simplices), and each row of the lab estimate is multinomial,
    ``Var(M_i) = (diag(M_i) - M_i M_i') / n_i``; the variance is the fixed likelihood's
    ``(-T' H_PP T)^{-1}`` plus ``dP/dM Var(M) dP/dM'``."""
    P, M = est.P, est.M
    G, k = P.shape
    A = M.shape[1]
    if G > 1 and G * k > DENSE_MAX_DIM:
        # M_A fixed: the groups' base rates are separate problems (the Hessian in P is block
        # diagonal), so group by group beyond the dense limit: not the dense (G k)^2 Hessian
        # (GBs at 10^4 groups), nor the dense tangent's None there (NaN: no warning)
        r = [lab_error_se_ratio(dataclasses.replace(d, F=d.F[g:g + 1]),
                                dataclasses.replace(est, P=P[g:g + 1], others=()),
                                [i - g * k for i in idx if g * k <= i < (g + 1) * k])
             for g in sorted({i // k for i in idx})]
        r = np.asarray(r, dtype=float)
        r = r[np.isfinite(r)]
        return float(r.max()) if r.size else float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        grad, H = grad_hess(P, M, d)
        T = tangent(P, M, d, Constraint(), grad)
        if T is None or T.shape[1] == 0:
            return float("nan")
        _, Hr = _reduced(T, grad, H)
        try:
            chol = linalg.cho_factor(Hr, lower=True)
        except linalg.LinAlgError:
            return float("nan")
        Ts = T[idx].toarray()
        cov = Ts @ linalg.cho_solve(chol, Ts.T)
        # the field term's mixed derivatives in (vec P, vec M) (the joint likelihood's blocks)
        HPM = grad_hess_blocks(P, M, dataclasses.replace(d, joint=True, lab_pseudocount=0.0)
                               )[1].HPM.reshape(G * k, k * A)
        Tp = T[:G * k].toarray()
        D = Ts @ linalg.cho_solve(chol, Tp.T @ HPM)
        n = d.L.sum(axis=1)
        VM = linalg.block_diag(*[(np.diag(M[i]) - np.outer(M[i], M[i])) / n[i]
                                 for i in range(k)])
        r = np.sqrt(1.0 + np.einsum("ij,jk,ik->i", D, VM, D) / np.diag(cov))
    r = r[np.isfinite(r)]
    return float(r.max()) if r.size else float("nan")


def fixed_gof_inflation(d: Data, P) -> np.ndarray:
    """Per group, the first-order factor ``1 + N_g sum_i p_gi^2 / n_i`` by which the fixed
    likelihood's goodness-of-fit statistic is inflated under Axiom 2 (field size ``N_g``, lab
    class counts ``n_i``): ``M_A``'s lab sampling error, which the chi-square reference
    ignores, adds to the field residuals. (Session 75's audit: mean statistic over df 14.3
    where this predicts 14.6, binary, lab 500, field 5000; 2.26 for 2.36 at lab 5000.)"""
    return 1.0 + d.F.sum(axis=1) * np.sum(np.asarray(P) ** 2 / d.L.sum(axis=1), axis=1)


def group_fits(d: Data, est: Estimate, options: FitOptions) -> list:
    """Per group: the data of that group alone and its maximum (refitted with ``M`` under the
    joint likelihood; the group's rows of the estimate under the fixed one)."""
    out = []
    for g in range(d.F.shape[0]):
        dg = d.group(g)
        if d.joint:
            eg = maximize(dg, Constraint(), start=(est.P[g:g + 1], est.M), options=options)
        else:
            eg = dataclasses.replace(est, P=est.P[g:g + 1])
        out.append((dg, eg))
    return out


def n_free_rates(con: Constraint, G: int, k: int) -> int:
    """The number of free base-rate parameters of ``G`` groups of ``k`` classes under ``con``."""
    return {"free": G * (k - 1), "entry": G * (k - 1) - 1, "equal": k - 1, "pooled": k - 1,
            "rows": 0}[con.kind]


def gof_test(d: Data, P, M, statistic: str, null: str, con: Constraint = Constraint()):
    """Chi-square goodness of fit of the fitted histograms (see ``URCResults.gof``) of a fit
    under the constraint ``con`` (its base rates' free parameters are the ones counted)."""
    k = P.shape[1]
    G, A = d.F.shape
    n_rates = n_free_rates(con, G, k)  # (a restricted fit's own, not the free fit's)
    E = d.F.sum(axis=1, keepdims=True) * (P @ M)
    if d.joint:
        # with the lab pseudo-counts the lab histograms enter as the augmented counts that the
        # penalised likelihood fits (L + C against (n_i + |A| c) M): the pseudo-counts are not
        # data, and comparing raw L with the penalised M would count the penalty as misfit
        Ll = d.L_lik
        obs = np.vstack([Ll, d.F])
        exp = np.vstack([Ll.sum(axis=1, keepdims=True) * M, E])
        ddof = k * (A - 1) + n_rates
    else:
        obs, exp, ddof = d.F, E, n_rates
    t = chisq_gof(obs, exp, ddof=ddof, statistic=statistic, null=null)
    if t.invalid_reason:
        return t
    method = f"URC {t.method} ({'joint' if d.joint else 'fixed'} likelihood)"
    if not d.joint:
        # said where the test is read: its chi-square reference ignores M_A's lab error
        infl = float(np.max(fixed_gof_inflation(d, P)))
        t = dataclasses.replace(t, extra={
            **t.extra, "note (fixed M_A)":
                f"M_A's lab sampling error is ignored: under Axiom 2 the statistic is "
                f"inflated by about {infl:.3g} (1 + N sum_i p_i^2 / n_i), so the p-value is "
                "too small unless that is near 1; the joint likelihood's test counts it"})
    shrunk = penalty_df_reduction(d, P, M, con)
    if shrunk > 0:
        # a penalised fit spends fewer than its nominal degrees of freedom on the base rates
        # (they are shrunk towards the penalty's null space), so more are left for the test
        df = t.df + shrunk
        extra = {**t.extra, "effective df of the penalised base rates":
                 f"{n_rates - shrunk:.3f} of {n_rates}"}
        return dataclasses.replace(t, df=df, pvalue=float(stats.chi2.sf(t.statistic, df)),
                                   method=method + " with effective degrees of freedom",
                                   extra=extra)
    return dataclasses.replace(t, method=method)


def score_statistic(d: Data, P0, M0) -> float:
    """Rao's score statistic of a restricted fit ``(P0, M0)`` of the data ``d`` against the
    unrestricted model **without** the penalty on the base rates (the lab pseudo-counts and a
    Dirichlet prior kept): ``U' I^-1 U``, ``U`` the gradient and ``I`` the observed information
    of the free model at the restricted estimate, on the tangent space of its simplices.

    Under a random lab design with the lab population's base rates tied to ``P`` (``d.pooled``,
    the no-shift null), the free model also has the lab population's base rates ``pi``: their
    block (the lab class counts' multinomial, score ``n / pi``) is independent of the rest.
    The directions the restricted fit maximised over have zero gradient there, so the
    statistic measures the free directions only. ``I`` is the expected (Fisher) information
    at the restricted fit. Only the restricted fit is needed: the
    unpenalised free fit of a deconvolution can be slow and on the boundary, the score test
    is evaluated in the interior. NaN if the information is not positive definite."""
    d0 = dataclasses.replace(d, pooled=False, penalty=None)
    P0 = np.asarray(P0, dtype=float)
    M0 = np.asarray(M0, dtype=float)
    g, _ = grad_hess(P0, M0, d0)
    T = tangent(P0, M0, d0, Constraint(), g)
    if T is None:
        return np.nan
    # the expected information (the Hessian is linear in the counts: evaluate it at their
    # expectations under the restricted fit); the observed one of the joint likelihood is
    # indefinite away from the free maximum
    ev = dataclasses.replace(d0, F=d.F.sum(axis=1, keepdims=True) * (P0 @ M0),
                             L=d0.L_lik.sum(axis=1, keepdims=True) * M0, lab_pseudocount=0.0)
    _, H = grad_hess(P0, M0, ev)
    U, I = _reduced(T, g, H)
    if d.random_lab and d.pooled:
        n = d.L.sum(axis=1).astype(float)
        pi = P0[0]
        k = pi.size
        last = int(np.argmax(pi))
        Tp = (np.eye(k) - np.eye(k)[:, [last]])[:, np.arange(k) != last]   # e_i - e_last
        Ip = Tp.T @ np.diag(n.sum() / pi) @ Tp
        U = np.concatenate([U, Tp.T @ (n / pi)])
        I = np.block([[I, np.zeros((I.shape[0], k - 1))], [np.zeros((k - 1, I.shape[0])), Ip]])
    try:
        c = np.linalg.cholesky(I)
    except np.linalg.LinAlgError:
        return np.nan
    z = np.linalg.solve(c, U)
    return float(z @ z)


def penalty_df_reduction(d: Data, P, M, con: Constraint = Constraint()) -> float:
    """How many degrees of freedom a penalty on the base rates (the smoothness penalty, a
    Dirichlet prior) removes from the fit: ``tr[(-H)^{-1} (-H_pen)]`` on the tangent space of
    the constraints (the simplices, and ``con``'s), ``H`` the Hessian of the penalised
    objective and ``H_pen`` the penalty's part (the effective number of parameters of a
    penalised likelihood is the nominal number minus this trace, as for a smoothing
    spline). 0 without such a penalty, or when the Hessian cannot be used. The lab
    pseudo-counts are not counted: the goodness-of-fit test treats them as data (augmented
    counts)."""
    if d.active_penalty is None and d.strength <= 0:
        return 0.0
    grad, H = grad_hess(P, M, d)
    _, H0 = grad_hess(P, M, dataclasses.replace(d, penalty=None, strength=0.0))
    T = tangent(P, M, d, con, grad)
    if T is None or T.shape[1] == 0:
        return 0.0
    _, Hr = _reduced(T, grad, H)
    _, Hr0 = _reduced(T, grad, H0)
    try:
        with warnings.catch_warnings():
            # an ill-conditioned Hr (a fit at a corner of the simplex: session 68's audit,
            # rcond 4e-58) gave scipy's LinAlgWarning and a trace from rounding noise: the
            # pseudo-inverse then gives the trace on the directions the fit determines
            warnings.simplefilter("error", linalg.LinAlgWarning)
            val = float(np.trace(linalg.solve(Hr, Hr - Hr0, assume_a="pos")))
    except linalg.LinAlgWarning:
        val = float(np.trace(np.linalg.pinv(Hr, hermitian=True) @ (Hr - Hr0)))
    except (linalg.LinAlgError, ValueError):
        return 0.0
    return val if np.isfinite(val) and val > 0 else 0.0


def bootstrap_lr(d: Data, est: Estimate, targets, n_boot: int, rng: np.random.Generator,
                 options: FitOptions) -> np.ndarray:
    """Parametric-bootstrap profile likelihood-ratio statistics at the fitted base rates.

    Counts are drawn from the fitted model (lab class counts multinomial with the lab sample's
    shares under a random lab design, else fixed; lab cells ``Mult(n_i, M_hat[i])``; field
    ``Mult(N_g, p_hat_g' M_hat)``), refitted (warm-started at the estimate) and the statistic
    ``2 {l(theta*) - l_profile(p_hat[g, j])}`` computed for each ``(g, j)`` in ``targets``: the
    bootstrap distribution of ``R(true value)`` under the fitted model (for a Bartlett-type
    calibration of the cut-off). Returns an ``n_boot x len(targets)`` array (NaN where a fit
    failed) and one of whether each resample's free estimate of the target lies on the
    boundary (within :data:`BOUNDARY` of 0 or 1). Under the joint likelihood the constrained
    fits of one resample are solved together where Newton alone finishes them
    (:func:`._stacked.entry_fits`; with many groups each is a fit of every group)."""
    P, M = est.P, est.M
    n = d.L.sum(axis=1)
    Ng = d.F.sum(axis=1).astype(np.int64)
    Q = P @ M
    out = np.full((n_boot, len(targets)), np.nan)
    at_bound = np.zeros((n_boot, len(targets)), dtype=bool)
    gj = (np.array([g for g, _ in targets]), np.array([j for _, j in targets])) \
        if targets else None
    # a joint fit's targets (a binary fit's: class 1's rates) are solved together (_stacked)
    from . import _stacked  # (it builds on this module)
    stacked = bool(gj is not None and d.joint and (P.shape[1] > 2 or np.all(gj[1] == 1))
                   and d.active_penalty is None and d.class_weight is None)
    for b in range(n_boot):
        db = _resample(d, n / n.sum(), M, Ng, Q, rng)
        # warm Newton from the estimate: the bootstrap data are near it (no further starts)
        free = _maximize_once(db, Constraint(), (P, M), options, warm=True)
        if not free.convergence.converged:
            continue
        if gj is not None:
            v = free.P[gj]
            at_bound[b] = (v < BOUNDARY) | (v > 1 - BOUNDARY)
        done = np.zeros(len(targets), dtype=bool)
        if stacked:
            # every target's fit of this resample solved together (the same Newton runs)
            f0s, done = _stacked.entry_fits(db, (free.P, free.M), gj[0], P[gj], gj[1])
            out[b, done] = np.maximum(2.0 * (free.objective - f0s[done]), 0.0)
        for t, (g, j) in enumerate(targets):
            if done[t]:
                continue
            con = Constraint("entry", group=g, cls=j, v=float(P[g, j]))
            f0 = _maximize_once(db, con, (free.P, free.M), options, warm=True)
            if f0.convergence.converged and np.isfinite(f0.objective):
                out[b, t] = max(2.0 * (free.objective - f0.objective), 0.0)
    return out, at_bound


def _resample(d: Data, pi_lab, M, Ng, Q, rng) -> Data:
    """One parametric-bootstrap data set: lab class counts ``Mult(n, pi_lab)`` under a random
    lab design (redrawn until every class is present: URC needs each), else the observed
    ones; lab cells ``Mult(n_i, M[i])``; field ``Mult(N_g, Q[g])``."""
    n = d.L.sum(axis=1)
    nb = n.astype(np.int64)
    if d.random_lab:
        while True:
            nb = rng.multinomial(int(n.sum()), pi_lab)
            if np.all(nb > 0):
                break
    Lb = rng.multinomial(nb, M).astype(float)
    Fb = rng.multinomial(Ng, Q).astype(float)
    return dataclasses.replace(d, L=Lb, F=Fb, pi_lab=Lb.sum(axis=1) / Lb.sum(), pooled=False)


def bootstrap_lr_test(d: Data, est0: Estimate, con: Constraint, n_boot: int,
                      rng: np.random.Generator, options: FitOptions) -> np.ndarray:
    """Parametric-bootstrap likelihood-ratio statistics of the null ``con`` (fit ``est0`` on
    data ``d``, ``d.pooled`` for the random design's no-shift null): counts drawn from the null
    fit (lab class counts multinomial with the null's lab base rates under a random lab design,
    else fixed), both fits redone (warm-started at the null fit) and ``2 (l_free - l_null)``
    returned for each resample (NaN where a fit failed)."""
    P0, M0 = est0.P, est0.M
    n = d.L.sum(axis=1)
    Ng = d.F.sum(axis=1).astype(np.int64)
    pi0 = P0[0] if con.kind == "pooled" else n / n.sum()
    Q = P0 @ M0
    out = np.full(n_boot, np.nan)
    for b in range(n_boot):
        db = _resample(d, pi0, M0, Ng, Q, rng)
        free = _maximize_once(db, Constraint(), (P0, M0), options, warm=True)
        dn = dataclasses.replace(db, pooled=con.kind == "pooled")
        null = _maximize_once(dn, con, (P0, M0), options, warm=True)
        if free.convergence.converged and null.convergence.converged:
            out[b] = max(2.0 * (free.objective + db.const - null.objective - dn.const), 0.0)
    return out


def permutation_lr_equal(d: Data, est0: Estimate, n_boot: int, rng: np.random.Generator,
                         options: FitOptions) -> np.ndarray:
    """Permutation likelihood-ratio statistics of equal base rates across the field groups.

    Under the null (with Axiom 2) the field rows of every group come from one distribution,
    so their group labels are exchangeable: each resample reallocates the pooled field
    histogram to the groups at random with their sizes kept (a permutation of the group
    labels over the field rows: multivariate hypergeometric draws; the lab data, the partition
    and any penalty unchanged), refits the free and the equal fits (warm-started at the equal
    fit ``est0``) and returns ``2 (l_free - l_equal)`` (NaN where a fit failed). Exact in
    finite samples, conditionally on the lab data, whatever a penalty does to the
    statistic's distribution. The equal fit itself is not redone: under equal base rates the
    field term depends on the pooled histogram alone, which a reallocation keeps, so ``est0``
    is the equal fit of every reallocation (its objective evaluated on each)."""
    P0, M0 = est0.P, est0.M
    pooled = d.F.sum(axis=0).astype(np.int64)
    Ng = d.F.sum(axis=1).astype(np.int64)
    out = np.full(n_boot, np.nan)
    for b in range(n_boot):
        left = pooled.copy()
        Fb = np.empty(d.F.shape)
        for g, n in enumerate(Ng[:-1]):  # (groups, not rows: a few draws per resample)
            Fb[g] = rng.multivariate_hypergeometric(left, int(n))
            left -= Fb[g].astype(np.int64)
        Fb[-1] = left
        db = dataclasses.replace(d, F=Fb, pooled=False)
        free = _maximize_once(db, Constraint(), (P0, M0), options, warm=True)
        if free.convergence.converged:
            out[b] = max(2.0 * (free.objective - objective(P0, M0, db)), 0.0)
    return out
