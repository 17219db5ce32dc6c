"""One contract for every results class (issue 12): statsmodels attributes, pickle round trip,
summary as text/HTML/LaTeX, immutability, and derived values computed once.

Each case builds a small fit and names its main interval (the profile interval for which the
model exists) and its prediction; the same checks then run over every model.
"""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

import puinfer as pu
from puinfer.simulate import scar_design
from puinfer.simulate.calem import simulate_calem
from puinfer.simulate.urc import simulate_urc


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _pu_data():
    return scar_design(300, 300, 0.6, p=3, rng=np.random.default_rng(5))


def _detm():
    df = _pu_data()
    r = _quiet(lambda: pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit(probe=False))
    return (r, lambda res: res.conf_int_pi(), lambda res: res.predict(df.head(7)),
            lambda m: m.fit(probe=False))


def _setm():
    df = _pu_data()
    r = _quiet(lambda: pu.SETM.from_formula("labeled ~ x1 + poly(x2, 2)", data=df).fit(
        probe=False))
    return (r, lambda res: res.conf_int_pi(), lambda res: res.predict(df.head(7)),
            lambda m: m.fit(probe=False))


def _calem(calibrator):
    def build():
        sim = simulate_calem(1500, rng=np.random.default_rng(3))
        m = pu.CalEM(sim.score, sim.label, sim.treated, calibrator=calibrator)
        r = _quiet(m.fit)
        new = pd.Series(np.linspace(0.05, 0.95, 7), index=list("abcdefg"))
        # isotonic has no covariance: its cached derived value is the summary (with the test)
        derived = ((lambda res: res.summary().as_text()) if calibrator == "isotonic"
                   else (lambda res: res.conf_int()))
        return r, derived, lambda res: res.predict(new), lambda m: m.fit()
    return build


def _urc(multiclass, groups):
    def build():
        if multiclass:
            sim = simulate_urc(400, 3000, lab_base_rates=[0.3, 0.3, 0.4],
                               field_base_rate=[0.5, 0.3, 0.2], rng=np.random.default_rng(8))
        elif groups:
            sim = simulate_urc(400, [1500, 1500], field_base_rate=[0.2, 0.4],
                               rng=np.random.default_rng(8))
        else:
            sim = simulate_urc(400, 3000, rng=np.random.default_rng(8))
        g = sim.field_group if groups else None
        r = _quiet(lambda: pu.URC(sim.lab_pred, sim.lab_y).fit(sim.field_pred, groups=g))
        g7 = None if g is None else g[:7]
        return (r, lambda res: res.conf_int(),
                lambda res: res.recalibrate(sim.field_pred[:7], groups=g7),
                lambda m: m.fit(sim.field_pred, groups=g))
    return build


def _regression_urc():
    from puinfer.simulate.urc_regression import simulate_urc_regression

    sim = simulate_urc_regression(400, 2000, field_shift=0.5, rng=np.random.default_rng(8))
    r = _quiet(lambda: pu.RegressionURC(sim.lab_pred, sim.lab_y, 5).fit(sim.field_pred))
    head = sim.field_pred.take(np.arange(7))
    return (r, lambda res: res.conf_int(), lambda res: res.recalibrate(head),
            lambda m: m.fit(sim.field_pred))


CASES = {
    "DETM": _detm,
    "SETM": _setm,
    **{f"CalEM-{c}": _calem(c) for c in ("logistic", "beta", "spline", "isotonic",
                                          "~ logit(score)")},
    "URC-binary": _urc(False, False),
    "URC-groups": _urc(False, True),
    "URC-multiclass": _urc(True, False),
    "RegressionURC": _regression_urc,
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    return request.param, *CASES[request.param]()


def _same(a, b):
    if isinstance(a, str):
        assert a == b
    elif isinstance(a, (pd.Series, pd.DataFrame)):
        np.testing.assert_array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
        assert list(a.index) == list(b.index)
    else:
        np.testing.assert_array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float))


