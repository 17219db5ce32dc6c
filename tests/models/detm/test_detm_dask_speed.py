"""DETM on small Dask collections: after the first pass the block sums are added over the rows
that pass collected, in memory, not by a Dask computation per pass.

Found in session 61: on 800 rows where pi is not identified (the source shifted, the target all
negatives: pi-hat 0.80, the 95% interval all of [0, 1]) the Dask fit made 11,768 passes (9,397
of them in the probe's label-boundary searches, 8,680 in four by SLSQP near pi = 1) and took
140 s on the synchronous scheduler, 2.3 s in memory: each pass was a Dask computation of
milliseconds over three partitions. The first pass already holds every row in memory up to
``2 * SUBSAMPLE_SIZE`` rows (the starts' sample), so the later passes now read those rows: the same
sums by the same functions, the same searches, one Dask computation. The partition route
(``LOCAL_ROWS = 0``) is checked against the in-memory fit too, so that the block sums over Dask
partitions stay tested on small data.

The bar of agreement with the in-memory fit is ``tests/test_dask.py``'s: 1e-9 relative.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

import puinfer as pu  # noqa: E402
from puinfer.models.detm import _dask  # noqa: E402

RTOL = 1e-9
#: Dask computations a small fit may make: the first, validating pass (any further one would
#: be one of the thousands of passes of its searches)
DASK_COMPUTATIONS = 1


def close(a, b, rtol=RTOL):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    np.testing.assert_allclose(b, a, rtol=rtol, atol=0)


def _same_fit(r0, r1):
    close(r0.params, r1.params)
    close(r0.pi, r1.pi)
    close(r0.llf, r1.llf)
    close(r0.llf_penalized, r1.llf_penalized)
    close(r0.bse, r1.bse)
    close(r0.lagrange_multipliers, r1.lagrange_multipliers)
    close(r0.conf_int_pi(), r1.conf_int_pi())
    assert (r0.nobs, r0.n_source, r0.n_target) == (r1.nobs, r1.n_source, r1.n_target)
    if r0.label_check is not None:
        close(r0.kl_divergences, r1.kl_divergences)
        close(r0.label_check.se, r1.label_check.se)


class _TooMany(Exception):
    pass


@pytest.fixture
def dask_computations(monkeypatch):
    """The Dask computations of the DETM module (:func:`puinfer._dask.reduce_blocks`)
    counted; past 50 the fit is stopped (the old code made thousands, minutes of them)."""
    calls = [0]
    orig = _dask.reduce_blocks

    def counted(*args, **kwargs):
        calls[0] += 1
        if calls[0] > 50:
            raise _TooMany(f"{calls[0]} Dask computations")
        return orig(*args, **kwargs)

    monkeypatch.setattr(_dask, "reduce_blocks", counted)
    return calls


def _unidentified():
    """The session's reproducer: 800 rows, the source shifted by 1 in x1, the target all
    negatives (pi-hat 0.798 in the fit's labelling, the 95% interval all of [0, 1])."""
    n = 400
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x1": rng.normal(size=2 * n), "x2": rng.normal(size=2 * n),
                       "labeled": np.r_[np.ones(n), np.zeros(n)].astype(int)})
    df.loc[:n - 1, "x1"] += 1
    return df


@pytest.fixture(scope="module")
def identified():
    """``tests/test_dask.py``'s sample (pi identified, an interval inside (0, 1)) and its
    in-memory fit with the plain profile interval, what a Dask fit gives."""
    from puinfer.simulate.detm import pu_normal

    d = pu_normal(400, 500, 0.4, np.zeros(2), np.r_[0.5, 0.0], np.r_[2.0, 1.5],
                  rng=np.random.default_rng(7))[["labeled", "x1", "x2"]]
    r0 = pu.DETM.from_formula("labeled ~ x1 + x2", data=d).fit(pi_interval="profile")
    return d, r0


def test_small_fit_with_pi_unidentified_makes_one_dask_computation(dask_computations):
    df = _unidentified()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r0 = pu.DETM.from_formula("labeled ~ x1 + x2", data=df).fit(pi_interval="profile")
        with dask.config.set(scheduler="sync"):
            m1 = pu.DETM.from_formula("labeled ~ x1 + x2",
                                      data=dd.from_pandas(df, npartitions=3))
            r1 = m1.fit()
            ci1 = r1.conf_int_pi()
    assert dask_computations[0] == DASK_COMPUTATIONS
    assert m1.data.dask_passes == DASK_COMPUTATIONS
    # the searches were made, not skipped: thousands of passes, over the rows in memory
    assert m1.data.passes > 1000
    _same_fit(r0, r1)
    close(r0.conf_int_pi(), ci1)
    assert list(ci1) == [0.0, 1.0]


