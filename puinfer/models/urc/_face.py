"""Newton's method on the active face of URC's simplices: the tangent basis and the Hessian
in blocks.

The objective's Hessian in ``theta = (vec P, vec M)`` is block diagonal in the groups' rows of
``P`` (the groups interact only through ``M``): an arrow matrix. :class:`BlockHessian` keeps
its blocks, and its reduction to the face of a :class:`PairBasis` (:class:`FaceHessian`)
solves the Newton system by the Schur complement of ``M``'s block, in ``O(G)`` operations.
Assembling and factorising the dense matrix costs ``O(G^2)`` and ``O(G^3)`` instead: with 300
groups the dense Newton steps took 70% of the time of the profile intervals (issue 17). Where
the matrix is not negative definite the modified step is taken by the same blocks
(:meth:`FaceHessian.ascent_direction`), with any number of groups: below
:data:`FACE_MIN_GROUPS` the Newton step is the dense one (:class:`DenseFace`), but a dense
modified step is an ``eigh`` of the whole face, 4-20x the cost of the blocks' from 20 free
parameters (session 93).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy.linalg import lapack

from ...base.optimize import _ascent_direction

__all__ = ["PairBasis", "BlockHessian", "FaceHessian", "DenseFace", "face_hessian",
           "DENSE_MAX_DIM"]

DENSE_MAX_DIM = 1500  # dense Newton steps (another basis) up to this size
FACE_MIN_GROUPS = 32  # ... and dense Newton steps with fewer groups: there the dense product
#                       and factor cost less than the arrow matrix's assembly (session 65:
#                       45-60 against 15 us on a few groups). Session 93 (one step at a fit,
#                       benchmarks/bench_urc_face.py; us dense / blocks): 16 groups of 2-5
#                       classes 29/62 to 301/391, 32 groups 46/78 to 573/492, 60 groups
#                       78/56 to 2248/1142; the intervals of random multiclass problems with
#                       60 groups 861 -> 616 CPU s in all by blocks (compare_urc_random.py;
#                       benchmarks/results/README.md, urc_face_s93)


class PairBasis:
    """A tangent basis ``T`` (n_theta x n_free) whose column ``c`` is ``e[plus[c]] -
    e[minus[c]]`` (mass moved between two components of one simplex): :func:`tangent`'s basis
    where no simplex block is shared by several rows of ``theta``. ``T' x`` is ``x[plus] -
    x[minus]`` and ``T d`` two ``bincount`` sums, the same terms in the same order as the
    sparse products (issue 17: building and multiplying the ``scipy.sparse`` basis was 40%
    of the time of the URC profile intervals); ``.T`` is the transpose (:class:`_PairBasisT`).
    """

    def __init__(self, n: int, plus: np.ndarray, minus: np.ndarray):
        self.plus, self.minus = plus, minus
        self.shape = (n, plus.size)
        self._layout = None

    @property
    def T(self):
        return _PairBasisT(self)

    def __matmul__(self, d):
        n = self.shape[0]
        return np.bincount(self.plus, d, n) - np.bincount(self.minus, d, n)

    def layout(self, G: int, k: int) -> dict:
        """Where the columns sit in the blocks of :class:`FaceHessian` for ``G`` groups of
        ``k`` classes (computed once per basis: Newton's iterations on one face reuse the
        basis, see ``_Problem.tangent``)."""
        if self._layout is None:
            Gk = G * k
            plus, minus = self.plus, self.minus
            nP = int(np.count_nonzero(plus < Gk))  # (the P columns come first: see tangent)
            grp, ip = np.divmod(plus[:nP], k)
            im = minus[:nP] - grp * k  # (a column moves mass within its group's row)
            # each P column's slot within its group (the columns are ordered by group; one
            # column per group, as with two classes, is slot 0 throughout)
            slot = np.zeros(nP, dtype=np.intp) if (np.diff(grp) > 0).all() else \
                np.arange(nP) - np.searchsorted(grp, grp)
            b = int(slot.max()) + 1 if nP else 0
            pad = np.ones((G, b), dtype=bool)
            pad[grp, slot] = False
            IP = np.zeros((G, b), dtype=np.intp)
            IM = np.zeros((G, b), dtype=np.intp)
            IP[grp, slot], IM[grp, slot] = ip, im
            pg, ps = np.nonzero(pad)
            # flat positions for the gathers (numpy's take on a flat axis is several times
            # faster than indexing with broadcast index arrays): the rows (g, IP[g, s]) of
            # P's blocks reshaped (G k, .), and the entries (g, s, IP[g, t]) of (G, b, k)
            rows = np.arange(G)[:, None] * k
            cell = ((np.arange(G)[:, None, None] * b + np.arange(b)[None, :, None]) * k)
            self._layout = dict(
                grp=grp, slot=slot, IP=IP, IM=IM, pad=pad,
                pad2=pad[:, :, None] | pad[:, None, :], pad_diag=(pg, ps, ps),
                mp=plus[nP:] - Gk, mm=minus[nP:] - Gk,
                rowP=(rows + IP).ravel(), rowM=(rows + IM).ravel(),
                cellP=cell + IP[:, None, :], cellM=cell + IM[:, None, :])
        return self._layout

    def same_as(self, other) -> bool:
        """Whether ``other`` is a :class:`PairBasis` with the same columns."""
        return (isinstance(other, PairBasis) and other.shape == self.shape
                and np.array_equal(other.plus, self.plus)
                and np.array_equal(other.minus, self.minus))

    def toarray(self) -> np.ndarray:
        out = np.zeros(self.shape)
        col = np.arange(self.shape[1])
        out[self.plus, col] = 1.0
        out[self.minus, col] = -1.0
        return out


class _PairBasisT:
    """The transpose of a :class:`PairBasis`: ``T' x = x[plus] - x[minus]`` (rows of ``x``)."""

    def __init__(self, basis: PairBasis):
        self.basis = basis
        self.shape = basis.shape[::-1]

    def __matmul__(self, x):
        return x[self.basis.plus] - x[self.basis.minus]

    def tocsr(self):
        return self


