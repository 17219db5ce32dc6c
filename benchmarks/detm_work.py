"""Where a default DETM fit (or a bootstrap) spends its work: every evaluation of the two
objectives, counted and timed by the stage of the fit that asked for it (issue 17).

    OPENBLAS_NUM_THREADS=1 taskset -c 0 python benchmarks/detm_work.py --n 3000
    python benchmarks/detm_work.py --n 100000          # the subsample's share shows
    python benchmarks/detm_work.py --n 1000 --task scar --n-boot 50

The data are ``bench_detm.py``'s (Liu et al.'s SAR design, pi = 0.3, seed n + p; ``--design
scar``: the SCAR design, where SETM holds). Each
evaluation of the binary-regression form (``free``: the search's Newton runs) or of the profile
log-EL at fixed pi (``profile``: the probe, the interval, the bootstrap's refits at pi-hat) is
attributed to the innermost stages on its call stack (``STAGES``), to the rows it ran on (all
rows, or the number of rows of the seeded subsample above 40,000 rows, or of a bootstrap
resample's subsample: none) and to its order (0: the value, a line
search's or a merge check's; 2: value, gradient and Hessian). Times are CPU seconds
(``time.process_time``) inside the evaluations; the total includes everything else (the
label rule, the multipliers' checks, the records, Python). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import collections
import inspect
import os
import sys
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.models.detm import _el  # noqa: E402
from puinfer.simulate import sar_design, scar_design  # noqa: E402

#: function names that name a stage (outermost first in the label)
STAGES = ("fit_data", "subsample_starts", "run_starts", "_hop", "_hop_and_stretch",
          "skeleton", "_search", "outside_points", "statistic", "_known_with_image",
          "build_record", "_interval_statistic", "_statistic")


def _label(frame) -> str:
    """The stages on the call stack from ``frame`` outwards (outermost first), prefixed by the
    model whose fit they belong to (a default DETM fit runs SETM's default fit first)."""
    names, model = [], None
    while frame is not None:
        name = frame.f_code.co_name
        if name in STAGES:
            names.append(name)
        if name == "fit_data" and model is None:  # the innermost fit
            model = "SETM" if frame.f_locals.get("restricted") else "DETM"
        frame = frame.f_back
    stages = "/".join(dict.fromkeys(reversed(names)))
    return f"{model or '-'}: {stages or '(other)'}"


def run(n: int, p: int, task: str, n_boot: int, design: str = "sar"
        ) -> tuple[pd.DataFrame, float]:
    make = {"sar": sar_design, "scar": scar_design}[design]
    df = make(n, n, 0.3, p=p, rng=np.random.default_rng(n + p))
    X = df[[f"x{j}" for j in range(1, p + 1)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    calls: collections.Counter = collections.Counter()
    cpu: collections.Counter = collections.Counter()
    full_rows = 2 * n

    def wrap(name, fn):
        sig = inspect.signature(fn)

        def counted(*args, **kwargs):
            t0 = time.process_time()
            out = fn(*args, **kwargs)
            dt = time.process_time() - t0
            bound = sig.bind(*args, **kwargs).arguments
            rows = len(bound["Z"])
            key = (name, _label(sys._getframe(1)), "all" if rows == full_rows else f"{rows}",
                   bound.get("order", 2))
            calls[key] += 1
            cpu[key] += dt
            return out
        return counted

    saved = _el.free_objective, _el.profile_log_el
    _el.free_objective = wrap("free", saved[0])
    _el.profile_log_el = wrap("profile", saved[1])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if task == "fit":
                t0 = time.process_time()
                pu.DETM(X[lab], X[~lab]).fit()
            else:
                d = pu.DETM(X[lab], X[~lab]).fit()
                d.null_fit  # noqa: B018 (fitted before counting)
                calls.clear()
                cpu.clear()
                t0 = time.process_time()
                if task == "scar":
                    d.test_scar("bootstrap", n_boot=n_boot, rng=1)
                else:
                    d.conf_int_pi(method="bootstrap", n_boot=n_boot, rng=1)
            total = time.process_time() - t0
    finally:
        _el.free_objective, _el.profile_log_el = saved
    tab = pd.DataFrame([dict(objective=k[0], stage=k[1], rows=k[2], order=k[3],
                             calls=calls[k], cpu_s=cpu[k]) for k in calls])
    tab = tab.sort_values("cpu_s", ascending=False, ignore_index=True)
    return tab, total


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=3000, help="n = m (default 3000)")
    ap.add_argument("--p", type=int, default=15)
    ap.add_argument("--task", choices=["fit", "scar", "interval"], default="fit",
                    help="the default DETM fit, or (after it) the bootstrap SCAR test or the "
                         "bootstrap-calibrated interval for pi")
    ap.add_argument("--n-boot", type=int, default=199)
    ap.add_argument("--design", choices=["sar", "scar"], default="sar",
                    help="Liu et al.'s SAR design (bench_detm.py's data) or the SCAR design")
    a = ap.parse_args(argv)
    tab, total = run(a.n, a.p, a.task, a.n_boot, a.design)
    inside = tab.cpu_s.sum()
    print(f"{a.task}, {a.design} design, n = m = {a.n}, p = {a.p}: {total:.2f} CPU s, "
          f"{inside:.2f} s of it in {tab.calls.sum()} evaluations\n")
    print(tab.to_markdown(index=False, floatfmt=".3f"))


if __name__ == "__main__":
    sys.exit(main())
