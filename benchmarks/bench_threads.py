"""Would threads over chunks of rows shorten DETM's evaluations on large samples? (issue 17)

On n = m = 5e5 rows of the bench's SAR design (``bench_detm._data``), one evaluation of the
profile log-EL's sums (:func:`puinfer.models.detm._el.profile_sums`, the derivatives' pass over
the rows, in chunks of ``BLOCK_ROWS``) and of the tilts, serially and with the chunks in a
thread pool (numpy releases the GIL in its loops; the chunks' sums added in order, so the
results are the same bit for bit), and ``np.exp`` over 1e6 values in two halves. Wall and CPU
seconds per call (mean of ``--repeat``)::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_threads.py --threads 2
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from bench_detm import _data  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.models.detm import _el  # noqa: E402


def timed(fn, repeat):
    fn()
    t, c = time.perf_counter(), time.process_time()
    for _ in range(repeat):
        out = fn()
    return out, (time.perf_counter() - t) / repeat, (time.process_time() - c) / repeat


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=500_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    src, tgt = _data(args.n, 15)
    d = pu.DETM(src, tgt).data
    p = d.p
    rng = np.random.default_rng(0)
    theta = np.r_[0.1, rng.normal(0, 0.1, p), -0.1, rng.normal(0, 0.1, p)]
    a1, b1, a2, b2 = _el.split(theta, p)
    core = _el._profile_core(a1, b1, a2, b2, 0.3, d.Z, d.y, 0.0, None)
    _, eta1, eta2, z1, z2, lam, D, ok, _, tmask, e1t, e2t, logmix = core
    N, B = len(tmask), _el.BLOCK_ROWS
    starts = range(0, N, B)
    tcount = np.r_[0, np.cumsum([np.count_nonzero(tmask[i:i + B]) for i in starts])]
    ex = ThreadPoolExecutor(args.threads)

    def sums_serial():
        return _el.profile_sums(d.X1, eta1, eta2, z1, z2, lam, D, tmask, e1t, e2t, logmix)

    def chunk(j):
        sl, st = slice(j * B, (j + 1) * B), slice(tcount[j], tcount[j + 1])
        return _el._sums_of_rows(d.X1[sl], eta1[sl], eta2[sl], z1[sl], z2[sl], lam, D[sl],
                                 tmask[sl], e1t[st], e2t[st], logmix[st], False)

    def sums_threads():
        res = list(ex.map(chunk, range(len(starts))))
        sums = res[0][:4]
        for r in res[1:]:
            sums = tuple(a + b for a, b in zip(sums, r[:4], strict=True))
        return (*sums, np.concatenate([r[4] for r in res]), np.concatenate([r[5] for r in res]))

    bm = np.stack([b1, b2])

    def tilts_serial():
        return _el.tilts(d.Z, b1, b2)

    def tilts_threads():
        out = np.empty((2, N))
        list(ex.map(lambda i: np.matmul(bm, d.Z[i:i + B].T, out=out[:, i:i + B]), starts))
        return out

    x = rng.random(1_000_000)
    y = np.empty_like(x)
    h = len(x) // 2

    def exp_serial():
        return np.exp(x, out=y)

    def exp_threads():
        list(ex.map(lambda s: np.exp(x[s:s + h], out=y[s:s + h]), (0, h)))
        return y

    print(f"n = m = {args.n}, {N} rows, {len(starts)} chunks of {B}; {args.threads} threads; "
          f"os.cpu_count() = {os.cpu_count()}")
    print("| work | serial wall s | threads wall s | serial CPU s | threads CPU s | same bits |")
    print("|---|---|---|---|---|---|")
    for name, ser, par in (("profile_sums", sums_serial, sums_threads),
                           ("tilts", tilts_serial, tilts_threads),
                           ("np.exp, 1e6 values", exp_serial, exp_threads)):
        a, ws, cs = timed(ser, args.repeat)
        a = [np.copy(v) for v in a] if isinstance(a, tuple) else np.copy(a)
        b, wp, cp = timed(par, args.repeat)
        same = (all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
                if isinstance(a, list) else np.array_equal(a, b))
        print(f"| {name} | {ws:.4f} | {wp:.4f} | {cs:.4f} | {cp:.4f} | {same} |")


if __name__ == "__main__":
    main()