@functools.lru_cache(maxsize=32)
def _block_diagonal(G: int, k: int) -> tuple:
    """Row and column indices of the ``G`` diagonal ``k x k`` blocks of ``P``'s Hessian (built
    once per shape)."""
    r = np.arange(G)[:, None, None] * k + np.arange(k)[None, :, None]
    c = np.arange(G)[:, None, None] * k + np.arange(k)[None, None, :]
    r.flags.writeable = c.flags.writeable = False
    return r, c


class BlockHessian:
    """The objective's Hessian in ``theta = (vec P, vec M)`` by blocks.

    Parameters
    ----------
    HPP : ndarray, shape (G, k, k)
        The diagonal blocks of the groups' rows of ``P`` (no other ``P`` block is nonzero).
    HPM : ndarray, shape (G, k, k * A), or None
        The cross derivatives of each group's row of ``P`` with ``vec M`` (None where ``M`` is
        not a parameter: the fixed likelihood).
    HMM : ndarray, shape (k * A, k * A), or None
        ``vec M``'s block.
    nM : int
        ``k * A``, the length of ``vec M`` (in ``theta`` also when it is not a parameter).
    """

    __slots__ = ("HPP", "HPM", "HMM", "nM", "_face")

    def __init__(self, HPP, HPM, HMM, nM: int):
        self.HPP, self.HPM, self.HMM, self.nM = HPP, HPM, HMM, nM
        self._face = (None, None)  # the last reduction (the active set's check, Newton's
        # step and the decrement at a run's end all reduce on the same basis)

    def __neg__(self):
        neg = (None if a is None else -a for a in (self.HPM, self.HMM))
        return BlockHessian(-self.HPP, *neg, self.nM)

    def dense(self) -> np.ndarray:
        """The Hessian as an ``(n_theta, n_theta)`` array."""
        G, k, _ = self.HPP.shape
        Gk = G * k
        H = np.zeros((Gk + self.nM, Gk + self.nM))
        H[_block_diagonal(G, k)] = self.HPP
        if self.HPM is not None:
            H[:Gk, Gk:] = self.HPM.reshape(Gk, self.nM)
            H[Gk:, :Gk] = H[:Gk, Gk:].T
            H[Gk:, Gk:] = self.HMM
        return H

    def reduce(self, T):
        """``T' H T``: a :class:`FaceHessian` for a :class:`PairBasis` ``T`` and at least
        :data:`FACE_MIN_GROUPS` groups (or more than :data:`DENSE_MAX_DIM` columns), a
        :class:`DenseFace` for one with fewer groups, else an array (the product
        :func:`~puinfer.base.optimize.newton_maximize` forms)."""
        if not isinstance(T, PairBasis):
            return _dense_face(T, self.dense())
        if self.HPP.shape[0] < FACE_MIN_GROUPS and T.shape[1] <= DENSE_MAX_DIM:
            return DenseFace(_dense_face(T, self.dense()), self, T)
        if self._face[0] is not T:
            self._face = (T, FaceHessian(self, T))
        return self._face[1]