def test_small_fit_identified_makes_one_dask_computation(identified, dask_computations):
    d, r0 = identified
    with dask.config.set(scheduler="sync"):
        m1 = pu.DETM.from_formula("labeled ~ x1 + x2", data=dd.from_pandas(d, npartitions=3))
        r1 = m1.fit()
        _same_fit(r0, r1)
    assert dask_computations[0] == m1.data.dask_passes == DASK_COMPUTATIONS
    assert m1.data.passes > 100


def test_small_fit_by_partitions_when_asked(identified, monkeypatch):
    """``LOCAL_ROWS = 0``: every pass a Dask computation over the partitions (the route of
    large data), the same fit."""
    d, r0 = identified
    monkeypatch.setattr(_dask, "LOCAL_ROWS", 0)
    with dask.config.set(scheduler="sync"):
        m2 = pu.DETM.from_formula("labeled ~ x1 + x2", data=dd.from_pandas(d, npartitions=3))
        r2 = m2.fit()
        _same_fit(r0, r2)
    assert m2.data._rows is None
    assert m2.data.dask_passes == m2.data.passes > 100


def test_small_fit_pickles_without_its_rows(identified):
    d, _ = identified
    with dask.config.set(scheduler="sync"):
        m1 = pu.DETM.from_formula("labeled ~ x1 + x2", data=dd.from_pandas(d, npartitions=2))
        r1 = m1.fit(probe=False)
        ci = r1.conf_int_pi()
    assert r1.model.data._rows is not None
    # the rows held in memory are not pickled (nor the Dask collections)
    r2 = pickle.loads(pickle.dumps(r1))
    assert r2.model.data._rows is None
    close(ci, r2.conf_int_pi(), rtol=0)
    with pytest.raises(RuntimeError, match="unpickled"):
        r2.conf_int_pi(0.2)


def test_the_rows_in_memory_give_the_partitions_block_sums(identified, monkeypatch):
    """Each quantity the fit asks of the data, from the rows in memory and from the Dask
    partitions (``LOCAL_ROWS = 0``), at the fit and away from it: the same sums."""
    d, r0 = identified
    with dask.config.set(scheduler="sync"):
        ddf = dd.from_pandas(d, npartitions=3)
        local = pu.DETM.from_formula("labeled ~ x1 + x2", data=ddf).data
        monkeypatch.setattr(_dask, "LOCAL_ROWS", 0)
        parts = pu.DETM.from_formula("labeled ~ x1 + x2", data=ddf).data
        assert local._rows is not None and parts._rows is None
        th = r0._fit.theta
        p = local.p
        v = np.r_[th[:p + 1], th[p + 1:]] * 0.9
        compared = []
        for theta in (th, th + 0.05, np.r_[th[p + 1:], th[:p + 1]]):
            for pi in (r0.pi, 0.2, 0.7):
                a = local.profile_log_el(theta, pi, 0.01, order=2, with_pi=True, strict=True)
                b = parts.profile_log_el(theta, pi, 0.01, order=2, with_pi=True, strict=True)
                assert np.isfinite(a[0]) == np.isfinite(b[0])
                if np.isfinite(a[0]):
                    compared.append("log-EL")
                    close(a[0], b[0])
                    close(a[3]["lam"], b[3]["lam"])
                    for x, y in zip(a[1:3], b[1:3], strict=True):
                        np.testing.assert_allclose(y, x, rtol=1e-9, atol=1e-9 * np.abs(x).max())
                    # (0 at the fit: to rounding of a sum over 900 rows)
                    np.testing.assert_allclose(parts.pi_slope(theta, pi),
                                               local.pi_slope(theta, pi), rtol=1e-9, atol=1e-9)
                ga, gb = local.label_gap(theta, pi, order=1), parts.label_gap(theta, pi, order=1)
                if ga[0] is not None:
                    compared.append("gap")
                    np.testing.assert_allclose(gb[0], ga[0], rtol=1e-9, atol=1e-12)
                    np.testing.assert_allclose(gb[1], ga[1], rtol=1e-9,
                                               atol=1e-9 * np.abs(ga[1]).max())
        close(local.free_sums(v)["H"], parts.free_sums(v)["H"])
        close(local.pi_of_v(v), parts.pi_of_v(v))
        close(local.kl_divergences(v, 0.4), parts.kl_divergences(v, 0.4))
        close(local.normalise_alphas(False, v, th), parts.normalise_alphas(False, v, th))
        close(local.kl_difference_se(v, 0.01), parts.kl_difference_se(v, 0.01))
    assert compared.count("log-EL") >= 5 and compared.count("gap") >= 5
    assert local.dask_passes == 1 < parts.dask_passes
