"""URC inputs (issue 13): rows aligned on the pandas index, prediction columns matched to the
classes by name, validation naming the URC argument, missing="raise"|"drop", tiny samples
against a direct optimisation of the same likelihood, and edge inputs without RuntimeWarning."""

import pickle
import re
import signal
import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import optimize, special, stats

import puinfer as pu
from puinfer.exceptions import BoundaryWarning, EmptyBinWarning, IllConditionedWarning
from puinfer.simulate.urc import simulate_urc

QUIET = pytest.mark.filterwarnings("ignore::puinfer.exceptions.PuinferWarning")


def _quiet(f, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyBinWarning)
        warnings.simplefilter("ignore", IllConditionedWarning)
        warnings.simplefilter("ignore", BoundaryWarning)
        return f(*a, **kw)


@pytest.fixture(scope="module")
def binary():
    return simulate_urc(n_lab=300, n_field=3000, lab_base_rates=0.5, field_base_rate=0.31,
                        separation=2.0, rng=np.random.default_rng(1))


@pytest.fixture(scope="module")
def grouped():
    return simulate_urc(n_lab=300, n_field=[1000, 1000], lab_base_rates=0.5,
                        field_base_rate=[0.1, 0.6], separation=2.0,
                        rng=np.random.default_rng(2))


@pytest.fixture(scope="module")
def multi():
    return simulate_urc(n_lab=600, n_field=3000, lab_base_rates=[1 / 3] * 3,
                        field_base_rate=[0.6, 0.3, 0.1], separation=2.0,
                        rng=np.random.default_rng(3))


CLASSES = ["cat", "dog", "eel"]


@pytest.fixture(scope="module")
def named(multi):
    lab = pd.DataFrame(multi.lab_pred, columns=CLASSES)
    labels = pd.Series(np.array(CLASSES)[multi.lab_y])
    field = pd.DataFrame(multi.field_pred, columns=CLASSES)
    model = _quiet(pu.URC, lab, labels)
    return model, field, _quiet(model.fit, field)


# ---- 1. rows matched on the index -----------------------------------------------------------
def test_lab_labels_matched_on_index(binary):
    idx = pd.Index(np.arange(300) + 1000)
    pred, y = pd.Series(binary.lab_pred, index=idx), pd.Series(binary.lab_y, index=idx)
    perm = np.random.default_rng(0).permutation(300)
    ref = pu.URC(binary.lab_pred, binary.lab_y).fit(binary.field_pred)
    assert ref.base_rate.iloc[0] == pytest.approx(0.31, abs=0.05)
    for lab_pred, lab_y in [(pred, y.iloc[perm]), (pred.iloc[perm], y),
                            (pd.DataFrame({"neg": 1 - pred, "pos": pred}).iloc[perm],
                             y.map({0: "neg", 1: "pos"}))]:
        res = pu.URC(lab_pred, lab_y).fit(binary.field_pred)
        assert_allclose(res.base_rate.to_numpy(), ref.base_rate.to_numpy(), rtol=0, atol=1e-12)
        assert_allclose(res.model.lab_counts.to_numpy(), ref.model.lab_counts.to_numpy())


def test_lab_index_mismatch_refused(binary):
    pred = pd.Series(binary.lab_pred)
    y = pd.Series(binary.lab_y, index=np.arange(300) + 1)
    with pytest.raises(ValueError, match="lab_pred has the default index 0..n-1 .* and lab_labels another"):
        pu.URC(pred, y)
    with pytest.raises(ValueError, match="lab_pred: duplicate index labels"):
        pu.URC(pd.Series(binary.lab_pred, index=[0] * 300), y)
    # an array is matched by position and must have the length
    with pytest.raises(ValueError, match="lab_labels has 299 rows but lab_pred has 300"):
        pu.URC(pred, binary.lab_y[:299])


def test_repeated_labels_of_one_frame(grouped):
    # session 67's audit: predictions and groups from one frame built by pd.concat (its
    # labels repeated) were refused; in the same order they match row for row
    n = len(grouped.field_pred)
    idx = pd.Index(np.arange(n) % 7)
    field = pd.DataFrame({"pred": grouped.field_pred, "box": grouped.field_group}, index=idx)
    m = pu.URC(grouped.lab_pred, grouped.lab_y)
    ref = _quiet(m.fit, grouped.field_pred, groups=grouped.field_group)
    res = _quiet(m.fit, field["pred"], groups=field["box"])
    assert_allclose(res.base_rates.to_numpy(), ref.base_rates.to_numpy(), rtol=0, atol=0)
    out = res.recalibrate(field["pred"], groups=field["box"])
    assert out.index.equals(idx)
    assert_allclose(out.to_numpy(), ref.recalibrate(grouped.field_pred,
                                                    groups=grouped.field_group), rtol=0, atol=0)
    with pytest.raises(ValueError, match="field_pred: duplicate index labels"):
        m.fit(field["pred"], groups=field["box"].iloc[::-1])


def test_groups_with_fewer_rows_than_cells_are_named(grouped):
    # session 67's audit: a one-row group was fitted silently (interval [0, 0.99])
    m = pu.URC(grouped.lab_pred, grouped.lab_y)
    g = np.r_[grouped.field_group[:-1], 7]
    with pytest.warns(EmptyBinWarning, match=r"groups: 1 group\(s\) have fewer field rows "
                      r"than the partition has cells \(4\) \(7: 1\)"):
        res = m.fit(grouped.field_pred, groups=g)
    assert any("fewer field rows" in msg for _, msg in res.warnings)
    with pytest.warns(EmptyBinWarning, match="field_pred: the field sample has fewer"):
        m.fit(grouped.field_pred[:3])
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyBinWarning)
        m.fit(grouped.field_pred, groups=grouped.field_group)


def test_groups_that_print_alike_refused(grouped):
    # session 67's audit: groups 1 and "1" were fitted as two groups both shown as "1"
    m = pu.URC(grouped.lab_pred, grouped.lab_y)
    g = np.full(grouped.field_group.size, "1", dtype=object)
    g[grouped.field_group == 0] = 1
    with pytest.raises(ValueError, match="groups: labels of different types print alike"):
        m.fit(grouped.field_pred, groups=g)


