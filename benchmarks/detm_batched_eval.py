"""The bootstrap's unit of work, one DETM objective with gradient and Hessian
(``_el.free_objective(order=2)``) on a resample of n = m = 1000 rows and 15 features, as the
package computes it (one resample at a time) and batched over chunks of resamples (one set of
numpy calls for ``C`` resamples: stacked ``(C, N, k)`` designs, batched products). CPU
microseconds per resample and evaluation, the best of three passes over 192 resamples.

Issue 17's bootstrap SCAR test refits each of 199 resamples with about 100 such evaluations
(and 136 of the value alone); batching would pay if the evaluation's cost were numpy's
per-call overhead, which it is not: the three weighted Grams are about half of it and the
per-row passes the rest (session 76, ``benchmarks/results/README.md``).

    OPENBLAS_NUM_THREADS=1 taskset -c 0 python benchmarks/detm_batched_eval.py
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from puinfer.base.numeric import logaddexp, softplus  # noqa: E402
from puinfer.models.detm._el import free_objective  # noqa: E402

N, P, B = 2000, 15, 192


def _resamples(rng):
    Z = rng.standard_normal((B, N, P))
    X1 = np.ascontiguousarray(np.concatenate([np.ones((B, N, 1)), Z], axis=2))
    y = np.r_[np.zeros(N // 2), np.ones(N // 2)]
    return Z, X1, y


def single(v, Z, X1, y, c):
    """The package's evaluation, resample by resample."""
    X1F = [np.asfortranarray(x) for x in X1]
    t = time.process_time()
    for b in range(B):
        free_objective(v, Z[b], y, c, order=2, X1=X1[b], X1F=X1F[b])
    return time.process_time() - t


def batched(v, X1, y, C):
    """The same value, gradient and Hessian (without the penalty) for ``C`` resamples at a
    time."""
    k = P + 1
    V = np.tile(v, (C, 1)).reshape(C, 2, k)
    t = time.process_time()
    for s in range(0, B, C):
        X = X1[s:s + C]
        eta = np.matmul(V, X.transpose(0, 2, 1))
        logS = logaddexp(eta[:, 0], eta[:, 1])
        log1pS = softplus(logS)
        logS @ y - log1pS.sum(1)
        q = np.exp(eta - logS[:, None])
        Pm = np.exp(eta - log1pS[:, None])
        np.matmul(y * q - Pm, X)
        yq = y * q[:, 0] * q[:, 1]
        W = yq[:, None] - Pm * (1 - Pm)
        w12 = Pm[:, 0] * Pm[:, 1] - yq
        Wall = np.concatenate([X * W[:, 0, :, None], X * w12[:, :, None],
                               X * W[:, 1, :, None]], axis=2)
        np.matmul(X.transpose(0, 2, 1), Wall)
    return time.process_time() - t


def main():
    rng = np.random.default_rng(0)
    Z, X1, y = _resamples(rng)
    v = rng.standard_normal(2 * (P + 1)) * 0.1
    rows = [("package, one resample at a time", min(single(v, Z, X1, y, 0.01)
                                                   for _ in range(3)))]
    for C in (1, 4, 16, 64):
        rows.append((f"batched, {C} resamples per call", min(batched(v, X1, y, C)
                                                            for _ in range(3))))
    tab = pd.DataFrame(rows, columns=["evaluation", "cpu_s"])
    tab["us_per_resample_eval"] = tab.cpu_s / B * 1e6
    print(tab.to_string(index=False, formatters={"cpu_s": "{:.3f}".format,
                                                 "us_per_resample_eval": "{:.1f}".format}))


if __name__ == "__main__":
    main()