class FaceHessian:
    """``T' H T`` for a :class:`BlockHessian` ``H`` and a :class:`PairBasis` ``T``, kept as an
    arrow matrix: a block per group (its columns that move mass within the group's row of
    ``P``, padded to a common size ``b`` with ``-1`` on the diagonal), each group's border
    with ``M``'s columns, and ``M``'s corner. :meth:`ascent_direction` is
    :func:`~puinfer.base.optimize._ascent_direction`'s contract (its modified direction by
    blocks); the Newton step is solved by the Schur complement of the corner, where the matrix
    is negative definite exactly when every group's block and the Schur complement are."""

    def __init__(self, H: BlockHessian, T: PairBasis):
        G, k, _ = H.HPP.shape
        lay = T.layout(G, k)
        grp, slot, pad, mp, mm, rowP, rowM = (lay[key] for key in (
            "grp", "slot", "pad", "mp", "mm", "rowP", "rowM"))
        b = pad.shape[1]
        # rows (e[plus] - e[minus])' H of each group's columns, then their columns
        HPP = H.HPP.reshape(G * k, k)
        R = (HPP.take(rowP, axis=0) - HPP.take(rowM, axis=0)).ravel()
        D = R.take(lay["cellP"]) - R.take(lay["cellM"])
        D[lay["pad2"]] = 0.0
        D[lay["pad_diag"]] = -1.0
        if mp.size:
            HPM = H.HPM.reshape(G * k, H.nM)
            RB = (HPM.take(rowP, axis=0) - HPM.take(rowM, axis=0)).T
            # (laid out with M's columns outermost, as indexing RB[:, :, mp] lays it out: the
            # Schur complement's products B' Y then round as they did)
            B = (RB.take(mp, axis=0) - RB.take(mm, axis=0)).T.reshape(G, b, mp.size)
            B[pad] = 0.0
            RC = H.HMM[mp] - H.HMM[mm]
            C = RC[:, mp] - RC[:, mm]
        else:
            B, C = np.zeros((G, b, 0)), np.zeros((0, 0))
        self.D, self.B, self.C = D, B, C
        self.grp, self.slot, self.nP = grp, slot, grp.size
        self.shape = (grp.size + mp.size, grp.size + mp.size)
        self._last = None

    def ascent_direction(self, g, modify: bool = True):
        """The Newton direction ``-(T'HT)^{-1} g`` and True where ``T'HT`` is negative
        definite; else (``modify``) a modified direction and False, or (None, False).

        The modified direction is taken by blocks, in ``O(G)`` like the Newton step: each
        group's block of the negative Hessian with its eigenvalues replaced by their
        absolute values (at least ``1e-8`` of the matrix's largest entry), then the Schur
        complement of the corner formed from those blocks and modified the same way. The
        matrix so modified is positive definite (its blocks and their Schur complement
        are), so the direction ascends, and it equals the negative Hessian wherever that is
        positive definite. (A modified step of the dense matrix -- its eigenvectors, as
        :func:`~puinfer.base.optimize._ascent_direction` takes -- cost a dense ``eigh`` of
        ``(G + kA)``-dimensional matrices: with a rare class in the lab set and 300 groups,
        1,543 of them took 16 of the intervals' 41 s, and at 1000 groups the intervals did
        not finish in 9 minutes; session 85's audit.)"""
        g = np.asarray(g, dtype=float)
        if self._last is None or not np.array_equal(self._last[0], g):
            self._last = (g, self._solve(g, False))  # (the active set's check asks first)
        d = self._last[1]
        if d is not None:
            return d, True
        if not modify:
            return None, False
        return self._solve(g, True), False

    def _solve(self, g, modify: bool):
        """The Newton direction by the Schur complement (None where the matrix is not
        negative definite), or with ``modify`` the modified direction of
        :meth:`ascent_direction`."""
        nP = self.nP
        A, B, C = -self.D, -self.B, -self.C                  # the negative Hessian's blocks
        G, b, _ = A.shape
        gp = np.zeros((G, b))
        gp[self.grp, self.slot] = g[:nP]
        gm = g[nP:]
        floor = 1e-8 * max(1.0, np.abs(A).max(initial=0.0), np.abs(C).max(initial=0.0)) \
            if modify else 0.0
        if b == 1:
            a = A[:, 0, 0]
            if not (a > 0).all():
                if not modify:
                    return None
                a = np.maximum(np.abs(a), floor)
            Ainv = (1.0 / a)[:, None, None]
        elif b:
            try:
                if modify:
                    raise np.linalg.LinAlgError
                Linv = np.linalg.inv(np.linalg.cholesky(A))  # (negative definite test)
                Ainv = np.swapaxes(Linv, 1, 2) @ Linv
            except np.linalg.LinAlgError:
                if not modify:
                    return None
                Ainv = _inverse_of_modified(A, floor)
        else:
            Ainv = A
        if b == 1:  # (one column per group: each product below is a single product)
            y = Ainv[:, 0] * gp
            Y = np.multiply(Ainv, B, out=np.empty(B.shape)) if gm.size else None
        else:
            y = np.einsum("gst,gt->gs", Ainv, gp)            # A^{-1} g_P per group
            Y = Ainv @ B if gm.size else None                # A^{-1} B per group
        if gm.size:
            Bf = B.reshape(G * b, gm.size)
            S = C - Bf.T @ Y.reshape(G * b, gm.size)         # the Schur complement
            rhs = gm - Bf.T @ y.ravel()
            c, info = lapack.dpotrf(S, lower=1, clean=0)
            if info == 0:
                z, info = lapack.dpotrs(c, rhs, lower=1)
            if info != 0:
                if not modify:
                    return None
                z = _inverse_of_modified(S[None], floor)[0] @ rhs
            y = y - Y @ z
        else:
            z = gm
        if not (np.isfinite(y).all() and np.isfinite(z).all()):
            return None
        return np.concatenate([y[self.grp, self.slot], z])

    def dense(self) -> np.ndarray:
        """``T' H T`` as an array (the columns in ``T``'s order)."""
        n, nP = self.shape[0], self.nP
        G, b, _ = self.D.shape
        col = np.full((G, b), n)                             # (padding: an extra row and column)
        col[self.grp, self.slot] = np.arange(nP)
        out = np.zeros((n + 1, n + 1))
        out[col[:, :, None], col[:, None, :]] = self.D
        out[col[:, :, None], np.arange(nP, n)[None, None, :]] = self.B
        out = out[:n, :n]
        out[nP:, :nP] = out[:nP, nP:].T
        out[nP:, nP:] = self.C
        return out


