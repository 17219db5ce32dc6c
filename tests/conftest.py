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