def test_statsmodels_attributes(case):
    _, r, *_ = case
    params = r.params
    assert isinstance(params, pd.Series) and params.notna().all()
    for name in ("bse", "tvalues", "pvalues"):
        s = getattr(r, name)
        assert isinstance(s, pd.Series) and list(s.index) == list(params.index)
    assert np.isfinite(r.llf) and np.isfinite(r.llf_penalized)
    assert isinstance(r.nobs, (int, np.integer)) and r.nobs > 0
    # the number of free parameters (URC's joint likelihood also counts its nuisance
    # class-conditional bin probabilities, which params does not show)
    assert isinstance(r.df_model, (int, np.integer)) and r.df_model > 0
    if r.bse.isna().all():  # no covariance (isotonic CalEM): said, not NaN intervals
        with pytest.raises(NotImplementedError, match="covariance"):
            r.conf_int()
        with pytest.raises(NotImplementedError, match="covariance"):
            r.cov_params()
        return
    ci = r.conf_int(alpha=0.05)
    assert list(ci.columns) == ["lower", "upper"] and list(ci.index) == list(params.index)
    ok = r.bse.notna()
    assert np.all(ci["lower"][ok] <= params[ok]) and np.all(params[ok] <= ci["upper"][ok])
    # a 90% interval is inside the 95% one
    ci90 = r.conf_int(alpha=0.10)
    assert np.all((ci90["lower"] >= ci["lower"])[ok]) and np.all((ci90["upper"] <= ci["upper"])[ok])
    cov = r.cov_params()
    np.testing.assert_allclose(np.sqrt(np.diag(cov.reindex(index=params.index,
                                                           columns=params.index))[ok]),
                               r.bse[ok], rtol=1e-12)
    with pytest.raises(ValueError, match="alpha"):
        r.conf_int(0.95)  # a confidence level where a significance level is meant


def test_summary_text_html_latex(case):
    _, r, *_ = case
    s = r.summary(alpha=0.10)
    text, html, latex = s.as_text(), s.as_html(), s.as_latex()
    if r.bse.notna().any():  # a coefficient table with intervals at the level asked for
        assert "[0.05" in text and "0.95]" in text
        assert "[0.025" not in text
    assert "<table" in html and "\\begin{tabular}" in latex
    assert str(r) == r.summary().as_text()
    assert r._repr_html_() == r.summary().as_html()


def test_immutable(case):
    _, r, *_ = case
    with pytest.raises(AttributeError, match="immutable"):
        r.llf = 0.0
    with pytest.raises(AttributeError, match="immutable"):
        r.new_attribute = 1
    with pytest.raises(AttributeError, match="immutable"):
        del r.nobs
    p = r.params
    p.iloc[0] = 1e9  # a copy: the result does not change
    assert r.params.iloc[0] != 1e9


def test_model_read_only_once_fitted(case):
    # session 67's audit: results read their model's data, design and options when they
    # compute intervals, tests and predictions; rebinding them after the fit changed existing
    # results (a DETM's SCAR statistic 0.82 -> 177 after model.data = other data, a CalEM's
    # predictions after model.label = ..., RegressionURC's cdf after model.edges = ...)
    _, r, *_ = case
    for model in (r.model, pickle.loads(pickle.dumps(r)).model):
        public = [k for k in vars(model) if not k.startswith("_")]
        assert public
        for name in public:
            with pytest.raises(AttributeError, match=f"has been fitted.*cannot set '{name}'"):
                setattr(model, name, None)
            with pytest.raises(AttributeError, match=f"cannot delete '{name}'"):
                delattr(model, name)
        with pytest.raises(AttributeError, match="has been fitted"):
            model.new_attribute = 1


def test_results_pickled_before_models_were_frozen_still_load(case):
    # the state of results pickled before session 67: the model without its "fitted" mark,
    # DETM/SETM's el_weights in the results' own dictionary (now a property: review found
    # such pickles refused with "property 'el_weights' ... has no setter")
    import copy

    name, r, *_ = case
    state = r.__getstate__()
    state["model"] = copy.copy(r.model)  # (a copy is not marked fitted)
    assert "_fitted" not in state["model"].__dict__
    if name in ("DETM", "SETM"):
        state["el_weights"] = np.asarray(r._fit.el_weights)
    old = type(r).__new__(type(r))
    old.__setstate__(state)
    assert old.summary().as_text() == r.summary().as_text()
    with pytest.raises(AttributeError, match="has been fitted"):
        old.model.note = 1
    if name in ("DETM", "SETM"):
        np.testing.assert_array_equal(np.asarray(old.el_weights), np.asarray(r.el_weights))


