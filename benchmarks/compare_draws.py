"""Do two versions of the package draw the same bootstrap statistics? (issue 17's record)

Writes the 199 draws ``(R*_b(pi-hat), pi-hat_b)`` of DETM's default interval (Silverman's h,
``rng = default_rng(1)``) on the benchmark's data (``sar_design(1000, 1000, 0.3, p=15)``,
seed 1015, as ``bench_detm.py``; ``--design scar`` for the SCAR design), or with ``--test`` the
199 statistics ``R*_b`` of the bootstrap SCAR test (``test_scar("bootstrap")``'s defaults,
``rng = default_rng(1)``), then compares two such files. Run each version with its own tree
first on the path:

    PYTHONPATH=<old tree> python benchmarks/compare_draws.py draw /tmp/old.npy [--design scar]
    PYTHONPATH=<new tree> python benchmarks/compare_draws.py draw /tmp/new.npy [--design scar]
    python benchmarks/compare_draws.py compare /tmp/old.npy /tmp/new.npy
"""

from __future__ import annotations

import argparse
import os
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def bench_fit(design: str = "sar"):
    """The default DETM fit of the benchmark's data (``design`` "sar" or "scar", n = m = 1000,
    p = 15, pi = 0.3, seed 1015)."""
    import puinfer as pu
    from puinfer.simulate import sar_design, scar_design

    make = {"sar": sar_design, "scar": scar_design}[design]
    n, p = 1000, 15
    df = make(n, n, 0.3, p=p, rng=np.random.default_rng(n + p))
    X = df[[f"x{j}" for j in range(1, p + 1)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pu.DETM(X[lab], X[~lab]).fit()


def draw(path, design, test=False):
    from puinfer.models.detm import bootstrap as boot

    d = bench_fit(design)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = boot.bandwidth(d.model.data, "silverman")
        rng = np.random.default_rng(1)
        if test:  # the SCAR test's R*_b, as a column beside NaN (the layout of the interval's)
            r = boot.replicate(d, d.null_fit, 199, rng, smooth=h)
            np.save(path, np.column_stack([r, np.full_like(r, np.nan)]))
        else:
            np.save(path, boot.interval_replicate(d, 199, rng, smooth=h))


def compare(a_path, b_path):
    a, b = np.load(a_path), np.load(b_path)
    diff = np.nanmax(np.abs(a - b), axis=1)
    idx = np.flatnonzero(diff > 1e-6)
    print(f"largest difference {np.nanmax(diff):.3g}; resamples differing by > 1e-6: "
          f"{idx.size} of {len(a)}")
    for i in idx:
        print(f"  {i}: R*_b {a[i, 0]:.4f} -> {b[i, 0]:.4f}" + (
            "" if np.isnan(a[i, 1]) else f", pi-hat_b {a[i, 1]:.4f} -> {b[i, 1]:.4f}"))
    k = int(np.ceil(0.95 * (len(a) + 1))) - 1
    print(f"cut-off (the 190th of 199): {np.sort(a[:, 0])[k]:.4f} -> {np.sort(b[:, 0])[k]:.4f}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("draw")
    d.add_argument("path")
    d.add_argument("--design", choices=["sar", "scar"], default="sar")
    d.add_argument("--test", action="store_true", help="the bootstrap SCAR test's draws")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = ap.parse_args()
    if args.cmd == "draw":
        draw(args.path, args.design, args.test)
    else:
        compare(args.a, args.b)


if __name__ == "__main__":
    main()
