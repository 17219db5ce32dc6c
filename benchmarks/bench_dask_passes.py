"""Benchmark: passes over the data of small DETM fits on Dask collections (issue 17).

On a cluster every pass is a Dask computation (at 1e7 rows about 15 s each,
``results/bench_dask_detm.md``), so the number of passes is the cost that matters; here the
data are small and the sync scheduler runs them in this process, so that the counts are exact
and the times show the per-pass overhead alone. Two fits:

* ``unidentified``: ``tests/test_dask.py``'s reproducer (800 rows, the source shifted by 1
  in x1, the target all negatives: pi not identified, its 95% interval all of [0, 1]), rows in
  memory (``DaskTiltData`` keeps small data's rows; every pass still goes through the block
  sums), the default fit and ``conf_int_pi()``;
* ``sar-boundary``: Liu et al.'s SAR design, pi = 0.7, n = m = 300, p = 2, seed 11 (the label
  boundary test's data), every pass on the partitions (``LOCAL_ROWS = 0``), the default fit and
  the 95% profile interval around pi-hat.

Usage::

    python benchmarks/bench_dask_passes.py --out now.csv [--previous before.csv]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from unittest import mock

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _table import add_arguments, finish  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.models.detm import _dask  # noqa: E402
from puinfer.simulate import sar_design  # noqa: E402


def unidentified():
    n = 400
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x1": rng.normal(size=2 * n), "x2": rng.normal(size=2 * n),
                       "labeled": np.r_[np.ones(n), np.zeros(n)].astype(int)})
    df.loc[:n - 1, "x1"] += 1
    m = pu.DETM.from_formula("labeled ~ x1 + x2", data=dd.from_pandas(df, npartitions=3))
    return m, lambda r: r.conf_int_pi()


def sar_boundary():
    s = sar_design(300, 300, 0.7, p=2, rng=np.random.default_rng(11))
    X = s[["x1", "x2"]].to_numpy()
    lab = s.labeled.to_numpy() == 1
    frames = [pd.DataFrame(X[rows], columns=["x1", "x2"]) for rows in (lab, ~lab)]
    with mock.patch.object(_dask, "LOCAL_ROWS", 0):  # (read when the model is built)
        m = pu.DETM(dd.from_pandas(frames[0], npartitions=2),
                    dd.from_pandas(frames[1], npartitions=3))
    return m, lambda r: r.profile_pi().conf_int(0.05)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap)
    args = ap.parse_args()
    rows = []
    for name, build in (("unidentified", unidentified), ("sar-boundary", sar_boundary)):
        with warnings.catch_warnings(), dask.config.set(scheduler="sync"):
            warnings.simplefilter("ignore")
            m, interval = build()
            t0 = time.perf_counter()
            r = m.fit()
            ci = interval(r)
            seconds = time.perf_counter() - t0
        rows.append(dict(fit=name, fit_and_interval_s=seconds, passes=m.data.passes,
                         pi_hat=float(r.pi), lower=float(ci.iloc[0]), upper=float(ci.iloc[1])))
    finish(pd.DataFrame(rows), args, key=["fit"], times=["fit_and_interval_s", "passes"],
           floatfmt=".10g")


if __name__ == "__main__":
    main()