def test_a_copy_of_a_fitted_model_is_a_new_model(case):
    # (studies/urc_labdesign.py refits a copy of a fitted URC with another partition)
    import copy

    _, r, _, _, refit = case
    c = copy.copy(r.model)
    c.note = "settable"
    with pytest.raises(AttributeError, match="has been fitted"):
        r.model.note = "not"
    _quiet(lambda: refit(c))
    with pytest.raises(AttributeError, match="has been fitted"):
        c.note = "now fitted"


def test_model_settable_before_its_first_fit():
    # (read-only from the first fit on, not before: nothing reads the model until then)
    sim = simulate_urc(200, 500, rng=np.random.default_rng(1))
    m = pu.URC(sim.lab_pred, sim.lab_y)
    m.note = "mine"
    r = _quiet(lambda: m.fit(sim.field_pred))
    assert r.model is m and m.note == "mine"
    with pytest.raises(AttributeError, match="has been fitted"):
        m.note = "other"


def _writable_arrays(obj, path="r", seen=None, depth=0):
    """Paths of the writable numpy arrays reachable from a result through the public
    attributes of the package's own objects (its model, the model's data, partitions, bases),
    4 levels deep."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 4:
        return []
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return [path] if obj.flags.writeable else []
    if isinstance(obj, tuple):
        return [p for i, v in enumerate(obj)
                for p in _writable_arrays(v, f"{path}[{i}]", seen, depth + 1)]
    if not type(obj).__module__.startswith("puinfer"):
        # a foreign object's arrays in its __slots__ (scipy's CubicSpline keeps c and x there:
        # session 85's audit wrote into a spline basis's through r.basis.cardinal.c)
        slots = [k for t in type(obj).__mro__ for k in getattr(t, "__slots__", ())]
        return [f"{path}.{k}" for k in slots
                if isinstance(getattr(obj, k, None), np.ndarray) and getattr(obj, k).flags.writeable]
    return [p for k, v in getattr(obj, "__dict__", {}).items() if not k.startswith("_")
            for p in _writable_arrays(v, f"{path}.{k}", seen, depth + 1)]


def test_nothing_reachable_from_a_result_can_be_written_into(case):
    # review (session 60): results changed through r.model.score, the URC partition's edges,
    # RegressionURC's edges, a DETM model's rows, a spline basis's knots, a convergence trace
    name, r, _, predict, _ = case
    assert _writable_arrays(r) == []
    # and after a pickle round trip (numpy does not pickle the write flag)
    assert _writable_arrays(pickle.loads(pickle.dumps(r))) == []
    if isinstance(getattr(r.model, "classes", None), (list, tuple)):
        assert isinstance(r.model.classes, tuple)
    conv = getattr(r, "convergence", None)
    if conv is not None and getattr(conv, "trace", None) is not None:
        assert not np.asarray(conv.trace).flags.writeable or conv.trace.size == 0
    # cached tests are handed out again: their details cannot be edited
    test = {"DETM": "test_scar", "URC-binary": "test_no_shift",
            "URC-groups": "test_no_shift", "URC-multiclass": "test_no_shift"}.get(name)
    if name.startswith("CalEM") and name != "CalEM-isotonic":
        test = "test_bias"
    if test is not None:
        t = _quiet(getattr(r, test))
        with pytest.raises(TypeError, match="read-only"):
            t.extra["x"] = 1
        assert "x" not in _quiet(getattr(r, test)).extra
        pickle.loads(pickle.dumps(t))
    # a profile, shared by the result's intervals, cannot be re-set
    if name in ("DETM", "SETM") or name.startswith("URC"):
        if name in ("DETM", "SETM"):
            pr = _quiet(r.profile_pi)
        else:  # the first group's first class
            g, c = r.params.index[0]
            pr = _quiet(lambda: r.profile(group=g, cls=c))
        with pytest.raises(AttributeError, match="immutable"):
            pr.estimate = 0.5
    # pandas objects are handed out as copies (DETM/SETM's starts table, a calibrator's
    # parameters)
    if name in ("DETM", "SETM"):
        st = r.starts
        before = r.starts.copy()
        # (set in place: pandas 3.1 deprecates drop(inplace=True))
        st.loc[:, st.select_dtypes("number").columns] = -1.0
        pd.testing.assert_frame_equal(r.starts, before)
    if name.startswith("CalEM") and name != "CalEM-isotonic":
        before = r.predict([0.5])
        r.calibrator.params.iloc[:] = 5.0
        np.testing.assert_array_equal(r.predict([0.5]), before)
    # a formula's design (the model's, a formula calibrator's basis) hands out copies of its
    # frames: session 74's audit renamed r.model.design.X's columns in place, and the
    # unpickled result's predict() then failed rebuilding the design
    from puinfer.formula import Design

    for design in (getattr(r.model, "design", None), getattr(r, "basis", None)):
        if isinstance(design, Design):
            for frame in (design.X, design.y):
                if frame is not None:
                    if frame.ndim == 1:
                        frame.name = "edited"
                    else:
                        frame.columns = [f"edited{i}" for i in range(frame.shape[1])]
            assert "edited0" not in design.X.columns
            assert design.y is None or design.y.name != "edited"
            r2 = pickle.loads(pickle.dumps(r))
            _same(predict(r2), predict(r))


def _rename_axes(obj):
    """Rename the levels of a pandas object's axes in place (``Index.names`` can be set)."""
    for ax in (obj.index, getattr(obj, "columns", None)):
        if ax is not None:
            ax.names = [f"edited{i}" for i in range(ax.nlevels)]


