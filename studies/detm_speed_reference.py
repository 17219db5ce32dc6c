"""Reference fits and 95% profile intervals of DETM/SETM for the speed work of issue 17.

Run with the implementation to be matched on the path (the reference stored in
``tests/models/detm/data/speed_reference.csv`` was made with commit d0d0a0b, before issue 17's
changes to the search and the profile):

    PYTHONPATH=/path/to/checkout/of/d0d0a0b python studies/detm_speed_reference.py \\
        --out tests/models/detm/data/speed_reference.csv

``tests/models/detm/test_detm_speed.py`` compares the current fits with it to 1e-8.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

import puinfer as pu
from puinfer.simulate import sar_design, scar_design

FEATS15 = "labeled ~ " + " + ".join(f"x{j}" for j in range(1, 16))


def cases():
    """(name, model class, data frame, formula, fit options): the test suite's datasets."""
    mob = pu.datasets.load_mobile_pu()
    mob_f = "labeled ~ battery_power + ram + px_height"
    return [
        ("sar3000", sar_design(3000, 3000, 0.3, rng=np.random.default_rng(3000)),
         FEATS15, {}),
        ("sar500x700", sar_design(500, 700, 0.3, rng=np.random.default_rng(7)),
         FEATS15, {}),
        ("scar400x600p3", scar_design(400, 600, 0.3, rng=np.random.default_rng(5), p=3),
         "labeled ~ x1 + x2 + x3", {}),
        ("sar800p5", sar_design(800, 800, 0.3, p=5, rng=np.random.default_rng(8)),
         "labeled ~ " + " + ".join(f"x{j}" for j in range(1, 6)), {}),
        # issue 19's SAR design (pi = 0.7), where a second branch of the profile of pi lies
        # above the fit's beyond pi = 0.72
        ("sar1000_12000001", sar_design(1000, 1000, 0.7, p=15,
                                        rng=np.random.default_rng(12000001)),
         FEATS15, {}),
        # the same design, where a higher branch than the fit's lies at pi-hat's own level
        ("sar1000_12000005", sar_design(1000, 1000, 0.7, p=15,
                                        rng=np.random.default_rng(12000005)),
         FEATS15, {}),
        ("mobile_pi>0.5", mob, mob_f, {"label_rule": "pi>0.5"}),
        ("mobile_kl", mob, mob_f, {}),
    ]


def run() -> pd.DataFrame:
    rows = []
    warnings.simplefilter("ignore")
    for name, df, formula, opts in cases():
        for cls in (pu.SETM, pu.DETM):
            o = {} if cls is pu.SETM else opts
            r = cls.from_formula(formula, data=df).fit(**o)
            ci = r.conf_int_pi(method="profile")
            rows.append(dict(case=name, model=cls.__name__, llf_penalized=r.llf_penalized,
                             pi=r.pi, lower=ci["lower"], upper=ci["upper"]))
            print(rows[-1], flush=True)
    return pd.DataFrame(rows)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    run().to_csv(a.out, index=False, float_format="%.17g")
