import os

# the models work on small dense matrices, where multi-threaded BLAS only adds overhead (and
# slows everything down badly on a loaded machine); set before numpy is imported
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


@pytest.fixture
def puinfer_calls():
    """``calls(fn)`` -> ``(fn(), n)``, ``n`` the calls into puinfer's own functions that
    ``fn()`` made: a measure of the work done that does not depend on the machine's load (a
    value served from a cache makes a few dozen; computing it again repeats every call)."""
    import sys

    import puinfer

    root = os.path.dirname(puinfer.__file__)

    def calls(fn):
        n = 0

        def profile(frame, event, arg):
            nonlocal n
            if event == "call" and frame.f_code.co_filename.startswith(root):
                n += 1

        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            out = fn()
        finally:
            sys.setprofile(previous)
        return out, n

    return calls
