"""Fixed-M group fits (binary) written from the formula, and the two-stage remedy.
  l_g(p) = sum_a F[g,a] log(M0[a] + p d[a]),  d = M1 - M0   (concave in p on [0, 1])
two-stage: M = the one-group joint fit's M (lab + pooled field); each group by l_g with that M.
Intervals: 'naive' profile (LR) interval of l_g (ignores M's uncertainty); 'delta' = the naive
interval with each side widened by sqrt(1 + vM_g / vnaive_g), vM_g = J_g Cov(theta) J_g' the
delta-method variance that M's uncertainty (theta: softmax params of M, covariance from the
pooled joint fit's observed information, objective indep.obj with Perks c = 1/A) adds to p_g."""
import indep
import numpy as np
from scipy import special

CUT = 3.841458820694124

def ll(F, M, p):
    q = M[0][None, :] + p[:, None] * (M[1] - M[0])[None, :]
    return special.xlogy(F, q).sum(1)

def fit_groups(F, M):
    F = np.atleast_2d(np.asarray(F, float))
    return indep.inner_p(F, M)

def _bisect(f, a, b, it=70):
    # f(a) > 0 >= f(b) (vectorised); returns the root
    for _ in range(it):
        c = 0.5 * (a + b); s = f(c) > 0
        a = np.where(s, c, a); b = np.where(s, b, c)
    return 0.5 * (a + b)

def profile_ci(F, M, p):
    F = np.atleast_2d(np.asarray(F, float)); lmax = ll(F, M, p)
    R = lambda x: CUT - 2 * (lmax - ll(F, M, x))          # >0 inside the interval
    zero, one = np.zeros_like(p), np.ones_like(p)
    lo = np.where(R(zero) > 0, 0.0, _bisect(lambda x: -R(x), zero, p))
    lo = np.where(R(zero) > 0, 0.0, lo)
    hi = np.where(R(one) > 0, 1.0, _bisect(R, p, one))
    return lo, hi

def info(F, M, p):
    d = M[1] - M[0]; q = M[0][None, :] + p[:, None] * d[None, :]
    return (F * (d[None, :] / q) ** 2).sum(1)

def theta_of(M):
    return np.log(M[:, 1:] / M[:, :1]).ravel()

def joint_cov_theta(L, F1, p, M, c):
    """Covariance of theta from the inverse observed information of the one-group joint objective."""
    A = M.shape[1]
    x0 = np.r_[p, theta_of(M)]
    def f(x):
        return indep.obj(np.array([x[0]]), indep._M(x[1:], A), L, np.atleast_2d(F1), c)
    n = x0.size; H = np.empty((n, n)); h = 1e-4
    for i in range(n):
        for j in range(i, n):
            e_i = np.zeros(n); e_i[i] = h; e_j = np.zeros(n); e_j[j] = h
            H[i, j] = H[j, i] = (f(x0 + e_i + e_j) - f(x0 + e_i - e_j) - f(x0 - e_i + e_j) + f(x0 - e_i - e_j)) / (4 * h * h)
    C = np.linalg.inv(-H)
    return C[1:, 1:], C[0, 0]

def score(F, M, p):
    d = M[1] - M[0]; q = M[0][None, :] + p[:, None] * d[None, :]
    return (F * d[None, :] / q).sum(1)

def two_stage(L, F, p1, M, c):
    """F: (G, A) group histograms; (p1, M): the one-group joint fit on the pooled field.
    Returns p, naive (lo, hi), delta (lo, hi)."""
    F = np.asarray(F, float); A = M.shape[1]
    p = fit_groups(F, M); lo, hi = profile_ci(F, M, p)
    Ct, _ = joint_cov_theta(L, F.sum(0), p1, M, c)
    th = theta_of(M); h = 1e-6
    J = np.empty((F.shape[0], th.size))
    I = info(F, M, p)
    for k in range(th.size):
        e = np.zeros(th.size); e[k] = h
        J[:, k] = (score(F, indep._M(th + e, A), p) - score(F, indep._M(th - e, A), p)) / (2 * h) / I
    interior = (p > 1e-9) & (p < 1 - 1e-9)
    vM = np.where(interior, np.einsum("gi,ij,gj->g", J, Ct, J), 0.0)
    k = np.sqrt(1 + vM * I)
    dlo = np.clip(p - k * (p - lo), 0, 1); dhi = np.clip(p + k * (hi - p), 0, 1)
    return p, lo, hi, dlo, dhi, vM, 1 / I
