"""An independent maximiser of URC's joint objective (binary classifier):
    f(p, M) = sum_{g,a} F[g,a] log(p_g M[1,a] + (1-p_g) M[0,a]) + sum_{i,a} (L[i,a] + c) log M[i,a]
(the objective of puinfer/models/urc/_likelihood.py: `objective`, joint=True, lab_prior="uniform",
pseudo-count c per cell; c = 1/|A| is the default "perks"; the random-design class-count term is a
constant off the "pooled" null). Written from the formula only, no puinfer code.
Profile approach: for fixed M each p_g solves a 1-D concave problem on [0, 1] (vectorised
bisection on the derivative); the outer problem over M (rows softmax-parametrised) by L-BFGS with
the envelope-theorem gradient, from several starts, polished by Nelder-Mead for small |A|."""
import numpy as np
from scipy import optimize, special


def inner_p(F, M):
    d = M[1] - M[0]                              # (A,)
    def h(p):                                     # derivative in p_g, decreasing
        q = M[0][None, :] + p[:, None] * d[None, :]
        return (F * d[None, :] / q).sum(1)
    G = F.shape[0]
    lo, hi = np.zeros(G), np.ones(G)
    h0, h1 = h(lo), h(hi)
    p = np.empty(G)
    at0, at1 = h0 <= 0, h1 >= 0
    mid = ~(at0 | at1)
    a, b = lo[mid], hi[mid]
    Fm = F[mid]
    for _ in range(80):
        c = 0.5 * (a + b)
        q = M[0][None, :] + c[:, None] * d[None, :]
        s = (Fm * d[None, :] / q).sum(1) > 0
        a = np.where(s, c, a); b = np.where(s, b, c)
        if np.all(b - a < 1e-17): break
    p[mid] = 0.5 * (a + b); p[at0] = 0.0; p[at1] = 1.0
    return p

def obj(p, M, L, F, c):
    Q = np.outer(1 - p, M[0]) + np.outer(p, M[1])
    with np.errstate(divide="ignore"):
        return float(special.xlogy(F, Q).sum() + special.xlogy(L + c, M).sum())

def _M(theta, A):
    th = np.zeros((2, A)); th[:, 1:] = theta.reshape(2, A - 1)
    return special.softmax(th, axis=1)

def negprof(theta, L, F, c):
    A = L.shape[1]
    M = _M(theta, A)
    p = inner_p(F, M)
    Q = np.outer(1 - p, M[0]) + np.outer(p, M[1])
    W = np.where(F > 0, F / Q, 0.0)
    gM = np.vstack([((1 - p)[:, None] * W).sum(0), (p[:, None] * W).sum(0)]) + (L + c) / M
    # chain rule through the softmax: d/dth_ia = M_ia (gM_ia - sum_b M_ib gM_ib)
    gth = M * (gM - (M * gM).sum(1, keepdims=True))
    return -obj(p, M, L, F, c), -gth[:, 1:].ravel()

def newton_polish(th, L, F, c, iters=30):
    """Newton steps on the profile with a central-difference Hessian of the analytic gradient,
    with step halving (the profile objective must not decrease)."""
    f, g = negprof(th, L, F, c)
    for _ in range(iters):
        n = th.size; H = np.empty((n, n)); h = 1e-6
        for j in range(n):
            e = np.zeros(n); e[j] = h
            H[:, j] = (negprof(th + e, L, F, c)[1] - negprof(th - e, L, F, c)[1]) / (2 * h)
        H = 0.5 * (H + H.T)
        try:
            step = -np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)) or g @ step >= 0: step = -g / max(1.0, np.abs(g).max())
        t = 1.0
        while t > 1e-8:
            f2, g2 = negprof(th + t * step, L, F, c)
            if f2 <= f: break
            t /= 2
        if t <= 1e-8: break
        th, f, g = th + t * step, f2, g2
        if np.abs(g).max() < 1e-9: break
    return th

def fit(L, F, c, starts=None):
    L = np.asarray(L, float); F = np.atleast_2d(np.asarray(F, float)); A = L.shape[1]
    Ms = [(L + c) / (L + c).sum(1, keepdims=True), (L + 0.5) / (L + 0.5).sum(1, keepdims=True),
          np.vstack([np.linspace(2, 1, A), np.linspace(1, 2, A)]) / np.linspace(1, 2, A).sum()]
    if starts: Ms += starts
    best = None
    for M0 in Ms:
        th0 = np.log(M0[:, 1:] / M0[:, :1]).ravel()
        r = optimize.minimize(negprof, th0, args=(L, F, c), jac=True, method="L-BFGS-B",
                              options=dict(maxiter=5000, ftol=1e-15, gtol=1e-10))
        th = newton_polish(r.x, L, F, c)
        f = negprof(th, L, F, c)[0]
        if best is None or f < best[0]: best = (f, th)
    M = _M(best[1], A); p = inner_p(F, M)
    return p, M, obj(p, M, L, F, c)