class DenseFace:
    """``T' H T`` of a :class:`BlockHessian` with few groups, as the dense array ``array``
    (:meth:`BlockHessian.reduce`): :meth:`ascent_direction` takes the Newton step from its
    Cholesky factor, as :func:`~puinfer.base.optimize._ascent_direction` does for an array
    (the same bits), and the modified step by blocks (:class:`FaceHessian`; the dense
    one, an ``eigh`` of the whole face, cost 4-20x as much from 20 free parameters, and most
    of the intervals' time where warm runs meet indefinite Hessians: session 93)."""

    __slots__ = ("array", "_H", "_T")

    def __init__(self, array: np.ndarray, H: BlockHessian, T: PairBasis):
        self.array, self._H, self._T = array, H, T

    @property
    def shape(self):
        return self.array.shape

    def ascent_direction(self, g, modify: bool = True):
        """:meth:`FaceHessian.ascent_direction`'s contract."""
        d, newton = _ascent_direction(g, self.array, modify=False)
        if newton or not modify:
            return d, newton
        return FaceHessian(self._H, self._T)._solve(np.asarray(g, dtype=float), True), False


def _inverse_of_modified(A, floor: float) -> np.ndarray:
    """The inverses of the symmetric matrices ``A`` (a stack) with their eigenvalues replaced
    by ``max(|ev|, floor)``."""
    ev, V = np.linalg.eigh(A)
    return (V / np.maximum(np.abs(ev), floor)[:, None, :]) @ np.swapaxes(V, 1, 2)


def face_hessian(T, H):
    """``T' H T`` for a :class:`BlockHessian` (see :meth:`BlockHessian.reduce`) or an array."""
    if isinstance(H, BlockHessian):
        return H.reduce(T)
    return _dense_face(T, H)


def _dense_face(T, H) -> np.ndarray:
    """``T' H T`` for an array ``H``, as :func:`~puinfer.base.optimize.newton_maximize` forms
    it."""
    Tt = T.T.tocsr()
    return np.asarray(Tt @ np.asarray(Tt @ H).T)