def test_groups_matched_on_index(grouped):
    m = pu.URC(grouped.lab_pred, grouped.lab_y)
    idx = pd.Index(np.arange(2000) + 5000)
    fp = pd.Series(grouped.field_pred, index=idx)
    g = pd.Series(np.where(grouped.field_group == 0, "north", "south"), index=idx)
    perm = np.random.default_rng(1).permutation(2000)
    ref = m.fit(grouped.field_pred, groups=g.to_numpy())
    assert_allclose(ref.base_rate.to_numpy(), [0.1, 0.6], atol=0.06)
    for field, groups in [(fp, g.iloc[perm]), (fp.iloc[perm], g), (grouped.field_pred, g)]:
        res = m.fit(field, groups=groups)
        assert_allclose(res.base_rate.to_numpy(), ref.base_rate.to_numpy(), rtol=0, atol=1e-12)
        assert res.groups.tolist() == ["north", "south"]
    with pytest.raises(ValueError, match="groups has the default index 0..n-1"):
        m.fit(fp, groups=g.reset_index(drop=True))


def test_group_labels_of_an_array_are_those_of_a_series(grouped):
    """An integer or string array of group labels gives the groups (labels and dtype) and fit
    of the same labels as a Series (before, the array was converted to objects: an
    object-dtype group index, and 0.6 s more for 1e7 labels); a list of mixed labels keeps
    each label as it is (numpy would make them all strings)."""
    m = pu.URC(grouped.lab_pred, grouped.lab_y)
    codes = np.asarray(grouped.field_group)
    for labels in (codes.astype(np.int64) + 7, np.where(codes == 0, "north", "south")):
        res = m.fit(grouped.field_pred, groups=labels)
        ref = m.fit(grouped.field_pred, groups=pd.Series(labels))
        assert res.groups.equals(ref.groups) and res.groups.dtype == ref.groups.dtype
        assert res.groups.dtype == (np.int64 if labels.dtype.kind == "i" else ref.groups.dtype)
        assert_allclose(res.base_rate.to_numpy(), ref.base_rate.to_numpy(), rtol=0, atol=0)
    mixed = [1 if c == 0 else "b" for c in codes]
    res = m.fit(grouped.field_pred, groups=mixed)
    assert sorted(map(repr, res.groups)) == ["'b'", "1"]
    # the labels the fit was given find their groups again in recalibrate (bytes failed
    # there: a fixed-width S array kept as such cannot be looked up in a pandas index)
    for labels in (codes.astype(np.int64) + 7, np.where(codes == 0, "north", "south"),
                   np.where(codes == 0, b"north", b"south"), np.asarray(mixed, dtype=object)):
        res = m.fit(grouped.field_pred, groups=labels)
        out = res.recalibrate(grouped.field_pred, groups=labels)
        ref = res.recalibrate(grouped.field_pred, groups=pd.Series(list(labels)))
        assert_allclose(np.asarray(out), np.asarray(ref), rtol=0, atol=0)


def test_unused_categories_of_groups_are_said_not_dropped_silently(grouped):
    # a categorical groups column with categories that have no field rows: those groups are
    # not fitted (nothing to estimate), with a recorded EmptyBinWarning naming them (they
    # used to vanish without a word)
    m = pu.URC(grouped.lab_pred, grouped.lab_y)
    names = np.where(grouped.field_group == 0, "north", "south")
    g = pd.Series(pd.Categorical(names, categories=["east", "north", "south", "west"]))
    with pytest.warns(EmptyBinWarning, match=r"2 categories .* no field rows .* \(east, west\)"):
        res = m.fit(grouped.field_pred, groups=g)
    assert res.groups.tolist() == ["north", "south"]
    assert any(c == "EmptyBinWarning" and "east, west" in msg for c, msg in res.warnings)
    ref = m.fit(grouped.field_pred, groups=names)
    assert_allclose(res.base_rate.to_numpy(), ref.base_rate.to_numpy(), rtol=0, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyBinWarning)
        m.fit(grouped.field_pred, groups=g.cat.remove_unused_categories())


def test_recalibrate_groups_matched_on_index(grouped):
    m = pu.URC(grouped.lab_pred, grouped.lab_y)
    idx = pd.Index(np.arange(2000) + 5000)
    fp = pd.Series(grouped.field_pred, index=idx, name="p")
    g = pd.Series(grouped.field_group, index=idx)
    r = m.fit(fp, groups=g)
    ref = r.recalibrate(grouped.field_pred, groups=grouped.field_group)  # arrays: by position
    perm = np.random.default_rng(2).permutation(2000)
    out = r.recalibrate(fp, groups=g.iloc[perm])
    assert isinstance(out, pd.Series) and out.index.equals(idx) and out.name == "p"
    assert_allclose(out.to_numpy(), ref, rtol=0, atol=1e-15)
    # the array's rows are taken in the order of the groups Series, whose index the output has
    out2 = r.recalibrate(grouped.field_pred[perm], groups=g.iloc[perm])
    assert out2.index.equals(idx[perm])
    assert_allclose(out2.to_numpy(), ref[perm], rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="groups has the default index 0..n-1"):
        r.recalibrate(fp, groups=g.reset_index(drop=True))


# ---- 2. columns matched to the classes by name ----------------------------------------------
def test_field_columns_matched_by_name(named):
    model, field, ref = named
    # the cells are labelled by the classes' names (session 67's audit: "argmax=0")
    assert model.partition.labels[0].startswith("argmax=cat, [")
    assert {lab.split(",")[0] for lab in model.partition.labels} == {
        f"argmax={c}" for c in CLASSES}
    assert_allclose(ref.base_rates.to_numpy()[0], [0.6, 0.3, 0.1], atol=0.04)
    res = _quiet(model.fit, field[["eel", "cat", "dog"]])
    assert list(res.base_rates.columns) == CLASSES
    assert_allclose(res.base_rates.to_numpy(), ref.base_rates.to_numpy(), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"field_pred: the columns must be the classes .*"
                       r"missing: \['eel'\], extra: \['fish'\]"):
        model.fit(field.rename(columns={"eel": "fish"}))
    with pytest.raises(ValueError, match=r"missing: \[\], extra: \['x'\]"):
        model.fit(field.assign(x=0.0))


