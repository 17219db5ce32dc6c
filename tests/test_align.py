"""The alignment rule (puinfer._align): pandas inputs matched on their index, never by position."""

import numpy as np
import pandas as pd
import pytest

from puinfer._align import align_rows, drop_missing


def test_series_are_matched_on_their_index():
    a = pd.Series([1.0, 2.0, 3.0], index=[10, 20, 30])
    b = pd.Series([30.0, 10.0, 20.0], index=[30, 10, 20])  # same labels, shuffled
    out, idx = align_rows({"a": a, "b": b})
    assert list(idx) == [10, 20, 30]
    assert out["b"].tolist() == [10.0, 20.0, 30.0]
    assert b.tolist() == [30.0, 10.0, 20.0]  # input untouched


def test_arrays_follow_the_reference_order_by_position():
    a = pd.Series([1.0, 2.0], index=["x", "y"])
    out, idx = align_rows({"arr": np.array([5.0, 6.0]), "a": a})
    assert list(idx) == ["x", "y"] and out["arr"].tolist() == [5.0, 6.0]
    with pytest.raises(ValueError, match="arr has 3 rows but a has 2"):
        align_rows({"a": a, "arr": [1, 2, 3]})


def test_refused_when_labels_differ_or_repeat():
    a = pd.Series([1.0, 2.0], index=[0, 1])
    with pytest.raises(ValueError, match="b and a have different index labels"):
        align_rows({"a": a, "b": pd.Series([1.0, 2.0], index=[1, 2])})
    with pytest.raises(ValueError, match="duplicate"):
        align_rows({"a": pd.Series([1.0, 2.0], index=[0, 0]), "b": a})
    with pytest.raises(ValueError, match="b and a"):
        align_rows({"a": a, "b": pd.Series([1.0, 2.0, 3.0], index=[0, 1, 2])})


def test_duplicate_labels_in_the_same_order_match_row_for_row():
    # session 67's audit: two columns of one frame after pd.concat (repeated labels) were
    # refused although nothing needs matching; the same labels in the same order match
    idx = pd.Index([0, 1, 0, 1])
    a, b = pd.Series([1.0, 2.0, 3.0, 4.0], index=idx), pd.Series(list("pqrs"), index=idx)
    out, ref = align_rows({"a": a, "b": b, "arr": np.arange(4)})
    assert ref.equals(idx) and out["b"].tolist() == list("pqrs")
    out, ref = align_rows({"a": a})
    assert ref.equals(idx) and out["a"] is a
    # in another order they cannot be matched
    with pytest.raises(ValueError, match=r"a: duplicate index labels \(e.g. \[0, 1\]\); b "
                       "cannot be matched to it"):
        align_rows({"a": a, "b": b.iloc[[1, 0, 3, 2]]})


def test_no_pandas_means_positions():
    out, idx = align_rows({"a": [1, 2], "b": np.zeros(2), "c": None})
    assert idx is None and out["c"] is None
    with pytest.raises(ValueError, match="b has 3 rows but a has 2"):
        align_rows({"a": [1, 2], "b": np.zeros(3)})


def test_drop_missing():
    a = pd.Series([1.0, np.nan, 3.0], index=[5, 6, 7])
    b = pd.DataFrame({"u": [1.0, 2.0, None], "v": ["p", "q", "r"]}, index=[5, 6, 7])
    out, idx, n = drop_missing({"a": a, "b": b}, a.index, "drop")
    assert n == 2 and list(idx) == [5] and out["b"]["v"].tolist() == ["p"]
    same, idx2, n0 = drop_missing({"a": a}, a.index, "raise")
    assert n0 == 0 and same["a"] is a and idx2 is a.index
    with pytest.raises(ValueError, match="missing must be"):
        drop_missing({"a": a}, None, "omit")


def test_a_single_value_is_named():
    with pytest.raises(ValueError, match="b: a single value"):
        align_rows({"a": [1.0, 2.0], "b": 3.0})


def test_a_default_index_next_to_another_is_refused():
    """Session 82: pandas' default index 0..n-1 (``pd.Series(array)``, ``reset_index``, a
    scikit-learn step with ``set_output(transform="pandas")``) only numbers the rows. Next to
    a shuffled frame's column, whose index is a permutation of the same labels, matching on
    the index paired rows that are not the same (it was done silently), and matching by
    position would be as wrong where the labels mean rows. Neither is guessed: refused, naming
    both arguments and how to say which is meant."""
    rng = np.random.default_rng(0)
    perm = rng.permutation(6)
    shuffled = pd.Series(np.arange(6.0) * 10, index=perm)  # a shuffled frame's column
    plain = pd.Series(np.arange(6.0))                       # pd.Series(array)
    with pytest.raises(ValueError, match=r"score has the default index 0..n-1 .* and label "
                                         r"another index.*score.to_numpy\(\) or "
                                         r"label.to_numpy\(\)"):
        align_rows({"label": shuffled, "score": plain})
    with pytest.raises(ValueError, match="label has the default index"):
        align_rows({"label": plain, "score": shuffled})
    # as arrays they are taken by position; two default indexes, or two others, as before
    out, idx = align_rows({"label": shuffled, "score": plain.to_numpy()})
    assert idx.equals(shuffled.index) and np.array_equal(out["score"], np.arange(6.0))
    out, _ = align_rows({"a": plain, "b": pd.Series(np.ones(6))})
    assert out["b"].index.equals(plain.index)
    other = shuffled.set_axis(perm + 100)
    out, _ = align_rows({"a": other, "b": other.iloc[::-1]})
    assert np.array_equal(out["b"].to_numpy(), other.to_numpy())
