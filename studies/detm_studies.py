"""Monte-Carlo studies of DETM/SETM against Liu et al. (Tables 1-2, Figure 3).

Usage (each writes raw replicates to studies/results/<name>_raw.csv as it goes, and a table
beside the paper's numbers to studies/results/<name>.md):

    python studies/detm_studies.py table2   [--reps 200] [--n 1000 3000]
    python studies/detm_studies.py table1   [--reps-null 500] [--reps-power 50]
    python studies/detm_studies.py bootsize [--reps 200] [--n-boot 200]
    python studies/detm_studies.py bootwarp [--reps 1000] [--n 1000] [--first 0]
    python studies/detm_studies.py bootsmooth [--reps 1000] [--n 1000] [--first 0] [--hs 0 0.4]
    python studies/detm_studies.py bootcalib  # size by bandwidth from all the runs above

``table2`` also gives the coverage of the 95% profile interval for pi and the mean standard
error beside the empirical SD (Liu et al., Figure 3). Seeds are fixed: reruns reproduce the files.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matrices: threads only add overhead

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.models.detm import bootstrap as boot  # noqa: E402
from puinfer.simulate import scar_design  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
TAG = ""  # --tag: a suffix for the output files (e.g. to rerun with a newer version)
FORMULA = "labeled ~ " + " + ".join(f"x{j}" for j in range(1, 16))

# Liu et al., Table 2: mean (SD) of pi-hat; keys (design, model, pi, n)
TABLE2 = {
    ("SCAR", "SETM", 0.3): {1000: (0.301, 0.018), 2000: (0.300, 0.012), 3000: (0.300, 0.009),
                            4000: (0.300, 0.008), 5000: (0.300, 0.007)},
    ("SCAR", "SETM", 0.7): {1000: (0.702, 0.020), 2000: (0.699, 0.014), 3000: (0.700, 0.011),
                            4000: (0.699, 0.009), 5000: (0.699, 0.008)},
    ("SCAR", "DETM", 0.3): {1000: (0.302, 0.020), 2000: (0.300, 0.012), 3000: (0.300, 0.010),
                            4000: (0.300, 0.009), 5000: (0.300, 0.008)},
    ("SCAR", "DETM", 0.7): {1000: (0.700, 0.023), 2000: (0.700, 0.015), 3000: (0.700, 0.012),
                            4000: (0.699, 0.010), 5000: (0.699, 0.008)},
    ("SAR", "SETM", 0.3): {1000: (0.001, 0.002), 2000: (0.001, 0.001), 3000: (0.001, 0.001),
                           4000: (0.001, 0.001), 5000: (0.001, 0.001)},
    ("SAR", "SETM", 0.7): {1000: (0.999, 0.002), 2000: (0.999, 0.001), 3000: (1.000, 0.001),
                           4000: (1.000, 0.001), 5000: (1.000, 0.001)},
    ("SAR", "DETM", 0.3): {1000: (0.307, 0.061), 2000: (0.304, 0.036), 3000: (0.304, 0.032),
                           4000: (0.302, 0.027), 5000: (0.302, 0.023)},
    ("SAR", "DETM", 0.7): {1000: (0.669, 0.064), 2000: (0.688, 0.047), 3000: (0.697, 0.040),
                           4000: (0.694, 0.033), 5000: (0.694, 0.029)},
}
# Liu et al., Table 1: rejection rates (%) of the SCAR test at 5%; columns = number of ones in mu3
TABLE1 = {1000: [11.0, 100, 100, 100, 100, 100, 100, 99.8],
          2000: [9.2, 100, 100, 100, 100, 100, 100, 100],
          3000: [7.8, 100, 100, 100, 100, 100, 100, 100],
          4000: [5.4, 100, 100, 100, 100, 100, 100, 100],
          5000: [5.4, 100, 100, 100, 100, 100, 100, 100]}


def _raw(name: str) -> pd.DataFrame:
    """The raw replicates of a study: ``<name>_raw<TAG>.csv`` and the parts of a run split over
    processes, ``<name>_raw<TAG>_<k>.csv`` (``--first``), pooled."""
    files = [f for f in [OUT / f"{name}_raw{TAG}.csv"] if f.exists()]
    files += sorted(OUT.glob(f"{name}_raw{TAG}_*.csv"))
    if not files:
        raise FileNotFoundError(f"no raw results for {name}{TAG}")
    return pd.concat([pd.read_csv(f) for f in files]).drop_duplicates(["n", "rep"])


def _append(path: Path, rows: list[dict]):
    df = pd.DataFrame(rows)
    df.to_csv(path, mode="a", header=not path.exists(), index=False)


def _fit(model, df, label_rule="kl"):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = model.from_formula(FORMULA, data=df).fit(label_rule=label_rule,
                                                        pi_interval="profile")
    return res, [str(x.category.__name__) for x in w]


def table2(reps: int, ns: list[int], designs=("SCAR", "SAR"), pis=(0.3, 0.7)):
    raw = OUT / f"detm_table2_raw{TAG}.csv"
    done = pd.read_csv(raw) if raw.exists() else pd.DataFrame()
    for n in ns:
        for design in designs:
            for pi in pis:
                shift = 0 if design == "SCAR" else 7
                have = 0 if done.empty else int(((done.n == n) & (done.design == design)
                                                 & (done.pi == pi)).sum() // 2)
                for r in range(have, reps):
                    rng = np.random.default_rng([2026, n, shift, int(pi * 10), r])
                    df = scar_design(n, n, pi, n_shift=shift, rng=rng)
                    rows = []
                    for model in (pu.SETM, pu.DETM):
                        t0 = time.perf_counter()
                        res, warns = _fit(model, df)
                        ci_error = ""
                        try:
                            ci = res.conf_int_pi(0.05)
                            lo, hi = ci["lower"], ci["upper"]
                        except ValueError as exc:  # reported, not counted as a miss
                            lo = hi = np.nan
                            ci_error = type(exc).__name__
                        rows.append(dict(n=n, design=design, pi=pi, model=model.__name__, rep=r,
                                         pi_hat=res.pi, se=float(res.bse["pi"]), lower=lo,
                                         upper=hi, covered=bool(lo <= pi <= hi),
                                         ci_error=ci_error,
                                         probes=int((res.starts["start"] == "profile probe").sum()),
                                         converged=res.converged,
                                         ridge_binding=res.ridge_binding,
                                         warnings=";".join(warns),
                                         seconds=time.perf_counter() - t0))
                    _append(raw, rows)
                print(f"table2: n={n} {design} pi={pi} done", flush=True)
    summarise_table2()


def summarise_table2():
    raw = pd.read_csv(OUT / f"detm_table2_raw{TAG}.csv")
    g = raw.groupby(["design", "model", "pi", "n"])
    raw["ci_failed"] = raw["lower"].isna()
    raw["covered_ok"] = raw["covered"].where(~raw["ci_failed"])
    g = raw.groupby(["design", "model", "pi", "n"])
    tab = g.agg(reps=("pi_hat", "size"), mean=("pi_hat", "mean"), sd=("pi_hat", "std"),
                mean_se=("se", "mean"), coverage=("covered_ok", "mean"),
                ci_failed=("ci_failed", "sum"), refits_by_probe=("probes", "sum"),
                sec=("seconds", "mean")).reset_index()
    tab["mc_se_mean"] = tab["sd"] / np.sqrt(tab["reps"])
    tab["paper_mean"] = [TABLE2[(d, m, p)][n][0] for d, m, p, n in
                         zip(tab.design, tab.model, tab.pi, tab.n, strict=True)]
    tab["paper_sd"] = [TABLE2[(d, m, p)][n][1] for d, m, p, n in
                       zip(tab.design, tab.model, tab.pi, tab.n, strict=True)]
    tab["z_vs_paper"] = (tab["mean"] - tab["paper_mean"]) / tab["mc_se_mean"]
    tab["coverage_mc_se"] = np.sqrt(0.95 * 0.05 / tab["reps"])
    tab.to_csv(OUT / f"detm_table2{TAG}.csv", index=False)
    with open(OUT / f"detm_table2{TAG}.md", "w") as f:
        f.write("# DETM/SETM: Liu et al. Table 2 (mean, SD of pi-hat) and Figure 3 (coverage)\n\n")
        f.write("Generated by `python studies/detm_studies.py table2`; default ridge penalty, "
                "KL label rule.\n\n")
        f.write(tab.round(4).to_markdown(index=False))
        f.write("\n")
        if "ridge_binding" in raw:  # runs after ac58c7b record it
            rb = raw.groupby(["design", "model", "pi", "n", "ridge_binding"]).agg(
                reps=("pi_hat", "size"), mean=("pi_hat", "mean"), sd=("pi_hat", "std"),
                median=("pi_hat", "median"), mean_se=("se", "mean"),
                coverage=("covered_ok", "mean")).reset_index()
            f.write("\n## By whether the ridge binds (the unpenalised maximum does not exist)\n\n")
            f.write(rb.round(4).to_markdown(index=False))
            f.write("\n")
            print(rb.round(4).to_string())
    print(tab.round(4).to_string())


def table1(reps_null: int, reps_power: int, ns: list[int]):
    raw = OUT / f"detm_table1_raw{TAG}.csv"
    done = pd.read_csv(raw) if raw.exists() else pd.DataFrame()
    for n in ns:
        for k in range(8):
            reps = reps_null if k == 0 else reps_power
            have = 0 if done.empty else int(((done.n == n) & (done.ones == k)).sum())
            rows = []
            for r in range(have, reps):
                rng = np.random.default_rng([1, n, k, r])
                df = scar_design(n, n, 0.75, n_shift=k, rng=rng)
                t0 = time.perf_counter()
                res, warns = _fit(pu.DETM, df)
                t = res.test_scar()
                rows.append(dict(n=n, ones=k, rep=r, statistic=t.statistic, pvalue=t.pvalue,
                                 pi_hat=res.pi, warnings=";".join(warns),
                                 seconds=time.perf_counter() - t0))
                if len(rows) >= 25:
                    _append(raw, rows)
                    rows = []
            if rows:
                _append(raw, rows)
            print(f"table1: n={n} ones={k} done", flush=True)
    summarise_table1()


def summarise_table1():
    raw = pd.read_csv(OUT / f"detm_table1_raw{TAG}.csv")
    raw["reject"] = raw["pvalue"] < 0.05
    tab = raw.pivot_table(index="n", columns="ones", values="reject", aggfunc="mean") * 100
    reps = raw.pivot_table(index="n", columns="ones", values="reject", aggfunc="size")
    lines = ["# SCAR test: Liu et al. Table 1 (rejection rate %, 5% level, pi = 0.75)\n",
             "Generated by `python studies/detm_studies.py table1`. Each cell: measured "
             "(paper) [replicates].\n",
             "| n | " + " | ".join(str(k) for k in tab.columns) + " |",
             "|---" * (len(tab.columns) + 1) + "|"]
    for n in tab.index:
        cells = [f"{tab.loc[n, k]:.1f} ({TABLE1[n][k]:g}) [{reps.loc[n, k]}]" for k in tab.columns]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    (OUT / f"detm_table1{TAG}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def bootsize(reps: int, n_boot: int, n: int = 1000, first: int = 0):
    raw = OUT / f"detm_bootsize_raw{TAG}.csv"
    done = pd.read_csv(raw) if raw.exists() else pd.DataFrame()
    have = 0 if done.empty else len(done)
    for r in range(first + have, first + reps):
        rng = np.random.default_rng([7, n, r])
        df = scar_design(n, n, 0.75, n_shift=0, rng=rng)
        t0 = time.perf_counter()
        res, _ = _fit(pu.DETM, df)
        ta = res.test_scar()
        tb = res.test_scar("bootstrap", n_boot=n_boot, rng=rng)
        _append(raw, [dict(n=n, rep=r, statistic=ta.statistic, p_asymptotic=ta.pvalue,
                           p_bootstrap=tb.pvalue, bootstrap=tb.method.split(", ")[-1],
                           seconds=time.perf_counter() - t0)])
        if r % 10 == 9:
            print(f"bootsize: {r + 1} of {reps}", flush=True)
    summarise_bootsize()


# the bandwidth of the smoothed runs (the default of test_scar when they ran; not in the rows)
BOOTSIZE_H = {"_v3": "Silverman's h (0.621)", "_v4": "h = 0.4"}


def summarise_bootsize():
    raw = _raw("detm_bootsize")
    R = len(raw)
    levels = (0.01, 0.05, 0.10)
    a = [(raw.p_asymptotic < lv).mean() for lv in levels]
    b = [(raw.p_bootstrap < lv).mean() for lv in levels]
    # runs before the smoothed bootstrap (tag _v2) used the discrete EL bootstrap
    kind = raw["bootstrap"].iloc[0] if "bootstrap" in raw else "EL bootstrap (discrete)"
    if TAG in BOOTSIZE_H:
        kind += f", {BOOTSIZE_H[TAG]}"
    se = np.sqrt(0.05 * 0.95 / R)
    ra, rb = raw.p_asymptotic < 0.05, raw.p_bootstrap < 0.05

    def at5(rej):  # the 5% rejection rate against the nominal level: exact binomial
        t = stats.binomtest(int(rej.sum()), R, 0.05)
        ci = t.proportion_ci(0.95)
        return f"[{ci.low:.3f}, {ci.high:.3f}] | {t.pvalue:.2g}"

    # paired (same data): exact McNemar test on the replicates where the two tests disagree
    only_a, only_b = int((ra & ~rb).sum()), int((rb & ~ra).sum())
    mcnemar = stats.binomtest(only_a, only_a + only_b, 0.5).pvalue if only_a + only_b else 1.0
    text = ("# Size of the SCAR test at n = m = 1000 (SCAR data, pi = 0.75)\n\n"
            "Generated by `python studies/detm_studies.py bootsize`.\n\n"
            "| test | 1% | 5% | 10% | 95% CI at 5% | p (size = 5%) | replicates |\n"
            "|---|---|---|---|---|---|---|\n"
            f"| asymptotic chi2_15 | {a[0]:.3f} | {a[1]:.3f} | {a[2]:.3f} | {at5(ra)} | {R} |\n"
            f"| {kind} | {b[0]:.3f} | {b[1]:.3f} | {b[2]:.3f} | {at5(rb)} | {R} |\n"
            "| paper (asymptotic, Table 1) | | 0.110 | | | | 500 |\n\n"
            f"Monte-Carlo SE of a rate near 0.05: {se:.3f}; mean seconds per replicate "
            f"{raw.seconds.mean():.1f}. CI: Clopper-Pearson; p: exact binomial test of a 5% "
            f"size. At 5%, only the asymptotic test rejects in {only_a} replicates, only the "
            f"bootstrap in {only_b} (exact McNemar p = {mcnemar:.2g}).\n")
    (OUT / f"detm_bootsize{TAG}.md").write_text(text)
    print(text)


def bootwarp(reps: int, n: int = 1000, first: int = 0):
    """Size of the bootstrap SCAR test by the warp-speed method (Giacomini, Politis and White
    2013, Econometric Theory 29: 567-589): one bootstrap resample per Monte-Carlo replicate; the
    bootstrap critical value is the quantile of the pooled R* over replicates. Each resample is
    refitted both ways (``refit="quick"`` and ``"full"``) so the two bootstrap variants are
    compared on the same resamples."""
    raw = OUT / f"detm_bootwarp_raw{TAG}.csv"
    done = pd.read_csv(raw) if raw.exists() else pd.DataFrame()
    have = 0 if done.empty else len(done)
    rows = []
    for r in range(first + have, first + reps):
        rng = np.random.default_rng([11, n, r])
        df = scar_design(n, n, 0.75, n_shift=0, rng=rng)
        t0 = time.perf_counter()
        res, _ = _fit(pu.DETM, df)
        ta = res.test_scar()
        t1 = time.perf_counter()
        world = boot.world(res.model.data, res.null_fit)
        Xs, Xt = boot.sample(res.model.data, world, rng)
        t2 = time.perf_counter()
        r_quick = boot.statistic(res, res.null_fit, Xs, Xt, "quick")
        t3 = time.perf_counter()
        r_full = boot.statistic(res, res.null_fit, Xs, Xt, "full")
        t4 = time.perf_counter()
        rows.append(dict(n=n, rep=r, statistic=ta.statistic, p_asymptotic=ta.pvalue,
                         pi_hat=res.pi, r_quick=r_quick, r_full=r_full, sec_fit=t1 - t0,
                         sec_quick=t3 - t2, sec_full=t4 - t3))
        if len(rows) >= 10:
            _append(raw, rows)
            rows = []
            print(f"bootwarp: replicate {r + 1} (of {first + 1}..{first + reps})", flush=True)
    if rows:
        _append(raw, rows)
    summarise_bootwarp()


def summarise_bootwarp():
    raw = _raw("detm_bootwarp")
    R = len(raw)
    from scipy import stats
    lines = [f"# Size of the SCAR test at n = m = {raw.n.iloc[0]} (SCAR data, pi = 0.75, p = 15)\n",
             "Generated by `python studies/detm_studies.py bootwarp`: bootstrap tests by the "
             "warp-speed method (one resample per replicate, critical value = quantile of the "
             "pooled R*).\n",
             "| test | 1% | 5% | 10% | mean of the reference statistic |",
             "|---|---|---|---|---|"]
    asym = [np.mean(raw.p_asymptotic < a) for a in (0.01, 0.05, 0.10)]
    lines.append("| asymptotic chi2_15 | " + " | ".join(f"{x:.3f}" for x in asym)
                 + f" | 15 (observed R_N: {raw.statistic.mean():.2f}) |")
    for col, name in (("r_quick", "bootstrap, quick refits"), ("r_full", "bootstrap, full refits")):
        rr = [np.mean(raw.statistic > np.quantile(raw[col], 1 - a)) for a in (0.01, 0.05, 0.10)]
        lines.append(f"| {name} | " + " | ".join(f"{x:.3f}" for x in rr)
                     + f" | {raw[col].mean():.2f} |")
    se = np.sqrt(0.05 * 0.95 / R)
    ks = stats.kstest(raw.statistic, stats.chi2(15).cdf)
    lines += ["", f"Replicates: {R}. Monte-Carlo SE of a rate near 0.05: {se:.3f}. "
              f"KS test of R_N against chi2_15: D = {ks.statistic:.3f}, p = {ks.pvalue:.3g}. "
              f"R* quick vs full: mean difference {np.mean(raw.r_quick - raw.r_full):+.3f}, "
              f"differ by > 0.01 in {np.mean(np.abs(raw.r_quick - raw.r_full) > 0.01):.1%} of "
              f"resamples. Seconds per replicate: fit + SETM {raw.sec_fit.mean():.2f}, quick "
              f"R* {raw.sec_quick.mean():.2f}, full R* {raw.sec_full.mean():.2f}.", ""]
    text = "\n".join(lines)
    (OUT / f"detm_bootwarp{TAG}.md").write_text(text)
    print(text)


def gamma_scar_design(n: int, m: int, pi: float, *, p: int = 15, shape: float = 2.0,
                      rate_neg: float = 0.5, rng=None) -> pd.DataFrame:
    """A skewed SCAR design inside DETM (not from the papers): source and target positives
    have independent Gamma(shape, rate 1) coordinates, target negatives Gamma(shape,
    rate_neg), an exponential tilt of the positives with slope ``1 - rate_neg`` in every
    coordinate; ``pi`` of the target rows are positives."""
    rng = np.random.default_rng(rng)
    ys = rng.random(m) < pi
    Xs = rng.gamma(shape, 1.0, size=(n, p))
    Xt = rng.gamma(shape, np.where(ys[:, None], 1.0, 1 / rate_neg), size=(m, p))
    df = pd.DataFrame(np.vstack([Xs, Xt]), columns=[f"x{j + 1}" for j in range(p)])
    df["labeled"] = np.r_[np.ones(n, dtype=int), np.zeros(m, dtype=int)]
    df["y_true"] = np.r_[np.ones(n, dtype=int), ys.astype(int)]
    return df


def _null_sample(design: str, n: int, p: int, seed: list[int]) -> pd.DataFrame:
    """A SCAR sample (pi = 0.75, n = m): Liu et al.'s Gaussian design ("gauss"; seeds as in the
    runs before the design option when p = 15) or the gamma design."""
    if design == "gauss":
        rng = np.random.default_rng(seed if p == 15 else [*seed, p])
        return scar_design(n, n, 0.75, n_shift=0, p=p, rng=rng)
    return gamma_scar_design(n, n, 0.75, p=p, rng=np.random.default_rng([*seed, p, 99]))


def bootsmooth(reps: int, n: int = 1000, first: int = 0, hs=(0.0, 0.25, 0.5),
               design: str = "gauss", p: int = 15):
    """Warp-speed size of the discrete (h = 0) and smoothed (h > 0) EL bootstrap SCAR tests,
    quick refits; the resamples are paired across h (same rows, same normal draws)."""
    raw = OUT / f"detm_bootsmooth_raw{TAG}.csv"
    done = pd.read_csv(raw) if raw.exists() else pd.DataFrame()
    have = 0 if done.empty else len(done)
    formula = "labeled ~ " + " + ".join(f"x{j}" for j in range(1, p + 1))
    rows = []
    for r in range(first + have, first + reps):
        df = _null_sample(design, n, p, [13, n, r])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pu.DETM.from_formula(formula, data=df).fit()
        ta = res.test_scar()
        row = dict(n=n, rep=r, design=design, p=p, statistic=ta.statistic,
                   p_asymptotic=ta.pvalue, pi_hat=res.pi)
        world = boot.world(res.model.data, res.null_fit)
        for h in hs:
            hh = boot.bandwidth(res.model.data, h)
            Xs, Xt = boot.sample(res.model.data, world, np.random.default_rng([14, n, r]),
                                 smooth=hh)
            row[f"r_h{h}" if isinstance(h, str) else f"r_h{h:g}"] = \
                boot.statistic(res, res.null_fit, Xs, Xt, "quick")
        rows.append(row)
        if len(rows) >= 10:
            _append(raw, rows)
            rows = []
            print(f"bootsmooth: replicate {r + 1} (of {first + 1}..{first + reps})", flush=True)
    if rows:
        _append(raw, rows)
    summarise_bootsmooth()


def summarise_bootsmooth(pair_with=()):
    """``pair_with``: tags of runs on the same seeds (``--first``) with other bandwidths;
    their bootstrap columns are joined replicate by replicate (same data, same resamples)."""
    raw = _raw("detm_bootsmooth")
    global TAG
    own = TAG
    for tag in pair_with:
        TAG = tag
        other = _raw("detm_bootsmooth")
        TAG = own
        cols = [c for c in other.columns if c.startswith("r_h") and c not in raw.columns]
        raw = raw.merge(other[["n", "rep", "statistic", *cols]], on=["n", "rep"],
                        suffixes=("", "_other"))
        if not np.allclose(raw.statistic, raw.statistic_other):
            raise ValueError(f"runs {own} and {tag} are not on the same data")
        raw = raw.drop(columns="statistic_other")
    R = len(raw)
    # runs before the design option: Liu et al.'s Gaussian design with p = 15
    p = int(raw.p.iloc[0]) if "p" in raw else 15
    design = raw.design.iloc[0] if "design" in raw else "gauss"
    what = {"gauss": "Liu et al.'s Gaussian SCAR design",
            "gamma": "gamma SCAR design (`gamma_scar_design`)"}[design]
    h_silverman = (4 / (p + 2)) ** (1 / (p + 4)) * (2 * raw.n.iloc[0]) ** (-1 / (p + 4))
    lines = [f"# Discrete and smoothed EL bootstrap for the SCAR test, n = m = {raw.n.iloc[0]}\n",
             f"Generated by `python studies/detm_studies.py bootsmooth` ({what}, pi = 0.75, "
             f"p = {p}; warp-speed method: one resample per replicate, paired across h; quick "
             "refits).\n",
             "| test | 1% | 5% | 10% | mean | 95% quantile |", "|---|---|---|---|---|---|"]
    asym = [np.mean(raw.p_asymptotic < a) for a in (0.01, 0.05, 0.10)]
    lines.append(f"| asymptotic chi2_{p} | " + " | ".join(f"{x:.3f}" for x in asym)
                 + f" | {p} | {stats.chi2.ppf(0.95, p):.3f} |")
    lines.append(f"| (observed R_N) | | | | {raw.statistic.mean():.2f} | "
                 f"{np.quantile(raw.statistic, 0.95):.2f} |")
    for col in [c for c in raw.columns if c.startswith("r_h")]:
        rr = [np.mean(raw.statistic > np.quantile(raw[col].dropna(), 1 - a))
              for a in (0.01, 0.05, 0.10)]
        lines.append(f"| bootstrap, h = {col[3:]} | " + " | ".join(f"{x:.3f}" for x in rr)
                     + f" | {raw[col].mean():.2f} | {np.quantile(raw[col], 0.95):.2f} |")
    lines += ["", f"Replicates: {R}; Monte-Carlo SE of a rate near 0.05: "
              f"{np.sqrt(0.05 * 0.95 / R):.3f}. Silverman's h here: {h_silverman:.3f}.", ""]
    text = "\n".join(lines)
    (OUT / f"detm_bootsmooth{TAG}.md").write_text(text)
    print(text)


# the null replicates of R_N at n = m = 1000 (SCAR design, pi = 0.75) fitted with the final
# fit code (unchanged since 861ad57: table2 _v5 reproduces _v4), and the bootstrap worlds of
# the final smoothed bootstrap (tilt beta / sqrt(1 + h^2), from 8ec22a0)
CALIB_NULL = ["bootwarp_raw_w1", "bootsmooth_raw_s1", "bootsmooth_raw_s2", "bootsmooth_raw_s3",
              "bootsmooth_raw_s4", "bootsmooth_raw_s6", "bootsize_raw_v3"]
CALIB_WORLDS = ["bootsmooth_raw_s4", "bootsmooth_raw_s5", "bootsmooth_raw_s6"]


def bootcalib():
    """Size of the bootstrap test for each bandwidth h, from all null replicates of R_N: the
    probability that R_N exceeds the 1/5/10% critical value of the pooled bootstrap
    distribution (one resample per replicate; the warp-speed estimate, with R_N pooled over
    every study of the same design rather than only the replicates that drew the resamples)."""
    def pooled(stems):
        out = [pd.read_csv(f) for st in stems for f in sorted(OUT.glob(f"detm_{st}_*.csv"))]
        return pd.concat(out)
    null = pooled(CALIB_NULL).drop_duplicates(["n", "rep", "statistic"])
    null = null[null.n == 1000]
    R = null.statistic.to_numpy()
    worlds = pooled(CALIB_WORLDS)
    worlds = worlds[worlds.n == 1000]
    levels = (0.01, 0.05, 0.10)
    lines = ["# Size of the bootstrap SCAR test by bandwidth, n = m = 1000 (SCAR data, pi = 0.75, "
             "p = 15)\n",
             "Generated by `python studies/detm_studies.py bootcalib` from the raw files of "
             f"{', '.join(CALIB_NULL)} (null replicates of R_N) and {', '.join(CALIB_WORLDS)} "
             "(bootstrap resamples of the final smoothed bootstrap).\n",
             f"Null replicates of R_N: {len(R)}; mean {R.mean():.2f} (chi2_15: 15); 90/95/99% "
             f"quantiles {', '.join(f'{q:.2f}' for q in np.quantile(R, [0.9, 0.95, 0.99]))} "
             "(chi2_15: 22.31, 25.00, 30.58).\n",
             "| critical values from | resamples | 1% | 5% | 10% | mean |",
             "|---|---|---|---|---|---|"]
    crit = stats.chi2.ppf([1 - a for a in levels], 15)
    lines.append("| chi2_15 | | " + " | ".join(f"{np.mean(R > c):.3f}" for c in crit) + " | 15 |")
    cols = sorted({c for c in worlds.columns if c.startswith("r_h")},
                  key=lambda c: (c != "r_hsilverman", c))
    for col in cols:
        r = worlds[col].dropna().to_numpy()
        crit = np.quantile(r, [1 - a for a in levels])
        lines.append(f"| bootstrap, h = {col[3:]} | {len(r)} | "
                     + " | ".join(f"{np.mean(R > c):.3f}" for c in crit) + f" | {r.mean():.2f} |")
    se = np.sqrt(0.05 * 0.95 / len(R))
    lines += ["", f"Binomial SE of a rate near 0.05 from the R_N replicates alone: {se:.3f} (the "
              "critical values add their own error: about 0.005-0.01 at 500 resamples).", ""]
    text = "\n".join(lines)
    (OUT / "detm_bootcalib.md").write_text(text)
    print(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("study", choices=["table2", "table1", "bootsize", "bootwarp", "bootsmooth",
                                      "bootcalib", "summarise"])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--reps-null", type=int, default=500)
    ap.add_argument("--reps-power", type=int, default=50)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--n", type=int, nargs="+", default=None)
    ap.add_argument("--tag", default="")
    ap.add_argument("--hs", nargs="+", default=["0", "0.25", "0.5"],
                    help="bootsmooth: bandwidths (numbers or 'silverman')")
    ap.add_argument("--first", type=int, default=0,
                    help="bootwarp: first replicate index (to split a run over processes)")
    ap.add_argument("--design", default="gauss", choices=["gauss", "gamma"],
                    help="bootsmooth: the SCAR design (gamma: gamma_scar_design)")
    ap.add_argument("--p", type=int, default=15, help="bootsmooth: number of features")
    ap.add_argument("--designs", nargs="+", default=["SCAR", "SAR"], choices=["SCAR", "SAR"])
    ap.add_argument("--pis", nargs="+", type=float, default=[0.3, 0.7])
    ap.add_argument("--pair-with", nargs="+", default=[],
                    help="summarise: join bootsmooth runs with these tags on the same seeds")
    a = ap.parse_args()
    global TAG
    TAG = a.tag
    OUT.mkdir(exist_ok=True)
    if a.study == "table2":
        table2(a.reps, a.n or [1000, 3000], a.designs, a.pis)
    elif a.study == "table1":
        table1(a.reps_null, a.reps_power, a.n or [1000, 2000, 3000, 4000, 5000])
    elif a.study == "bootsize":
        bootsize(a.reps, a.n_boot, first=a.first)
    elif a.study == "bootwarp":
        bootwarp(a.reps, (a.n or [1000])[0], a.first)
    elif a.study == "bootcalib":
        bootcalib()
    elif a.study == "bootsmooth":
        hs = [h if h == "silverman" else float(h) for h in a.hs]
        bootsmooth(a.reps, (a.n or [1000])[0], a.first, hs, a.design, a.p)
    else:
        for f in (summarise_table2, summarise_table1, summarise_bootsize, summarise_bootwarp,
                  lambda: summarise_bootsmooth(a.pair_with)):
            try:
                f()
            except (FileNotFoundError, ValueError):  # no raw file for this study
                pass


if __name__ == "__main__":
    main()
