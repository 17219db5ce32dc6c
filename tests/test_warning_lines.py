"""Every warning points at the caller's line (the line that called into puinfer), however
deep in the package it arises: a notebook then shows the user's own cell and line, and
``warnings.filterwarnings(module=...)`` filters work. Before, fixed stack levels pointed
inside puinfer for warnings raised through another layer (RegressionURC through URC's fit,
a cached property, the scikit-learn wrappers)."""

import warnings

import numpy as np

import puinfer as pu
from puinfer.exceptions import PuinferWarning
from puinfer.simulate.urc import simulate_urc
from puinfer.simulate.urc_regression import simulate_urc_regression


def _caught(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    w = [x for x in w if issubclass(x.category, PuinferWarning)]
    assert w, "no warning was raised"
    return w


def _all_here(ws):
    return [(x.category.__name__, x.filename, x.lineno) for x in ws if x.filename != __file__]


def test_urc_constructor_and_fit():
    s = simulate_urc(n_lab=500, n_field=400, field_base_rate=0.0, separation=3,
                     rng=np.random.default_rng(21))
    box = {}
    ws = _caught(lambda: box.setdefault("m", pu.URC(s.lab_pred, s.lab_y)))   # EmptyBin
    ws += _caught(lambda: box["m"].fit(s.field_pred))                          # Boundary
    assert {x.category.__name__ for x in ws} >= {"EmptyBinWarning", "BoundaryWarning"}
    assert _all_here(ws) == []


def test_regression_urc_fit_and_its_cached_unpenalised_fit():
    sim = simulate_urc_regression(1000, 5000, field_shift=0.4, rng=np.random.default_rng(6))
    m = pu.RegressionURC(sim.lab_pred, sim.lab_y, 6)
    r = m.fit(sim.field_pred, smoothing=0.0)
    ws = _caught(lambda: m.fit(sim.field_pred, smoothing=0.0))      # through URC.fit
    r = m.fit(sim.field_pred, smoothing=1.0)
    ws += _caught(lambda: r.unpenalized)                             # a cached property
    assert any(x.category.__name__ == "BoundaryWarning" for x in ws)
    assert _all_here(ws) == []


def test_prior_shift_and_sklearn_wrapper():
    ws = _caught(lambda: pu.adjust_prior(np.array([1.0, 0.5]), 0.5, 0.0))
    from puinfer.sklearn import DETMClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = np.where(np.arange(300) < 150, "labeled", "unlabeled")
    X[:150, 0] += 1.0
    # (the plain profile interval the classifier computes at fit: the bootstrap's cost 10 s)
    ws += _caught(lambda: DETMClassifier(pos_label="labeled", pi_interval="profile").fit(X, y))
    assert {x.category.__name__ for x in ws} >= {"BoundaryWarning", "SeparationWarning"}
    assert _all_here(ws) == []


def test_warn_called_here_points_here():
    from puinfer._validation import warn

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        warn("direct", PuinferWarning)
    assert (w[0].filename, w[0].lineno) == (__file__, _line_of('warn("direct"'))


def _line_of(text):
    with open(__file__) as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line and "_line_of" not in line)


def test_detm_fit_and_interval():
    """Through DETM's fit (the profile probe) and a results method (the interval: pi is
    not identified when the target is distributed as the source)."""
    rng = np.random.default_rng(4)
    src, tgt = rng.normal(size=(150, 2)), rng.normal(size=(150, 2))
    box = {}
    ws = _caught(lambda: box.setdefault("r", pu.DETM(src, tgt).fit()))
    # (the fit computed the 95% interval only; the plain profile one: the same search that
    # warns, without the bootstrap's 6.5 s)
    ws += _caught(lambda: box["r"].conf_int_pi(0.01, method="profile"))
    assert "ConfidenceSetWarning" in {x.category.__name__ for x in ws}
    assert _all_here(ws) == []


def test_third_party_callers_are_callers_and_the_standard_library_is_skipped():
    """Only standard-library frames are skipped (site-packages may lie inside the standard
    library's directory, as with pyenv: a scikit-learn pipeline then counted as standard
    library in one layout and not in a venv); a thread running a puinfer function has no
    caller outside the standard library, so its warning points at puinfer's outermost frame,
    not at threading.py."""
    import functools
    import threading

    import sklearn.pipeline

    from puinfer._validation import _stdlib

    assert _stdlib(functools.__file__) and _stdlib(threading.__file__)
    assert not _stdlib(sklearn.pipeline.__file__) and not _stdlib(np.__file__)
    assert not _stdlib(__file__)

    caught = []

    def run():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            pu.adjust_prior(np.array([1.0, 0.5]), 0.5, 0.0)
        caught.extend(w)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert caught[0].filename == __file__          # run() is the caller
    caught.clear()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = threading.Thread(target=pu.adjust_prior, args=(np.array([1.0, 0.5]), 0.5, 0.0))
        t.start()
        t.join()
    assert w and all("puinfer" in x.filename and not _stdlib(x.filename) for x in w)