def test_renaming_an_outputs_axes_changes_nothing_in_the_result(case):
    # session 85's audit: pvalues, bartlett_factors, URC's interval table and CalEM's
    # conf_int and predict handed out the result's (or its model's) own Index; renaming its
    # levels renamed the result's, and a URC summary then failed ("Level class not found")
    name, r, interval, predict, _ = case
    r = pickle.loads(pickle.dumps(r))  # (a copy of its own: the case is shared)
    ref = pickle.loads(pickle.dumps(r))
    covariance = name != "CalEM-isotonic"  # (no parametric covariance: conf_int refused)
    outputs = [r.params, r.bse, r.tvalues, r.pvalues, _quiet(lambda: interval(r)),
               _quiet(lambda: predict(r))]
    if name in ("DETM", "SETM"):  # (the target rows' posteriors: the model's index)
        outputs.append(r.predict())
        before = list(ref.predict().index.names)
    if covariance:
        outputs += [_quiet(lambda: r.conf_int()), r.cov_params()]
    for out in outputs:
        if isinstance(out, (pd.Series, pd.DataFrame)):
            _rename_axes(out)
    for attr in ("params", "bse", "pvalues"):
        assert list(getattr(r, attr).index.names) == list(getattr(ref, attr).index.names)
    if covariance:
        assert list(r.conf_int().index.names) == list(ref.conf_int().index.names)
    if name in ("DETM", "SETM"):
        assert list(r.predict().index.names) == before
    assert str(_quiet(r.summary)) == str(_quiet(ref.summary))


def test_second_interval_is_cached(case, puinfer_calls):
    _, r, interval, _, refit = case
    # a new fit: the module's result may have computed its interval in another test already
    # (the pickle of a result carries its cached values)
    fresh = _quiet(lambda: refit(r.model))
    first, first_calls = puinfer_calls(lambda: _quiet(lambda: interval(fresh)))
    second, second_calls = puinfer_calls(lambda: _quiet(lambda: interval(fresh)))
    _same(first, second)
    # counted, not timed (a timed check failed in CI under load: SETM's interval costs
    # milliseconds): recomputing repeats every call into puinfer, a cached value makes a
    # few dozen (the lookup and its copy); e.g. DETM 706,724 calls, then 110
    assert second_calls < 0.05 * first_calls + 40


def test_pickle_round_trip(case):
    _, r, interval, predict, refit = case
    before = (_quiet(lambda: r.summary().as_text()), _quiet(lambda: interval(r)), predict(r))
    r2 = pickle.loads(pickle.dumps(r))
    assert type(r2) is type(r)
    after = (_quiet(lambda: r2.summary().as_text()), _quiet(lambda: interval(r2)), predict(r2))
    assert before[0] == after[0]
    _same(before[1], after[1])
    _same(before[2], after[2])
    _same(r.params, r2.params)
    # the model pickles too and refits to the same numbers
    m2 = pickle.loads(pickle.dumps(r.model))
    assert type(m2) is type(r.model)
    _same(_quiet(lambda: refit(m2)).params, r.params)
