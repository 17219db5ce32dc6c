"""Property-based tests of URC (issue 13): rows aligned on the pandas index, columns matched
by name, bad input always refused naming the argument.

(a) shuffling the lab rows (prediction DataFrame and labels Series, each with its index) and the
    field rows and groups never changes the base rates;
(b) permuting the columns of a multiclass field DataFrame never changes the base rates;
(c) random bad inputs always raise ValueError/TypeError whose message names the argument.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import puinfer as pu
from puinfer.simulate.urc import simulate_urc

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
pytestmark = pytest.mark.filterwarnings("ignore::puinfer.exceptions.PuinferWarning")

CLASSES = ["cat", "dog", "eel"]


def _quiet(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return f()


def _data(seed: int, k: int, groups: int):
    lab_rates = 0.5 if k == 2 else [1 / k] * k
    field = ([0.3, 0.6][:groups] if k == 2 else [[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]][:groups])
    if groups == 1:
        field = field[0]
    sizes = 150 if groups == 1 else [80] * groups
    return simulate_urc(n_lab=90, n_field=sizes, lab_base_rates=lab_rates,
                        field_base_rate=field, separation=2.0,
                        rng=np.random.default_rng(seed))


def _frames(s, k):
    """Lab and field data as pandas objects with a non-trivial index."""
    names = ["neg", "pos"] if k == 2 else CLASSES
    lab_idx = pd.Index(np.arange(len(s.lab_y)) * 7 + 3, name="item")
    if k == 2:
        lab = pd.DataFrame({"neg": 1 - s.lab_pred, "pos": s.lab_pred}, index=lab_idx)
        field = pd.Series(s.field_pred, name="p")
    else:
        lab = pd.DataFrame(s.lab_pred, columns=names, index=lab_idx)
        field = pd.DataFrame(s.field_pred, columns=names)
    labels = pd.Series(np.array(names)[s.lab_y], index=lab_idx)
    field.index = pd.Index([f"f{i}" for i in range(len(field))])
    groups = None if s.field_group is None else \
        pd.Series(np.array(["north", "south"])[s.field_group], index=field.index)
    return lab, labels, field, groups


@SETTINGS
@given(seed=st.integers(0, 2 ** 31), k=st.sampled_from([2, 3]), n_groups=st.sampled_from([1, 2]),
       perm_seed=st.integers(0, 2 ** 31), likelihood=st.sampled_from(["joint", "fixed"]))
def test_shuffled_rows_never_change_base_rates(seed, k, n_groups, perm_seed, likelihood):
    s = _data(seed, k, n_groups)
    lab, labels, field, groups = _frames(s, k)
    ref = _quiet(lambda: pu.URC(lab, labels).fit(field, groups=groups, likelihood=likelihood))
    rng = np.random.default_rng(perm_seed)
    # every argument shuffled on its own: only the index ties the rows together
    lab2 = lab.iloc[rng.permutation(len(lab))]
    labels2 = labels.iloc[rng.permutation(len(labels))]
    field2 = field.iloc[rng.permutation(len(field))]
    groups2 = None if groups is None else groups.iloc[rng.permutation(len(groups))]
    res = _quiet(lambda: pu.URC(lab2, labels2).fit(field2, groups=groups2,
                                                   likelihood=likelihood))
    assert res.base_rates.index.equals(ref.base_rates.index)
    assert list(res.base_rates.columns) == list(ref.base_rates.columns)
    assert_allclose(res.base_rates.to_numpy(), ref.base_rates.to_numpy(), rtol=0, atol=1e-12)
    # recalibrated predictions follow their rows and carry the caller's index
    out = res.recalibrate(field2, groups=groups2)
    assert out.index.equals(field2.index)
    assert_allclose(np.asarray(out.loc[field.index]),
                    np.asarray(ref.recalibrate(field, groups=groups)), rtol=0, atol=1e-12)


@SETTINGS
@given(seed=st.integers(0, 2 ** 31), order=st.permutations(CLASSES),
       lab_order=st.permutations(CLASSES))
def test_permuted_columns_never_change_base_rates(seed, order, lab_order):
    s = _data(seed, 3, 1)
    lab, labels, field, _ = _frames(s, 3)
    lab = lab[list(lab_order)]  # the lab DataFrame's column order defines the class order
    ref = _quiet(lambda: pu.URC(lab, labels).fit(field[list(lab_order)]))
    res = _quiet(lambda: pu.URC(lab, labels).fit(field[list(order)]))
    assert list(res.base_rates.columns) == list(lab_order)
    assert_allclose(res.base_rates.to_numpy(), ref.base_rates.to_numpy(), rtol=0, atol=1e-12)
    rec = res.recalibrate(field[list(order)])
    assert list(rec.columns) == list(order)
    assert_allclose(rec[list(lab_order)].to_numpy(),
                    ref.recalibrate(field[list(lab_order)]).to_numpy(), rtol=0, atol=1e-12)


# ---- (c) bad inputs --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted():
    s = _data(11, 2, 2)
    assert len(s.lab_y) == N_LAB
    m = _quiet(lambda: pu.URC(s.lab_pred, s.lab_y))
    s3 = _data(12, 3, 1)
    lab3, labels3, field3, _ = _frames(s3, 3)
    m3 = _quiet(lambda: pu.URC(lab3, labels3))
    return {"s": s, "m": m, "r": _quiet(lambda: m.fit(s.field_pred, groups=s.field_group)),
            "m3": m3, "field3": field3, "r3": _quiet(lambda: m3.fit(field3))}


not_prob = st.one_of(st.floats(1.0001, 1e6), st.floats(-1e6, -1e-4),
                     st.just(np.nan), st.just(np.inf), st.just(-np.inf))
junk = st.one_of(st.text(min_size=1, max_size=3), st.just(None), st.just(object()))


def _with_bad(base, bad, pos):
    out = np.array(base, dtype=object if not isinstance(bad, float) else float)
    out[pos % len(out)] = bad
    return out


N_LAB = 90  # lab size of the fitted fixture


def _bad_n_bins():
    return st.one_of(st.integers(-5, 1), st.floats(1.1, 3.9).filter(lambda x: x != int(x)),
                     st.just(np.nan), st.text(max_size=2), st.integers(N_LAB + 1, 10 ** 12))


# argument kind -> strategy of the bad value
BAD = {
    "lab_pred": st.one_of(not_prob, junk),
    "lab_labels": st.one_of(st.just(np.nan), st.integers(2, 9), st.floats(0.01, 0.99),
                            st.text(min_size=1, max_size=2)),
    "lab_labels_len": st.integers(1, 5),
    "lab_index": st.integers(1, 50),
    "n_bins": _bad_n_bins(),
    "missing": st.one_of(st.text(max_size=5).filter(lambda t: t not in ("raise", "drop")),
                         st.none(), st.integers()),
    "field_pred": st.one_of(not_prob, junk),
    "field_len": st.integers(1, 5),
    "groups_index": st.integers(1, 50),
    "groups_missing": st.just(None),
    "likelihood": st.one_of(st.text(max_size=6).filter(
        lambda t: t not in ("joint", "fixed", "paper")), st.integers(), st.none()),
    "prior_strength": st.one_of(st.floats(max_value=-1e-9), st.just(np.nan), st.just(np.inf),
                                st.text(min_size=1, max_size=3)),
    "value": st.one_of(not_prob, st.text(min_size=1, max_size=2),
                       st.lists(st.floats(0, 1), min_size=3, max_size=4),
                       st.lists(st.floats(0, 0.45), min_size=2, max_size=2)),
    "value_multi": st.one_of(st.lists(st.floats(0, 1), min_size=1, max_size=2),
                             st.lists(st.floats(0.0, 0.3), min_size=3, max_size=3),
                             st.lists(st.floats(0.5, 1.0), min_size=3, max_size=3)),
    "old_prior": st.one_of(st.floats(1.0, 1e3), st.floats(-1e3, 0.0), st.just(np.nan),
                           st.lists(st.floats(0, 0.45), min_size=2, max_size=2),
                           st.text(min_size=1, max_size=2)),
    "old_prior_multi": st.one_of(st.lists(st.floats(0.01, 0.3), min_size=3, max_size=3),
                                 st.lists(st.floats(0.01, 1), min_size=2, max_size=2),
                                 st.just([0.0, 0.5, 0.5])),
    "pred": st.one_of(not_prob, junk),
    "pred_columns": st.tuples(st.sampled_from(CLASSES),
                              st.text(min_size=1, max_size=4).filter(lambda t: t not in CLASSES)),
    "field_columns": st.tuples(st.sampled_from(CLASSES),
                               st.text(min_size=1, max_size=4).filter(
                                   lambda t: t not in CLASSES)),
    "recal_groups": st.one_of(st.integers(5, 9), st.text(min_size=1, max_size=2), st.none()),
}


def _call(kind, bad, pos, f):
    """(argument name, call) for one bad argument, the others valid."""
    s, m, r, m3, r3, field3 = f["s"], f["m"], f["r"], f["m3"], f["r3"], f["field3"]
    n, N = len(s.lab_y), len(s.field_pred)
    calls = {
        "lab_pred": ("lab_pred", lambda: pu.URC(_with_bad(s.lab_pred, bad, pos), s.lab_y)),
        "lab_labels": ("lab_labels", lambda: pu.URC(s.lab_pred, _with_bad(s.lab_y, bad, pos))),
        "lab_labels_len": ("lab_labels", lambda: pu.URC(s.lab_pred, s.lab_y[:-bad])),
        "lab_index": ("lab_labels", lambda: pu.URC(
            pd.Series(s.lab_pred), pd.Series(s.lab_y, index=np.arange(n) + bad))),
        "n_bins": ("n_bins", lambda: pu.URC(s.lab_pred, s.lab_y, n_bins=bad)),
        "missing": ("missing", lambda: pu.URC(s.lab_pred, s.lab_y, missing=bad)),
        "field_pred": ("field_pred", lambda: m.fit(_with_bad(s.field_pred, bad, pos))),
        "field_len": ("groups", lambda: m.fit(s.field_pred, groups=s.field_group[:-bad])),
        "groups_index": ("groups", lambda: m.fit(
            pd.Series(s.field_pred), groups=pd.Series(s.field_group, index=np.arange(N) + bad))),
        "groups_missing": ("groups", lambda: m.fit(
            s.field_pred, groups=_with_bad(s.field_group, bad, pos))),
        "likelihood": ("likelihood", lambda: m.fit(s.field_pred, likelihood=bad)),
        "prior_strength": ("prior_strength", lambda: m.fit(s.field_pred, prior_strength=bad)),
        "value": ("value", lambda: r.test_no_shift(bad)),
        "value_multi": ("value", lambda: r3.test_no_shift(bad)),
        "old_prior": ("old_prior", lambda: r.recalibrate(s.field_pred, groups=s.field_group,
                                                         old_prior=bad)),
        "old_prior_multi": ("old_prior", lambda: r3.recalibrate(field3, old_prior=bad)),
        "pred": ("pred", lambda: r.recalibrate(_with_bad(s.field_pred, bad, pos),
                                               groups=s.field_group)),
        "pred_columns": ("pred", lambda: r3.recalibrate(field3.rename(columns=dict([bad])))),
        "field_columns": ("field_pred", lambda: m3.fit(field3.rename(columns=dict([bad])))),
        "recal_groups": ("groups", lambda: r.recalibrate(
            s.field_pred, groups=_with_bad(s.field_group, bad, pos))),
    }
    return calls[kind]


@st.composite
def bad_call(draw):
    kind = draw(st.sampled_from(sorted(BAD)))
    return kind, draw(BAD[kind]), draw(st.integers(0, 10 ** 6))


@settings(SETTINGS, max_examples=200)
@given(case=bad_call())
def test_bad_input_is_refused_naming_the_argument(fitted, case):
    event(case[0])
    name, f = _call(*case, fitted)
    with pytest.raises((ValueError, TypeError)) as info:
        _quiet(f)
    assert name in str(info.value), (name, str(info.value))
