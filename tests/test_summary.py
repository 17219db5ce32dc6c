"""puinfer.summary: the number format of summary tables and info."""

import numpy as np

from puinfer.inference.hypothesis import format_pvalue
from puinfer.summary import _fmt


def test_large_numbers_keep_their_digits():
    # session 82's audit: with 4 significant digits from 1e5 on, two log-likelihoods of
    # -190345.1 and -190312.9 (an LR statistic of 64) both printed as -1.903e+05
    assert _fmt(-190345.1) == "-190345.1000" and _fmt(-190312.9) == "-190312.9000"
    assert _fmt(np.float64(123456789.5)) == "123456789.5000"
    assert _fmt(1e20) == "1e+20" and _fmt(-3.2e-7) == "-3.2e-07"
    assert _fmt(0.5) == "0.5000" and _fmt(0.0) == "0.0000" and _fmt(float("nan")) == "NA"


def test_a_nan_p_value_of_any_float_type_is_na():
    for nan in (float("nan"), np.float64("nan"), np.float32("nan")):
        assert format_pvalue(nan) == "NA"
    assert format_pvalue(np.float32(0.25)) == "0.25"