def test_binary_one_column_matched_by_name(binary):
    # session 67's audit: with named binary classes a one-column frame was taken as P(second
    # class) whatever its name: a "ham" column flipped the base rates and recalibrate()
    # returned P(spam) under the name "ham"
    lab = pd.DataFrame({"ham": 1 - binary.lab_pred, "spam": binary.lab_pred})
    model = pu.URC(lab, np.where(binary.lab_y == 1, "spam", "ham"))
    both = pd.DataFrame({"ham": 1 - binary.field_pred, "spam": binary.field_pred})
    ref = _quiet(model.fit, both)
    for col in ("spam", "ham"):
        res = _quiet(model.fit, both[[col]])
        assert_allclose(res.base_rates.to_numpy(), ref.base_rates.to_numpy(), rtol=0,
                        atol=1e-9)
        out = res.recalibrate(both[[col]].iloc[:20])
        assert list(out.columns) == [col]
        assert_allclose(out[col], ref.recalibrate(both.iloc[:20])[col], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(model.assign(both[[col]]), model.assign(both))
        # a Series named as a class too (review: "ham" was read as P(spam))
        res = _quiet(model.fit, both[col])
        assert_allclose(res.base_rates.to_numpy(), ref.base_rates.to_numpy(), rtol=0,
                        atol=1e-9)
        out = res.recalibrate(both[col].iloc[:20])
        assert out.name == col
        assert_allclose(out, ref.recalibrate(both.iloc[:20])[col], rtol=0, atol=1e-12)
    # a Series of another name: P(second class), by the binary convention
    res = _quiet(model.fit, both["spam"].rename("pred"))
    assert_allclose(res.base_rates.to_numpy(), ref.base_rates.to_numpy(), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"field_pred: the column 'eggs' is not a class; .*"
                       r"\['ham', 'spam'\]"):
        model.fit(both[["spam"]].rename(columns={"spam": "eggs"}))


def test_recalibrate_columns_matched_by_name(named):
    model, field, res = named
    ref = res.recalibrate(field)
    perm = field[["eel", "cat", "dog"]]
    out = res.recalibrate(perm)
    assert list(out.columns) == ["eel", "cat", "dog"]  # the caller's order
    pd.testing.assert_frame_equal(out[CLASSES], ref, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match=r"pred: the columns must be the classes"):
        res.recalibrate(field.rename(columns={"cat": "kitten"}))


def test_class_vectors_as_series_matched_by_name(named):
    _, field, res = named
    old = pd.Series([0.2, 0.3, 0.5], index=["eel", "cat", "dog"])
    pd.testing.assert_frame_equal(res.recalibrate(field, old_prior=old),
                                  res.recalibrate(field, old_prior=[0.3, 0.5, 0.2]))
    val = pd.Series([0.1, 0.6, 0.3], index=["eel", "cat", "dog"])
    assert res.test_no_shift(val).statistic == pytest.approx(
        res.test_no_shift([0.6, 0.3, 0.1]).statistic, rel=1e-12)
    with pytest.raises(ValueError, match=r"value: a Series is matched to the classes .*"
                       r"missing: \['dog'\], extra: \[0\]"):
        res.test_no_shift(pd.Series([0.1, 0.6, 0.3], index=["eel", "cat", 0]))
    with pytest.raises(ValueError, match="old_prior: a Series is matched to the classes"):
        res.recalibrate(field, old_prior=pd.Series([0.2, 0.3, 0.5]))


@QUIET
def test_unnamed_lab_takes_dataframes_by_position(multi):
    res = pu.URC(multi.lab_pred, multi.lab_y).fit(pd.DataFrame(multi.field_pred,
                                                              columns=list("abc")))
    ref = pu.URC(multi.lab_pred, multi.lab_y).fit(multi.field_pred)
    assert_allclose(res.base_rates.to_numpy(), ref.base_rates.to_numpy(), rtol=0, atol=1e-12)


@QUIET
def test_unnamed_lab_refuses_columns_that_are_the_classes_in_another_order(multi):
    # (session 76's audit) the classes of an unnamed lab are 0..k-1; a frame whose columns
    # are those labels in another order was taken by position: fit() returned other base
    # rates under the same class labels, recalibrate() labelled one class's values by another
    u = pu.URC(multi.lab_pred, multi.lab_y)
    k = multi.field_pred.shape[1]
    F = pd.DataFrame(multi.field_pred)
    rev = list(range(k))[::-1]
    with pytest.raises(ValueError, match="in another order"):
        u.fit(F[rev])
    res = u.fit(F)  # in the classes' order: accepted, as by position
    assert_allclose(res.base_rates.to_numpy(), u.fit(multi.field_pred).base_rates.to_numpy(),
                    rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="in another order"):
        res.recalibrate(F[rev])
    # the same labels as text (a frame read back from CSV or Parquet) or as floats
    for cols in ([str(c) for c in rev], [float(c) for c in rev]):
        with pytest.raises(ValueError, match="in another order"):
            u.fit(F[rev].set_axis(cols, axis=1))
    assert_allclose(u.fit(F.rename(columns=str)).base_rates.to_numpy(),
                    res.base_rates.to_numpy(), rtol=0, atol=1e-12)


# ---- 3. validation naming the URC argument --------------------------------------------------
@pytest.mark.parametrize("value,match", [
    (np.nan, "value must be finite"),
    (1.5, r"value must be a base rate P\(Y = 1\) in \[0, 1\]; got 1.5"),
    (-0.1, "value must be a base rate"),
    ([0.2, 0.3], "value must be .* sum to 0.5"),
    ([0.5, 0.5, 0.0], "value must be .* got 3 values"),
    ("a", "value holds text, not numbers"),  # (session 69: text refused first)
    ([[0.5, 0.5]], "value must be a number or a vector"),
    # True was the base rate 1 (False 0): a test of P(Y = 1) = 1, p = 8e-76
    (True, "value must be numeric base rates, not True/False"),
    (np.False_, "value must be numeric base rates, not True/False"),
    ([False, True], "value must be numeric base rates, not True/False"),
])
def test_no_shift_value_validated(binary, value, match):
    res = pu.URC(binary.lab_pred, binary.lab_y).fit(binary.field_pred)
    with pytest.raises(ValueError, match=match):
        res.test_no_shift(value)
    with pytest.raises(ValueError, match=match):
        res.fit_no_shift(value)


def test_no_shift_multiclass_value_validated(named):
    res = named[2]
    with pytest.raises(ValueError, match=r"value must be 3 class shares .* sum to 0.9"):
        res.test_no_shift([0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match="value must be 3 class shares .* got 2 values"):
        res.test_no_shift([0.5, 0.5])


@pytest.mark.parametrize("old,match", [
    ([0.2, 0.3], r"old_prior must be .* sum to 0.5"),
    (1.5, r"old_prior must be a base rate P\(Y = 1\) in \(0, 1\); got 1.5"),
    (0.0, r"old_prior must be .* in \(0, 1\)"),
    (np.nan, "old_prior must be finite"),
    ("x", "old_prior holds text, not numbers"),
    (True, "old_prior must be numeric base rates, not True/False"),  # (said 'got 1.0')
])
def test_recalibrate_old_prior_validated(binary, old, match):
    res = pu.URC(binary.lab_pred, binary.lab_y).fit(binary.field_pred)
    with pytest.raises(ValueError, match=match):
        res.recalibrate(binary.field_pred[:3], old_prior=old)


def test_recalibrate_errors_name_its_arguments(grouped, named):
    r = pu.URC(grouped.lab_pred, grouped.lab_y).fit(grouped.field_pred,
                                                     groups=grouped.field_group)
    x = grouped.field_pred[:5]
    cases = [
        (lambda: r.recalibrate([0.2, 1.3], groups=[0, 1]), "pred must be probabilities"),
        (lambda: r.recalibrate([0.2, np.nan], groups=[0, 1]), "pred: 1 missing"),
        (lambda: r.recalibrate(x, groups=[0, 1, 0]), "groups has 3 rows but pred has 5"),
        (lambda: r.recalibrate(x, groups=[0, 1, 0, None, 1]), "groups has 1 missing"),
        (lambda: r.recalibrate(x, groups=[0, 1, 0, 5, 1]), r"groups: \[5\] were not among"),
        (lambda: r.recalibrate(np.full((5, 3), 1 / 3), groups=[0] * 5),
         "pred must be a vector of binary probabilities"),
        (lambda: r.recalibrate(0.3, groups=[0]), "pred must have one entry per row"),
        (lambda: named[2].recalibrate(np.full((4, 2), 0.5)), "pred has 2 columns"),
        (lambda: named[2].recalibrate(named[1], old_prior=[0.5, 0.5]),
         "old_prior must be 3 class shares"),
    ]
    for f, match in cases:
        with pytest.raises(ValueError, match=match) as info:
            f()
        # never an internal argument of adjust_prior
        msg = str(info.value)
        assert not msg.startswith("prob") and "new_prior" not in msg


@pytest.mark.parametrize("kwargs,match", [
    ({"n_bins": "a"}, "n_bins must be an integer"),
    ({"n_bins": np.nan}, "n_bins must be an integer"),
    ({"n_bins": 2.5}, "n_bins must be an integer"),
    ({"n_bins": 10 ** 9}, "n_bins = 1000000000 exceeds the number of lab predictions"),
    ({"missing": "omit"}, "missing must be 'raise' or 'drop'"),
])
def test_constructor_options_validated(binary, kwargs, match):
    with pytest.raises(ValueError, match=match):
        pu.URC(binary.lab_pred, binary.lab_y, **kwargs)


@pytest.mark.parametrize("kwargs,match", [
    ({"maxiter": 0}, "maxiter must be a positive integer"),
    ({"tol": np.nan}, "tol must be a positive number"),
    # numbers written as text and bools were taken as numbers (also by RegressionURC.fit)
    ({"tol": "1e-6"}, "tol must be a positive number"),
    ({"tol": True}, "tol must be a positive number"),
    ({"tol": np.array("1e-6")}, "tol must be a positive number"),
    ({"prior_strength": "x"}, "prior_strength must be a non-negative number"),
    ({"missing": "None"}, "missing must be 'raise' or 'drop'"),  # (None: the model's)
    ({"likelihood": 3}, "likelihood must be"),
])
def test_fit_options_validated(binary, kwargs, match):
    m = pu.URC(binary.lab_pred, binary.lab_y)
    with pytest.raises(ValueError, match=match):
        m.fit(binary.field_pred, **kwargs)


def test_scalars_refused_naming_the_argument(binary):
    with pytest.raises(ValueError, match="lab_labels must have one entry per row"):
        pu.URC(binary.lab_pred, 1)
    m = pu.URC(binary.lab_pred, binary.lab_y)
    with pytest.raises(ValueError, match="field_pred must have one entry per row"):
        m.fit(0.3)
    with pytest.raises(ValueError, match="groups must have one entry per row"):
        m.fit(binary.field_pred, groups="a")


def test_boolean_predictions_refused(binary):
    # session 67's audit: hard decisions (clf.predict) as an array or Series were taken as
    # probabilities 0 and 1: a field base rate of 9e-13 where it was 0.3
    hard = binary.field_pred > 0.5
    m = pu.URC(binary.lab_pred, binary.lab_y)
    res = _quiet(m.fit, binary.field_pred)
    msg = "holds booleans (hard class decisions"
    for call, name in ((lambda: m.fit(hard), "field_pred"),
                       (lambda: m.fit(pd.Series(hard)), "field_pred"),
                       (lambda: m.fit(list(hard)), "field_pred"),
                       (lambda: m.fit(pd.DataFrame({"p": hard})),
                        re.escape("field_pred: column(s) ['p']")),
                       (lambda: pu.URC(binary.lab_pred > 0.5, binary.lab_y), "lab_pred"),
                       (lambda: res.recalibrate(hard[:5]), "pred"),
                       (lambda: m.assign(hard[:5]), "pred")):
        with pytest.raises(ValueError, match=rf"^{name} {re.escape(msg)}"):
            call()


def test_simulate_urc_validates():
    with pytest.raises(ValueError, match="field_base_rate must be a base rate"):
        simulate_urc(field_base_rate=np.nan)
    with pytest.raises(ValueError, match="n_lab must be a positive integer"):
        simulate_urc(n_lab=-1)
    with pytest.raises(TypeError, match="rng must be an int seed"):
        simulate_urc(rng="1")


# ---- 5. missing="raise" | "drop" --------------------------------------------------------------
def test_missing_raise_and_drop(grouped):
    lp = grouped.lab_pred.copy()
    lp[:3] = np.nan
    ly = pd.Series(grouped.lab_y.astype(float))
    ly[5] = np.nan
    with pytest.raises(ValueError, match=r"lab_pred: 3 missing .*missing='drop'"):
        pu.URC(lp, ly)
    with pytest.raises(ValueError, match=r"lab_labels: 1 missing .*missing='drop'"):
        pu.URC(grouped.lab_pred, ly)
    m = pu.URC(lp, ly, missing="drop")
    keep = ~(np.isnan(lp) | ly.isna().to_numpy())
    ref_m = pu.URC(grouped.lab_pred[keep], grouped.lab_y[keep])
    assert m.n_dropped == 4 and m.n_lab == 296
    assert_allclose(m.lab_counts.to_numpy(), ref_m.lab_counts.to_numpy())
    fp = grouped.field_pred.copy()
    fp[:7] = np.nan
    g = grouped.field_group.astype(object)
    g[10] = None
    with pytest.raises(ValueError, match="field_pred: 7 missing"):
        m.fit(fp, groups=g, missing="raise")
    with pytest.raises(ValueError, match="groups has 1 missing"):
        m.fit(grouped.field_pred, groups=g, missing="raise")
    with pytest.raises(ValueError, match="field_pred: 7 missing"):
        ref_m.fit(fp, groups=g)  # the model's default, "raise"
    r = m.fit(fp, groups=g, missing="drop")
    # fit's default is the model's option (session 87's API audit: it was "raise" whatever
    # the constructor was given, with a hint to pass missing='drop')
    pd.testing.assert_series_equal(m.fit(fp, groups=g).base_rate, r.base_rate)
    fkeep = ~np.isnan(fp)
    fkeep[10] = False
    ref = ref_m.fit(grouped.field_pred[fkeep], groups=grouped.field_group[fkeep])
    assert r.n_dropped == 8 and int(r.n_field.sum()) == 1992
    assert_allclose(r.base_rate.to_numpy(), ref.base_rate.to_numpy(), rtol=0, atol=1e-12)
    text = str(r.summary())
    assert "Lab rows dropped (missing):   4" in text
    assert "Field rows dropped (missing): 8" in text
    assert ref.n_dropped == 0 and "Field rows dropped (missing): 0" in str(ref.summary())


def test_missing_drop_keeps_alignment(binary):
    idx = pd.Index(np.arange(300) * 3)
    lp = pd.Series(binary.lab_pred, index=idx)
    ly = pd.Series(binary.lab_y.astype(float), index=idx)
    lp.iloc[[4, 9]] = np.nan
    perm = np.random.default_rng(3).permutation(300)
    a = pu.URC(lp, ly.iloc[perm], missing="drop")
    b = pu.URC(lp, ly, missing="drop")
    assert a.n_dropped == b.n_dropped == 2
    assert_allclose(a.lab_counts.to_numpy(), b.lab_counts.to_numpy())


# ---- 4. tiny samples: the fit is the maximum ----------------------------------------------------
def _loglik(P, M, L, F, joint):
    ll = sum(stats.multinomial.logpmf(F[g], F[g].sum(), P[g] @ M) for g in range(F.shape[0]))
    if joint:
        ll += sum(stats.multinomial.logpmf(L[i], L[i].sum(), M[i]) for i in range(L.shape[0]))
    return ll


def _lab_class_llf(L):
    """The lab class counts' multinomial at its maximum ``n_i / n``: part of ``llf`` under the
    default random lab design (the lab base rates separate from the rest)."""
    n = L.sum(1)
    return stats.multinomial.logpmf(n, n.sum(), n / n.sum())


def direct_fit(L, F, joint, starts=4):
    """The same log-likelihood maximised directly (softmax parameters, several random starts,
    BFGS and Nelder-Mead): an independent check that does not share URC's EM/Newton code."""
    k, A = L.shape
    G = F.shape[0]
    M_lab = L / L.sum(1, keepdims=True)
    nP = G * (k - 1)

    def unpack(x):
        P = special.softmax(np.column_stack([np.zeros(G), x[:nP].reshape(G, k - 1)]), axis=1)
        if not joint:
            return P, M_lab
        return P, special.softmax(np.column_stack([np.zeros(k), x[nP:].reshape(k, A - 1)]),
                                  axis=1)

    def negll(x):
        with np.errstate(all="ignore"):
            v = -_loglik(*unpack(x), L, F, joint)
        return v if np.isfinite(v) else 1e10

    rng = np.random.default_rng(0)
    lm = np.log(M_lab + 1e-3)
    lm = (lm[:, 1:] - lm[:, :1]).ravel()
    best = np.inf
    for s in range(starts):
        x = np.concatenate([rng.normal(0, 1.5 if s else 0, nP),
                            lm + rng.normal(0, 0.5 if s else 0, lm.size) if joint else []])
        for method in ("BFGS", "Nelder-Mead", "BFGS"):
            r = optimize.minimize(negll, x, method=method,
                                  options={"maxiter": 20000} if method != "BFGS" else {})
            x = r.x
            best = min(best, r.fun)
    return -best


def _tiny_cases():
    rng = np.random.default_rng(5)
    y5 = np.array([0, 1, 0, 1, 1])
    out = {
        # a lab set of 5 (two lab cells per class are empty)
        "lab of 5": (np.array([0.12, 0.55, 0.31, 0.71, 0.93]), y5, rng.uniform(size=30)),
        "lab of 5, field of 5": (np.array([0.12, 0.55, 0.31, 0.71, 0.93]), y5,
                                 np.array([0.05, 0.2, 0.25, 0.4, 0.6])),
        # the case where the first start ended in a lower local maximum (issue 13)
        "local maximum": (np.array([0.1, 0.2, 0.6, 0.8, 0.9]), np.array([0, 0, 1, 1, 1]),
                          np.r_[np.full(15, 0.05), np.full(3, 0.15), np.full(10, 0.7),
                                np.full(2, 0.95)]),
        "class with one item": (np.r_[np.linspace(0.05, 0.6, 19), 0.9],
                                np.r_[np.zeros(19, int), 1], rng.uniform(size=40)),
        "field of one": (np.r_[np.linspace(0.05, 0.5, 20), np.linspace(0.4, 0.95, 20)],
                         np.r_[np.zeros(20, int), np.ones(20, int)], np.array([0.97])),
        "predictions exactly 0/1": (np.r_[np.zeros(10), np.ones(10), rng.uniform(size=10)],
                                    np.r_[np.zeros(10, int), np.ones(10, int),
                                          rng.integers(0, 2, 10)],
                                    np.r_[np.zeros(12), np.ones(8)]),
    }
    return out


@QUIET
@pytest.mark.parametrize("lik", ["joint", "fixed"])
@pytest.mark.parametrize("case", list(_tiny_cases()))
def test_tiny_samples_reach_the_maximum(case, lik):
    lab_pred, lab_y, field = _tiny_cases()[case]

    def _hung(*_):
        raise TimeoutError(f"{case}: the fit did not return within 60 s")

    old = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(60)  # a field of one item used to make the fit loop forever
    try:
        res = pu.URC(lab_pred, lab_y).fit(field, likelihood=lik, lab_pseudocount=0)
        ci = res.conf_int()  # a profile above the maximum would raise ProfileError
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    L, F = res.model.lab_counts.to_numpy(), res.observed.to_numpy()
    best = direct_fit(L, F, lik == "joint") + _lab_class_llf(L)
    assert res.llf >= best - 1e-6
    assert res.llf == pytest.approx(_loglik(res.base_rates.to_numpy(), res.M.to_numpy(), L, F,
                                            lik == "joint") + _lab_class_llf(L), abs=1e-9)
    est = res.base_rate.iloc[0]
    assert ci["lower"].iloc[0] <= est <= ci["upper"].iloc[0]
    # the profile never rises above the fitted maximum on a grid
    prof = res.profile()
    grid = np.linspace(0.0, 1.0, 21)
    assert max(prof.loglik(v) for v in grid) <= res.llf_penalized + 1e-7


def test_local_maximum_case_regression():
    """The first start ends in a local maximum 0.62 below the global one: kept no longer."""
    lab_pred, lab_y, field = _tiny_cases()["local maximum"]
    res = _quiet(lambda: pu.URC(lab_pred, lab_y).fit(field, lab_pseudocount=0))
    L, F = res.model.lab_counts.to_numpy(), res.observed.to_numpy()
    assert res.llf == pytest.approx(direct_fit(L, F, True) + _lab_class_llf(L), abs=1e-6)


# ---- 6. edge inputs: no RuntimeWarning (pyproject turns them into errors) -----------------------
def _no_runtime_warnings(f):
    """Run ``f`` with RuntimeWarnings as errors and the package's own warnings silenced (also
    when pytest runs with ``-p no:warnings``, which ignores filterwarnings marks)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("error", RuntimeWarning)
        f()


@pytest.mark.parametrize("lik", ["joint", "fixed"])
def test_edge_inputs_without_runtime_warnings(lik):
    _no_runtime_warnings(lambda: _edge_inputs(lik))


def _edge_inputs(lik):
    y = np.r_[np.zeros(20, int), np.ones(20, int)]
    s = simulate_urc(n_lab=200, n_field=500, rng=np.random.default_rng(3))
    cases = [
        (np.where(y == 1, 1.0, 0.0), y, np.r_[np.zeros(30), np.ones(10)], None),
        (np.where(y == 1, 1.0, 0.0), y, np.ones(10), None),
        (s.lab_pred, s.lab_y, s.field_pred[:50], np.r_[np.zeros(49, int), 1]),
        (s.lab_pred, s.lab_y, s.field_pred[:3], np.array([0, 1, 2])),
        (s.lab_pred, s.lab_y, s.field_pred[s.field_pred > np.quantile(s.lab_pred, 0.75)][:40],
         None),
    ]
    for lab_pred, lab_y, field, groups in cases:
        for strength in (0.0, 2.0):
            r = pu.URC(lab_pred, lab_y).fit(field, groups=groups, likelihood=lik,
                                            prior_strength=strength)
            str(r.summary())
            r.conf_int(kind="wald")
            r.gof(by_group=True)
            for v in (0.0, 1.0):  # a base rate on the boundary: the data may be impossible
                t = r.test_no_shift(v)
                assert t.statistic >= 0 or np.isnan(t.statistic)
            if groups is None:
                r.recalibrate(field, old_prior=0.999)
            else:
                r.test_equal_base_rates()
                r.recalibrate(field, groups=groups)


def test_multiclass_boundary_without_runtime_warnings():
    _no_runtime_warnings(_multiclass_boundary)


def _multiclass_boundary():
    s3 = simulate_urc(n_lab=60, n_field=100, lab_base_rates=[1 / 3] * 3,
                      field_base_rate=[0.98, 0.01, 0.01], separation=3,
                      rng=np.random.default_rng(4))
    e = np.eye(3)
    for lab, field in [(s3.lab_pred, s3.field_pred),
                       (e[s3.lab_y], e[np.r_[np.zeros(20, int), np.ones(5, int)]])]:
        r = pu.URC(lab, s3.lab_y, n_bins=1).fit(field)
        str(r.summary())
        r.test_no_shift([1.0, 0.0, 0.0])
        r.recalibrate(field, old_prior=[0.98, 0.01, 0.01])


@pytest.mark.parametrize("by_group", ["False", "no", None, 1, np.nan])
def test_gof_by_group_must_be_a_bool(grouped, by_group):
    # by_group was read by its truthiness: "False" gave the table by group
    res = pu.URC(grouped.lab_pred, grouped.lab_y).fit(grouped.field_pred, grouped.field_group)
    with pytest.raises(ValueError, match="by_group must be True or False"):
        res.gof(by_group=by_group)
    assert res.gof(by_group=np.False_).statistic == res.gof().statistic


@pytest.mark.parametrize("kind", ["profile", "wald"])
@pytest.mark.parametrize("kwargs, err, match", [
    # the bootstrap's options were ignored silently unless kind="bartlett"
    (dict(n_boot="x"), ValueError, "n_boot must be an integer >= 2; got 'x'"),
    (dict(n_boot=True), ValueError, "n_boot must be an integer >= 2; got True"),
    (dict(n_boot=1), ValueError, "n_boot must be an integer >= 2; got 1"),
    (dict(rng="y"), TypeError, "rng must be an int seed"),
    (dict(rng=-1), ValueError, "rng must be a non-negative int seed"),
])
def test_conf_int_bootstrap_options_checked_for_every_kind(binary, kind, kwargs, err, match):
    res = pu.URC(binary.lab_pred, binary.lab_y).fit(binary.field_pred)
    with pytest.raises(err, match=match):
        res.conf_int(kind=kind, **kwargs)
    ref = res.conf_int(kind=kind)
    pd.testing.assert_frame_equal(res.conf_int(kind=kind, n_boot=np.int64(50), rng=3), ref)
    pd.testing.assert_frame_equal(
        res.conf_int(kind=kind, rng=np.random.default_rng(3)), ref)


@pytest.mark.parametrize("true_value, err", [("0.2", TypeError), (np.True_, TypeError),
                                             (np.nan, ValueError), (np.inf, ValueError)])
def test_plot_profile_true_value_must_be_a_finite_number(binary, true_value, err):
    # "0.2" failed with "Unknown format code 'g' for object of type 'str'"; NaN and inf were
    # accepted and drew no line
    import matplotlib.pyplot as plt

    res = pu.URC(binary.lab_pred, binary.lab_y).fit(binary.field_pred)
    fig, ax = plt.subplots()
    with pytest.raises(err, match="true_value must be a finite number; got "):
        res.plot_profile(ax=ax, true_value=true_value)
    ax.clear()
    res.plot_profile(ax=ax, true_value=0.31)
    assert "true 0.31" in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(n_boot="x"), ValueError, "n_boot must be an integer >= 2; got 'x'"),
    (dict(n_boot=1), ValueError, "n_boot must be an integer >= 2; got 1"),
    (dict(rng="y"), TypeError, "rng must be an int seed"),
])
def test_no_shift_checks_the_bootstrap_options_whatever_the_reference(binary, kwargs, err,
                                                                      match):
    # with reference="chi2" (the default) an invalid n_boot or rng was ignored silently, where
    # conf_int checks them whatever its kind (session 72's review)
    res = pu.URC(binary.lab_pred, binary.lab_y).fit(binary.field_pred)
    with pytest.raises(err, match=match):
        res.test_no_shift(**kwargs)
    assert res.test_no_shift(n_boot=np.int64(50), rng=3).statistic == \
        res.test_no_shift().statistic


def test_binary_vector_refused_where_classes_0_1_are_named_1_first(binary):
    # session 85's audit: lab columns [1, 0] made a field vector of P(Y = 1) read as P(0)
    # (the binary convention's "second class"): base rate 0.887 for 0.31, silently
    lab = pd.DataFrame({1: binary.lab_pred, 0: 1 - binary.lab_pred})
    model = pu.URC(lab, binary.lab_y)
    ref = _quiet(pu.URC(binary.lab_pred, binary.lab_y).fit, binary.field_pred)
    both = pd.DataFrame({1: binary.field_pred, 0: 1 - binary.field_pred})
    res = _quiet(model.fit, both)  # named columns: matched by name
    assert_allclose(res.base_rates[1].to_numpy(), ref.base_rates[1].to_numpy(), rtol=0,
                    atol=1e-9)
    msg = r"field_pred: a vector of predictions is ambiguous here: .* classes \[1, 0\]"
    for vec in (binary.field_pred, list(binary.field_pred), pd.Series(binary.field_pred)):
        with pytest.raises(ValueError, match=msg):
            model.fit(vec)
    with pytest.raises(ValueError, match=r"pred: a vector of predictions is ambiguous"):
        res.recalibrate(binary.field_pred[:5])
    with pytest.raises(ValueError, match=r"pred: a vector of predictions is ambiguous"):
        model.assign(binary.field_pred[:5])
    # a Series named by its class is not ambiguous
    res1 = _quiet(model.fit, pd.Series(binary.field_pred, name=1))
    assert_allclose(res1.base_rates.to_numpy(), res.base_rates.to_numpy(), rtol=0, atol=1e-9)
    # classes named 0 then 1: a vector is P(1) by both conventions
    ok = _quiet(pu.URC(lab[[0, 1]], binary.lab_y).fit, binary.field_pred)
    assert_allclose(ok.base_rates[1].to_numpy(), ref.base_rates[1].to_numpy(), rtol=0,
                    atol=1e-9)


def test_update_says_the_field_predictions_are_not_kept(binary):
    # session 85's audit: the inherited update() called fit() without field_pred ("missing 1
    # required positional argument")
    res = _quiet(pu.URC(binary.lab_pred, binary.lab_y).fit, binary.field_pred)
    with pytest.raises(NotImplementedError, match=r"URCResults.update: the results keep the "
                                                  "field histogram, not the field predictions"):
        res.update(likelihood="fixed")


def test_lab_rows_given_twice_cut_the_field_alike():
    # session 85's audit: where lab values were tied at a cut, the cut fell on the upper value
    # itself (the rule session 72 replaced), so the same lab distribution with every row given
    # twice cut the field differently: base rate 0.4643 -> 0.4511
    sim = simulate_urc(n_lab=62, n_field=20000, field_base_rate=0.3,
                       rng=np.random.default_rng(5), lab_design="random")
    lp, ly = np.asarray(sim.lab_pred, float), np.asarray(sim.lab_y)
    fp = np.asarray(sim.field_pred, float)
    d = np.repeat(np.arange(lp.size), 2)
    m1, m2 = pu.URC(lp, ly, 4), pu.URC(lp[d], ly[d], 4)
    assert np.unique(lp[d]).size < lp[d].size  # (tied lab values)
    np.testing.assert_array_equal(m1.partition.edges[0], m2.partition.edges[0])
    np.testing.assert_array_equal(m1.assign(fp), m2.assign(fp))
    # no lab value between a cut and the lab values it separates: the field between them is
    # split at the middle
    srt = np.sort(lp)
    for t in m1.partition.edges[0]:
        lo, hi = srt[srt < t].max(), srt[srt >= t].min()
        assert t == lo + (hi - lo) / 2


def test_multiclass_ties_of_the_top_probability_do_not_depend_on_the_column_order():
    # session 85's audit: np.argmax sent a tied row to the first column, so the same named
    # lab and field columns in the orders a, b, c and c, b, a gave base rates 0.012 apart
    sim = simulate_urc(n_lab=600, n_field=5000, lab_base_rates=[1 / 3] * 3,
                       field_base_rate=[0.2, 0.3, 0.5], rng=np.random.default_rng(7))
    lp = np.round(np.asarray(sim.lab_pred, float), 1)
    fp = np.round(np.asarray(sim.field_pred, float), 1)
    lp, fp = lp / lp.sum(axis=1, keepdims=True), fp / fp.sum(axis=1, keepdims=True)
    assert np.mean((lp == lp.max(axis=1, keepdims=True)).sum(axis=1) > 1) > 0.02
    names = ["a", "b", "c"]
    L, F = pd.DataFrame(lp, columns=names), pd.DataFrame(fp, columns=names)
    ly = pd.Series(np.asarray(sim.lab_y)).map(dict(enumerate(names)))
    r1 = _quiet(pu.URC(L, ly, 2).fit, F)
    perm = ["c", "b", "a"]
    r2 = _quiet(pu.URC(L[perm], ly, 2).fit, F[perm])
    assert_allclose(r2.base_rates[names].to_numpy(), r1.base_rates[names].to_numpy(), rtol=0,
                    atol=1e-9)


def test_a_rate_beyond_1_by_rounding_is_at_the_bound():
    """Session 87's study: under the fixed likelihood one of 300 groups had its class-1 rate
    at 0 and its class-0 rate computed as 1.0000000000000002, and ``conf_int()`` raised
    ``ValueError: Profile of p[234, 0]: the estimate ... lies outside the bounds``."""
    sim = simulate_urc(n_lab=36, n_field=200, lab_base_rates=0.3, field_base_rate=[0.3] * 300,
                       rng=[8701, 28], lab_design="stratified")
    r = _quiet(lambda: pu.URC(sim.lab_pred, sim.lab_y, n_bins=4).fit(
        sim.field_pred, groups=sim.field_group, likelihood="fixed"))
    P = r._record.estimate.P
    assert P.min() >= 0 and P.max() <= 1 and P[234, 0] == 1.0 and P[234, 1] < 1e-15
    ci = _quiet(r.conf_int)
    assert ci.loc[(234, 1), "lower"] == 0.0 and 0 < ci.loc[(234, 1), "upper"] < 0.2
    assert ((ci["lower"] >= 0) & (ci["upper"] <= 1)).all()


def test_estimates_snap_to_0_or_1_only_within_rounding():
    from puinfer.models.urc._likelihood import Estimate

    e = Estimate(np.array([[1 + 2e-16, -1e-17]]), np.array([[0.5, 0.5], [1.5, -0.5]]), 0.0,
                 None)
    np.testing.assert_array_equal(e.P, [[1.0, 0.0]])
    # a probability beyond its bound by more than rounding is a defect, left to be seen
    np.testing.assert_array_equal(e.M, [[0.5, 0.5], [1.5, -0.5]])
    # an Estimate pickled before the snap (built without it) is snapped when loaded, and so
    # are the other maxima it holds
    def unsnapped(others=()):
        x = object.__new__(Estimate)
        x.__dict__.update(P=np.array([[1 + 2e-16, -1e-17]]), M=np.array([[0.5, 0.5]]),
                          objective=0.0, convergence=None, others=others)
        return x

    old = unsnapped((unsnapped(),))
    assert old.P[0, 0] > 1 and old.others[0].P[0, 0] > 1
    new = pickle.loads(pickle.dumps(old))
    np.testing.assert_array_equal(new.P, [[1.0, 0.0]])
    np.testing.assert_array_equal(new.others[0].P, [[1.0, 0.0]])
    again = pickle.loads(pickle.dumps(e))
    np.testing.assert_array_equal(again.P, e.P)
    np.testing.assert_array_equal(again.M, e.M)


def test_a_reference_given_as_the_value_is_said(binary):
    """API audit, session 87: ``test_no_shift("bartlett")`` (the reference in the place of
    the null's ``value``) was refused as "value holds text, not numbers"."""
    r = _quiet(lambda: pu.URC(binary.lab_pred, binary.lab_y).fit(binary.field_pred))
    with pytest.raises(ValueError, match=r"value: 'bartlett' names a reference distribution; "
                                         r"pass it as reference='bartlett'"):
        r.test_no_shift("bartlett")
    with pytest.raises(ValueError, match="kind must be .* for URC; got 'bootstrap'"):
        r.conf_int(kind="bootstrap")
