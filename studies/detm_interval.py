"""Issue 19: is the fit's maximum the maximum, and which interval for pi holds 95%?

One loop (``run``) over fresh replicates of a design (``--design``: Liu et al.'s SAR design,
its SCAR design or the Gamma design; p = 15, n = m, pi in {0.3, 0.7}; seeds ``1_000_000 *
cell + replicate``, cell offset by 100 for SCAR and 200 for Gamma, used by no other study)
and a model (``--model`` DETM or SETM) records per replicate:

* the default fit (pi-hat, penalised log-EL, SE, label check, ridge binding, time);
* the best objective reached by polished independent starts, each maximised by the package's
  Newton on the same penalised objective: the design's true parameters, for DETM the SETM fit
  in both labellings, and ``--random`` random starts -- ``beats`` counts a fit that is lower
  by more than 1e-6 (the search missed the global maximum);
* ``R*(pi_true)`` of the default (full) profile -- coverage of the plain profile interval is
  ``R* <= chi2_1(0.95)`` -- and the interval's limits and time;
* for the warp-speed calibration of the cut-off (Giacomini, Politis and White 2013): one
  resample (``--resamples K``: K) from the fitted model's smoothed EL bootstrap world
  (:func:`puinfer.models.detm.bootstrap.detm_world`), refitted, and its ``R*_b(pi-hat)``;
  the warp-speed cut-off of a cell is the 95% quantile of the pooled ``R*_b`` and its coverage
  the share of replicates with ``R*(pi_true)`` below it (``more-resamples`` adds resamples to
  the replicates of a file);
* with ``--ridge-scales``: pi-hat and ``R*(pi_true)`` of fits with the ridge scaled.

Usage (restartable: rows are appended to ``results/detm_interval_raw<tag>.csv`` as they come
and replicates already there are skipped):

    python studies/detm_interval.py run [--design sar|scar|gamma] [--model DETM|SETM] \
        [--pi 0.3 0.7] --reps 400 [--n 1000] [--resamples 10] [--tag _a]
    python studies/detm_interval.py more-resamples --tag _a --design scar --model SETM
    python studies/detm_interval.py summarise [--tag "" _a]   # pools the files of the tags
    python studies/detm_interval.py summarise --tag _a --refit _r  # with refit's fits in
    python studies/detm_interval.py direct [--design sar|scar|gamma] [--model DETM SETM] \
        [--pi 0.3 0.7] --reps 400 [--n-boot 199] [--tag _d]
    python studies/detm_interval.py klse --design gauss2 --reps 400   # the label check's SE
    python studies/detm_interval.py klse --design sar --reps 40
    python studies/detm_interval.py worldbias --design scar --model SETM --pi 0.7 --worlds 3
    python studies/detm_interval.py compare-direct --base _d _e _f_scar --other _h0_sar _h0_scar
    python studies/detm_interval.py empirical --design gamma --model DETM --pi 0.7 --reps 40
    python studies/detm_interval.py summarise-empirical
    python studies/detm_interval.py se-check   # which SE of pi-hat agrees with the interval
    python studies/detm_interval.py refit --files detm_interval_raw_y3000a.csv --out _r
    python studies/detm_interval.py summarise-refit --tag _r   # stored fits vs today's
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.base.optimize import newton_maximize  # noqa: E402
from puinfer.models.detm import _starts  # noqa: E402
from puinfer.models.detm import bootstrap as boot  # noqa: E402
from puinfer.models.detm._el import ridge_strength  # noqa: E402
from puinfer.models.detm._starts import _setm_index, free_fun, pi_of_v, v_from  # noqa: E402
from puinfer.simulate import gamma_design, sar_design, scar_design  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
CUT = float(stats.chi2.ppf(0.95, 1))


def formula(p):
    return "labeled ~ " + " + ".join(f"x{j}" for j in range(1, p + 1))


def true_theta(design, p):
    """The true ``(a1, b1, a2, b2)`` of a design on the original scale: each target component's
    density is the source's tilted by ``exp(a + b'x)``. Normal designs (``sar``, ``scar``):
    target positives N(mu1, I) and negatives N(1, I) against the source N(0, I) give
    ``a = -|mu|^2 / 2``, ``b = mu``. ``gamma``: a Gamma(k, s) coordinate is the Gamma(k, 1)
    source tilted by ``b = 1 - 1/s`` with ``a = -k log s``."""
    k = 7 if p == 15 else int(round(7 * p / 15))
    if design == "gamma":
        shape = 2.0
        s1, s2 = np.r_[np.full(k, 1.25), np.ones(p - k)], np.full(p, 0.6)
        return [(-shape * np.log(s).sum(), 1 - 1 / s) for s in (s1, s2)]
    mu1 = np.r_[np.ones(k if design == "sar" else 0), np.zeros(p - (k if design == "sar" else 0))]
    return [(-mu @ mu / 2, mu) for mu in (mu1, np.ones(p))]


def true_v(data, pi, p, design="sar", restricted=False):
    """The true parameters of ``design`` as a binary-regression start ``v`` (standardised
    scale ``z = (x - mean) / sd``; SETM's free parameters when ``restricted``)."""
    th = []
    for a, b in true_theta(design, p):
        th += [a + b @ data.mean, b * data.sd]
    v = v_from(data, restricted, np.r_[th[0], th[1], th[2], th[3]], pi)
    return v[_setm_index(p)] if restricted else v


def random_starts(data, rng, k):
    """``k`` random starts: pi0 ~ U(0.1, 0.9), slopes ~ N(0, 0.5^2) on the standardised
    scale, intercepts giving each component its share (as the package's grid)."""
    out = []
    Zs = data.Z[: data.n]
    for _ in range(k):
        pi0 = rng.uniform(0.1, 0.9)
        b1, b2 = rng.normal(0, 0.5, data.p), rng.normal(0, 0.5, data.p)
        s1 = np.log(data.m * pi0 / data.n) - np.log(np.mean(np.exp(Zs @ b1)))
        s2 = np.log(data.m * (1 - pi0) / data.n) - np.log(np.mean(np.exp(Zs @ b2)))
        out.append(np.r_[s1, b1, s2, b2])
    return out


def independent(res, data, starts, restricted=False):
    """Best (objective on the llf_penalized scale, pi) over Newton runs from ``starts``."""
    fun, expand = free_fun(data, res.penalty_strength, restricted)
    const = data.n * np.log(data.n) + data.m * np.log(data.m)
    best = (-np.inf, np.nan, "")
    for label, v0 in starts:
        try:
            u, f, _, _, info = newton_maximize(fun, v0, maxiter=200, tol=1e-10)
        except (ValueError, FloatingPointError):
            continue
        if np.isfinite(f) and f - const > best[0]:
            best = (f - const, pi_of_v(data, expand(u)), label)
    return best


def one(pi, n, p, seed, n_random, ridge_scales, h, cuts=(), design="sar", model_name="DETM",
        resamples=1):
    rng = np.random.default_rng(seed)
    df = DESIGNS[design](n, n, pi, p=p, rng=rng)
    row = dict(seed=seed, pi=pi, n=n, p=p, design=design, model=model_name)
    restricted = model_name == "SETM"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(pu, model_name).from_formula(formula(p), data=df)
        t0 = time.perf_counter()
        res = model.fit(pi_interval="profile")
        row["t_fit"] = time.perf_counter() - t0
        data = model.data
        lc = res.label_check  # None for SETM (no labelling to choose)
        row.update(pi_hat=res.pi, f_fit=res.llf_penalized, se=float(res.bse["pi"]),
                   near_tie=lc.near_tie if lc else False, label_p=lc.pvalue if lc else np.nan,
                   kl_diff=lc.difference if lc else np.nan, kl_se=lc.se if lc else np.nan,
                   ridge_binding=res.ridge_binding,
                   refits_by_probe=int((res.starts["start"] == "profile probe").sum()))
        # polished independent starts
        t0 = time.perf_counter()
        starts = [("truth", true_v(data, pi, p, design, restricted))]
        rand = random_starts(data, rng, n_random)
        if restricted:  # SETM's free parameters (s1, s2, b2)
            starts += [(f"random {k}", v[_setm_index(p)]) for k, v in enumerate(rand)]
        else:
            setm = model.restricted_model().fit()
            sv = np.asarray(setm._fit.v)
            mirror = np.r_[sv[p + 1:], sv[: p + 1]]
            starts += [("SETM", sv), ("SETM mirrored", mirror)]
            starts += [(f"random {k}", v) for k, v in enumerate(rand)]
        f_ind, pi_ind, lab = independent(res, data, starts, restricted)
        row.update(f_indep=f_ind, pi_indep=pi_ind, indep_label=lab,
                   beats=bool(f_ind > res.llf_penalized + 1e-6),
                   t_indep=time.perf_counter() - t0)
        # the plain profile interval and R*(pi_true)
        t0 = time.perf_counter()
        try:
            ci = res.conf_int_pi()
            prof = res.profile_pi()
            row.update(lower=ci["lower"], upper=ci["upper"], r_true=prof.statistic(pi))
            for cut in cuts:  # the interval's limits at larger cut-offs (for widths)
                lo, lo_b = prof._limit(-1, cut)
                hi, hi_b = prof._limit(+1, cut)
                row.update({f"lower_{cut:g}": 0.0 if lo_b else lo,
                            f"upper_{cut:g}": 1.0 if hi_b else hi})
        except ValueError as exc:
            row.update(ci_error=str(exc)[:80])
        row["t_ci"] = time.perf_counter() - t0
        # resamples of the fitted model's smoothed EL bootstrap world: R*_b(pi-hat)
        t0 = time.perf_counter()
        row.update(_resamples(res, resamples, rng, h))
        row["t_boot"] = time.perf_counter() - t0
        for s in ridge_scales:
            t0 = time.perf_counter()
            r2 = model.fit(penalty=s * res.penalty_strength, pi_interval="profile")
            try:
                r_s = r2.profile_pi().statistic(pi)
            except ValueError:
                r_s = np.nan
            row.update({f"pi_hat_x{s:g}": r2.pi, f"r_true_x{s:g}": r_s,
                        f"se_x{s:g}": float(r2.bse["pi"]),
                        f"t_x{s:g}": time.perf_counter() - t0})
    return row


def _resamples(res, k, rng, h) -> dict:
    """``k`` resamples of the fitted model's world: the first's ``R*_b(pi-hat)`` and pi-hat_b
    as ``rstar_b``, ``pi_b``; with ``k > 1`` all of them, ';'-joined, as ``rstar_b_all``,
    ``pi_b_all`` (the first resample is the same draw whatever ``k``)."""
    try:
        out = boot.interval_replicate(res, k, rng, smooth=h)
    except ValueError:
        out = np.full((k, 2), np.nan)
    row = {"rstar_b": out[0, 0], "pi_b": out[0, 1]}
    if k > 1:
        row.update(rstar_b_all=";".join(f"{v:.12g}" for v in out[:, 0]),
                   pi_b_all=";".join(f"{v:.12g}" for v in out[:, 1]))
    return row


#: seed blocks per design (``_seed``, ``direct_seed``): SAR keeps the first runs' seeds
SEED_OFFSET = {"sar": 0, "scar": 100, "gamma": 200}


def _seed(design, pi, n, r) -> int:
    """Seed of replicate ``r`` of a ``run`` cell."""
    return 1_000_000 * ({0.3: 1, 0.7: 2}[pi] + 10 * (n // 1000) + SEED_OFFSET[design]) + r


def run(args):
    path = OUT / f"detm_interval_raw{args.tag}.csv"
    done = set()
    if path.exists():
        old = _with_design(pd.read_csv(path))
        done = set(zip(old["design"], old["model"], old["pi"].round(6), old["n"], old["seed"],
                       strict=True))
    smooth = args.smooth if args.smooth == "silverman" else float(args.smooth)
    h = boot.bandwidth_for(2 * args.n, args.p, smooth)
    jobs = [(r, pi) for r in range(args.first, args.first + args.reps) for pi in args.pi]
    for r, pi in jobs:  # interleaved: the cells grow together
        seed = _seed(args.design, pi, args.n, r)
        if (args.design, args.model, round(pi, 6), args.n, seed) in done:
            continue
        row = one(pi, args.n, args.p, seed, args.random, args.ridge_scales, h, args.cuts,
                  args.design, args.model, args.resamples)
        row["h"] = h
        out = pd.DataFrame([row])
        cols = pd.read_csv(path, nrows=0).columns if path.exists() else out.columns
        if out.columns.difference(cols).empty:
            out.reindex(columns=cols).to_csv(path, mode="a", header=not path.exists(),
                                             index=False)
        else:  # new columns (e.g. --resamples > 1 on a file of single resamples): rewrite
            pd.concat([pd.read_csv(path), out], ignore_index=True).to_csv(path, index=False)
        print(f"{pi} {r}: pi-hat {row['pi_hat']:.3f} R*(true) {row.get('r_true', np.nan):.2f} "
              f"R*_b {row['rstar_b']:.2f} beats {row['beats']} "
              f"t {row['t_fit']:.1f}+{row['t_indep']:.1f}+{row['t_ci']:.1f}+{row['t_boot']:.1f}",
              flush=True)


def more_resamples(args):
    """More resamples for the replicates of a ``run`` file (``--tag``) that have one: each
    replicate is regenerated and refitted from its seed exactly as ``run`` did it (the same
    draws of the random starts precede the resamples), and ``--resamples`` resamples drawn;
    the first must equal the file's ``rstar_b`` (checked). Rows (design, model, pi, n, seed,
    ``rstar_b_all``, ``pi_b_all``) go to ``detm_interval_raw<tag>_more.csv``, which
    ``summarise`` pools with the file."""
    src = _with_design(pd.read_csv(OUT / f"detm_interval_raw{args.tag}.csv"))
    path = OUT / f"detm_interval_raw{args.tag}_more.csv"
    done = set()
    if path.exists():
        old = pd.read_csv(path)
        done = set(zip(old["design"], old["model"], old["pi"].round(6), old["n"], old["seed"],
                       strict=True))
    src = src[(src["design"] == args.design) & (src["model"] == args.model)]
    src = src.sort_values(["seed", "pi"]).iloc[args.first:args.first + args.reps]
    for row0 in src.itertuples():
        key = (row0.design, row0.model, round(row0.pi, 6), row0.n, row0.seed)
        if key in done:
            continue
        rng = np.random.default_rng(row0.seed)
        df = DESIGNS[row0.design](row0.n, row0.n, row0.pi, p=row0.p, rng=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = getattr(pu, row0.model).from_formula(formula(row0.p), data=df)
            res = model.fit(pi_interval="profile")
            random_starts(model.data, rng, args.random)  # run's draws before the resamples
            t0 = time.perf_counter()
            out = _resamples(res, args.resamples, rng, row0.h)
        first = out["rstar_b"]
        if not (np.isnan(first) and np.isnan(row0.rstar_b)) and \
                not np.isclose(first, row0.rstar_b, rtol=1e-6, atol=1e-8):
            raise RuntimeError(f"seed {row0.seed}: first resample R*_b {first} differs from "
                               f"the file's {row0.rstar_b} (code or data changed)")
        row = dict(design=row0.design, model=row0.model, pi=row0.pi, n=row0.n, seed=row0.seed,
                   rstar_b_all=out.get("rstar_b_all", f"{first:.12g}"),
                   pi_b_all=out.get("pi_b_all", f"{out['pi_b']:.12g}"),
                   t_boot=time.perf_counter() - t0)
        pd.DataFrame([row]).to_csv(path, mode="a", header=not path.exists(), index=False)
        print(f"{row0.pi} {row0.seed}: R*_b {first:.3f} (file {row0.rstar_b:.3f}), "
              f"{args.resamples} resamples {row['t_boot']:.1f} s", flush=True)


def _pooled(g, col) -> tuple[np.ndarray, np.ndarray]:
    """Every resample's value of ``col`` (``rstar_b`` or ``pi_b``) in the rows ``g`` -- the
    ';'-joined ``<col>_all`` where present, else the single ``col`` -- and the pi-hat of the
    replicate each comes from (finite values only)."""
    vals, owner = [], []
    for ph, v, allv in zip(g["pi_hat"], g[col],
                           g.get(f"{col}_all", pd.Series(np.nan, index=g.index)), strict=True):
        xs = [float(x) for x in allv.split(";")] if isinstance(allv, str) else [v]
        vals.extend(xs)
        owner.extend([ph] * len(xs))
    a, o = np.asarray(vals, dtype=float), np.asarray(owner, dtype=float)
    return a[np.isfinite(a)], o[np.isfinite(a)]


def _with_design(f: pd.DataFrame) -> pd.DataFrame:
    """Rows of the first runs (no ``design``/``model`` columns) are the SAR design's, DETM."""
    if "design" not in f:
        f = f.assign(design="sar", model="DETM")
    return f.fillna({"design": "sar", "model": "DETM"})


def klse(args):
    """The sandwich SE of KL2 - KL1 (the label check) against the Monte-Carlo SD.

    ``--design gauss2``: source N(0, I2), target 0.5 N((1, 0), I) + 0.5 N((0, 2), I), n = m =
    500 (true difference 1.5; KL rule), seeds 1000 + r. ``--design sar``: Liu et al.'s SAR
    design, p = 15, n = m = 1000, pi = 0.3 with the paper's labelling (``"pi<0.5"``; true
    difference 4), ``probe=False``, seeds 5000 + r."""
    from puinfer.simulate.detm import pu_normal

    out = []
    for r in range(args.reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if args.design == "gauss2":
                df = pu_normal(500, 500, 0.5, [0, 0], [1, 0], [0, 2],
                               rng=np.random.default_rng(1000 + r))
                res = pu.DETM.from_formula("labeled ~ x1 + x2", data=df).fit(probe=False)
            else:
                df = sar_design(1000, 1000, 0.3, rng=np.random.default_rng(5000 + r))
                res = pu.DETM.from_formula(formula(15), data=df).fit(probe=False,
                                                                     label_rule="pi<0.5")
        kl = res.kl_divergences
        from puinfer.models.detm._label import kl_difference_se
        out.append((kl[1] - kl[0], kl_difference_se(res.model.data, np.asarray(res._fit.v),
                                                     res.penalty_strength)))
    o = np.array(out)
    print(f"{args.design}: {len(o)} replicates; KL2 - KL1 mean {o[:, 0].mean():.4g}, SD "
          f"{o[:, 0].std(ddof=1):.4g}; sandwich SE mean {np.nanmean(o[:, 1]):.4g}, median "
          f"{np.nanmedian(o[:, 1]):.4g}")


DESIGNS = {"sar": sar_design, "scar": lambda n, m, pi, p, rng: scar_design(n, m, pi, p=p, rng=rng),
           "gamma": gamma_design}


def direct(args):
    """The bootstrap-calibrated interval itself on each replicate (``n_boot`` resamples):
    coverage, width, bootstrap SE and time, beside the plain profile interval. ``--design``:
    Liu et al.'s SAR design (default), its SCAR design (Table 1 with no shifted coordinate)
    or the Gamma design (:func:`puinfer.simulate.gamma_design`, SAR); ``--model``: DETM
    and/or SETM (SETM is correctly specified only under SCAR); ``--smooth``: the bootstrap's
    bandwidth (the same seeds as the default's runs: paired comparisons)."""
    if args.smooth != "silverman":
        args.smooth = float(args.smooth)
    path = OUT / f"detm_interval_direct_raw{args.tag}.csv"
    done = set()
    if path.exists():
        old = pd.read_csv(path)
        if "design" not in old:
            old["design"], old["model"] = "sar", "DETM"
        done = set(zip(old["design"], old["model"], old["pi"].round(6), old["n"], old["seed"],
                       strict=True))
    for r, pi in [(r, pi) for r in range(args.first, args.first + args.reps) for pi in args.pi]:
        seed = direct_seed(args.design, pi, args.n, r)
        df = None
        for name in args.model:
            if (args.design, name, round(pi, 6), args.n, seed) in done:
                continue
            if df is None:
                df = DESIGNS[args.design](args.n, args.n, pi, p=args.p,
                                          rng=np.random.default_rng(seed))
            row = dict(design=args.design, model=name, seed=seed, pi=pi, n=args.n, p=args.p,
                       n_boot=args.n_boot, penalty=args.penalty, smooth=args.smooth)
            row.update(direct_one(getattr(pu, name), df, args, seed))
            out = pd.DataFrame([row])
            if path.exists():
                out = out.reindex(columns=pd.read_csv(path, nrows=0).columns)
            out.to_csv(path, mode="a", header=not path.exists(), index=False)
            print(row, flush=True)


def direct_seed(design: str, pi: float, n: int, r: int) -> int:
    """Seed of replicate ``r`` of a direct cell: a block used by no other run (cell + 50 *
    10^6; + 10^8 per design)."""
    return 1_000_000 * ({0.3: 1, 0.7: 2}[pi] + 10 * (n // 1000) + 50 + SEED_OFFSET[design]) + r


EMPIRICAL_COLS = ["design", "model", "seed", "pi", "n", "p", "n_boot", "pi_hat", "se", "r_true",
                  "emp_sd", "emp_cutoff", "emp_mean"]


def empirical(args):
    """Exploratory: the plain nonparametric bootstrap as the calibration world (source and
    target rows resampled with replacement, each resample refitted and profiled at pi-hat, the
    pseudo-true pi of the empirical world, as the default's refit does), on the replicates
    (seeds) of ``direct``: ``emp_sd`` the SD of the resamples' pi-hat, ``emp_cutoff`` the
    95% quantile of ``R*_b(pi-hat)`` (``numpy.nanquantile``), ``r_true`` = ``R*(pi_true)``
    (covered iff ``r_true <= emp_cutoff``). ``summarise-empirical`` pairs them with the
    default's rows of the direct files."""
    path = OUT / "detm_interval_empirical_raw.csv"
    done = set()
    if path.exists():
        old = pd.read_csv(path)
        done = set(zip(old["design"], old["model"], old["pi"].round(6), old["n"], old["seed"],
                       strict=True))
    for r in range(args.first, args.first + args.reps):
        seed = direct_seed(args.design, args.pi, args.n, r)
        if (args.design, args.model, round(args.pi, 6), args.n, seed) in done:
            continue
        df = DESIGNS[args.design](args.n, args.n, args.pi, p=args.p,
                                  rng=np.random.default_rng(seed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = getattr(pu, args.model).from_formula(formula(args.p), data=df).fit(
                pi_interval="profile")
            r_true = float(res.test_pi(args.pi).statistic)
            d = res.model.data
            rng = np.random.default_rng(seed + 11)
            draws = []
            for _ in range(args.n_boot):
                Xs = d.X[:d.n][rng.integers(0, d.n, d.n)]
                Xt = d.X[d.n:][rng.integers(0, d.m, d.m)]
                try:
                    draws.append(boot._interval_statistic(res._fit, d.names, Xs, Xt,
                                                          float(res.pi)))
                except ValueError:  # a resample with a constant column
                    pass
        st = np.asarray(draws)
        row = dict(design=args.design, model=args.model, seed=seed, pi=args.pi, n=args.n,
                   p=args.p, n_boot=args.n_boot, pi_hat=res.pi, se=float(res.bse["pi"]),
                   r_true=r_true, emp_sd=np.nanstd(st[:, 1], ddof=1),
                   emp_cutoff=np.nanquantile(st[:, 0], 0.95), emp_mean=np.nanmean(st[:, 1]))
        pd.DataFrame([row])[EMPIRICAL_COLS].to_csv(path, mode="a", header=not path.exists(),
                                                   index=False)
        print(row, flush=True)


def summarise_empirical(args):
    """The empirical bootstrap's cells beside the default (smoothed model world) and the plain
    profile interval on the same replicates."""
    emp = pd.read_csv(OUT / "detm_interval_empirical_raw.csv")
    frames = [pd.read_csv(OUT / f"detm_interval_direct_raw{t}.csv") for t in args.tag]
    ref = pd.concat(frames, ignore_index=True)
    ref["design"], ref["model"] = ref["design"].fillna("sar"), ref["model"].fillna("DETM")
    ref = ref.drop_duplicates(["design", "model", "pi", "n", "seed"])
    m = emp.merge(ref[["design", "model", "pi", "n", "seed", "lower_bootstrap",
                       "upper_bootstrap", "cutoff_bootstrap", "boot_se"]],
                  on=["design", "model", "pi", "n", "seed"])
    rows = []
    for (design, model, pi, n), g in m.groupby(["design", "model", "pi", "n"]):
        rows.append({"design": design, "model": model, "pi": pi, "n": n, "reps": len(g),
                     "pi-hat SD": g.pi_hat.std(), "SE (obs. info) mean": g.se.mean(),
                     "default: coverage": ((g.lower_bootstrap <= pi)
                                           & (g.upper_bootstrap >= pi)).mean(),
                     "default: cut-off mean": g.cutoff_bootstrap.mean(),
                     "default: bootstrap SD mean": g.boot_se.mean(),
                     "empirical: coverage": (g.r_true <= g.emp_cutoff).mean(),
                     "empirical: cut-off mean": g.emp_cutoff.mean(),
                     "empirical: bootstrap SD mean": g.emp_sd.mean(),
                     "profile: coverage": (g.r_true <= stats.chi2.ppf(0.95, 1)).mean()})
    print(pd.DataFrame(rows).set_index(["design", "model", "pi", "n"]).T
          .to_markdown(floatfmt=".4g"))


def direct_one(cls, df, args, seed):
    """Fit ``cls`` (DETM or SETM) to ``df``; both intervals, the SEs and the CPU times."""
    row = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        pen = args.penalty if args.penalty in ("ridge", "none") else float(args.penalty)
        res = cls.from_formula(formula(args.p), data=df).fit(penalty=pen, pi_interval="profile")
        row.update(pi_hat=res.pi, se=float(res.bse["pi"]), t_fit=time.process_time() - t0,
                   c=res.penalty_strength)
        for method in ("profile", "bootstrap"):
            t0 = time.process_time()
            try:
                ci = res.conf_int_pi(method=method, n_boot=args.n_boot,
                                     rng=np.random.default_rng(seed + 7), smooth=args.smooth)
                row.update({f"lower_{method}": ci["lower"], f"upper_{method}": ci["upper"],
                            f"cutoff_{method}": ci.attrs["cutoff"]})
                if method == "bootstrap":
                    row["boot_se"] = ci.attrs["bootstrap_se"]
            except ValueError as exc:
                row[f"error_{method}"] = str(exc)[:80]
            row[f"t_{method}"] = time.process_time() - t0
        if getattr(args, "check_limits", False):
            row.update(_limit_checks(res, row))
    return row


def _limit_checks(res, row) -> dict:
    """R* at each limit of both intervals (the search's own value) and 1e-3 inside and
    outside it (evaluated afresh, with every solution the searches found), after both
    intervals (so the checks cannot change them): a limit is a crossing of the cut-off when
    R* is at the cut-off there, below it inside and above it outside."""
    prof, out = res.profile_pi(), {}
    for method in ("profile", "bootstrap"):
        if f"cutoff_{method}" not in row:
            continue
        for side, sign in (("lower", -1), ("upper", +1)):
            for tag, d in (("in", -1e-3), ("at", 0.0), ("out", 1e-3)):
                try:
                    r = prof.statistic(row[f"{side}_{method}"] + sign * d)
                except ValueError:  # beyond the bounds, or not computable (ProfileError)
                    r = np.nan
                out[f"rstar_{side}_{method}_{tag}"] = r
    return out


#: Liu et al., Table 2: mean (SD) of pi-hat over 500 replicates, by (design, model, pi, n)
PAPER_TABLE2 = {
    ("scar", "SETM", 0.3, 1000): (0.301, 0.018), ("scar", "SETM", 0.7, 1000): (0.702, 0.020),
    ("scar", "DETM", 0.3, 1000): (0.302, 0.020), ("scar", "DETM", 0.7, 1000): (0.700, 0.023),
    ("sar", "DETM", 0.3, 1000): (0.307, 0.061), ("sar", "DETM", 0.7, 1000): (0.669, 0.064),
    ("scar", "SETM", 0.3, 2000): (0.300, 0.012), ("scar", "SETM", 0.7, 2000): (0.699, 0.014),
    ("scar", "DETM", 0.3, 2000): (0.300, 0.012), ("scar", "DETM", 0.7, 2000): (0.700, 0.015),
    ("sar", "DETM", 0.3, 2000): (0.304, 0.036), ("sar", "DETM", 0.7, 2000): (0.688, 0.047),
    ("scar", "SETM", 0.3, 3000): (0.300, 0.009), ("scar", "SETM", 0.7, 3000): (0.700, 0.011),
    ("scar", "DETM", 0.3, 3000): (0.300, 0.010), ("scar", "DETM", 0.7, 3000): (0.700, 0.012),
    ("sar", "DETM", 0.3, 3000): (0.304, 0.032), ("sar", "DETM", 0.7, 3000): (0.697, 0.040),
}


def _paper(design, model, pi, n) -> dict:
    """Liu et al.'s Table 2 entry of a cell as two table rows (NaN where the paper has none,
    e.g. the Gamma design)."""
    v = PAPER_TABLE2.get((design, model, round(float(pi), 6), int(n)), (np.nan, np.nan))
    return {"paper (Table 2): pi-hat mean": v[0], "paper: pi-hat SD": v[1]}


def summarise(args):
    frames = []
    for t in args.tag:
        f = _with_design(pd.read_csv(OUT / f"detm_interval_raw{t}.csv"))
        f["file"] = t or "(none)"
        more = OUT / f"detm_interval_raw{t}_more.csv"
        if more.exists():  # more resamples of the same replicates (more_resamples)
            keys = ["design", "model", "pi", "n", "seed"]
            m = pd.read_csv(more)[keys + ["rstar_b_all", "pi_b_all"]]
            f = f.merge(m, on=keys, how="left", suffixes=("", "_more"))
            for c in ("rstar_b_all", "pi_b_all"):  # the file's own where it has them
                if f"{c}_more" in f:  # (no suffix when the file has no such column)
                    f[c] = f[c].combine_first(f.pop(f"{c}_more"))
        frames.append(f)
    df = pd.concat(frames, ignore_index=True).drop_duplicates(
        ["design", "model", "pi", "n", "seed"])
    if args.refit:
        df = _apply_refit(df, args.refit)
    df["ci_failed"] = df["r_true"].isna()
    rows = []
    for (design, model, pi, n), g in df.groupby(["design", "model", "pi", "n"]):
        k = len(g)
        rb = _pooled(g, "rstar_b")[0]
        cut_w = float(np.quantile(rb, 0.95)) if len(rb) else np.nan
        cov = float(np.mean(g["r_true"] <= CUT))
        cov_w = float(np.mean(g["r_true"] <= cut_w))
        row = {"design": design, "model": model, "pi": pi, "n = m": n, "reps": k,
               "misses (indep. start higher)": int(g["beats"].sum()),
               "CI failed (ProfileError)": int(g["ci_failed"].sum()),
               "pi-hat mean": g["pi_hat"].mean(), "pi-hat SD": g["pi_hat"].std(ddof=1),
               **_paper(design, model, pi, n),
               "SE (obs. info) mean": g["se"].mean(),
               "profile cov.": cov, "MC SE": np.sqrt(cov * (1 - cov) / k),
               "profile width": (g["upper"] - g["lower"]).mean(),
               "warp cut-off": cut_w, "resamples": len(rb),
               "warp cov.": cov_w, "MC SE ": np.sqrt(cov_w * (1 - cov_w) / k),
               "warp width (interpolated)": _width_at(g, cut_w)}
        if "pi_b" in g:
            pb, ph = _pooled(g, "pi_b")
            e = pb - ph
            row["warp boot. SE (SD of pi_b - pi-hat)"] = e.std(ddof=1)
            row["(its resamples)"] = len(e)
            # the estimator's bias in the bootstrap worlds beside its bias in the design: a
            # world bias the design does not have inflates R*_b(pi-hat) and the cut-off
            row["world bias (mean pi_b - pi-hat)"] = e.mean()
            row["design bias (mean pi-hat - pi)"] = g["pi_hat"].mean() - pi
        if args.refit:  # the decisions today's fit changes, at this cell's cut-offs
            old = g["r_true_stored"]
            refitted = g["refitted"]
            row["refitted (pi-hat changed)"] = (f"{int(refitted.sum())} "
                                                f"({int(g['refit_changed'].sum())})")
            for name, cut in (("warp", cut_w), ("plain", CUT)):
                a, b = g["r_true"] <= cut, old <= cut
                row[f"{name} covers today only / stored only"] = (
                    f"{int((a & ~b).sum())} / {int((b & ~a).sum())}")
        for cut in (6.63, 9.0, 14.0):
            c = f"lower_{cut:g}"
            row[f"cov. at cut {cut:g}"] = float(np.mean(g["r_true"] <= cut))
            if c in g:
                w = (g[f"upper_{cut:g}"] - g[c]).dropna()
                row[f"width at cut {cut:g}"] = w.mean() if len(w) else np.nan
                row["(reps with widths at these cuts)"] = len(w)
        row.update({"label near-tie (KL rule)": int(g["near_tie"].sum()),
                    "time fit (s)": g["t_fit"].mean(), "time profile CI (s)": g["t_ci"].mean(),
                    "time 1 resample (s)": g["t_boot"].mean()})
        for c in g.columns:
            if c.startswith("r_true_x"):
                sc = c[len("r_true_x"):]
                row[f"cov. ridge x{sc}"] = float(np.mean(g[c] <= CUT))
                row[f"pi-hat SD ridge x{sc}"] = g[f"pi_hat_x{sc}"].std(ddof=1)
        rows.append(row)
    out = pd.DataFrame(rows).set_index(["design", "model", "pi", "n = m"]).T
    # (string rows make the transposed columns objects, which floatfmt does not format)
    text = out.map(lambda v: f"{v:.4g}" if isinstance(v, float) else v).to_markdown()
    by_file = df.groupby(["file", "design", "model", "pi"]).agg(
        reps=("seed", "size"), misses=("beats", "sum"), ci_failed=("ci_failed", "sum"))
    text += "\n\nSearch misses by file (code version, see README_detm.md):\n\n" + \
        by_file.to_markdown()
    print(text)
    if "kl_diff" in df:
        kd = df.dropna(subset=["kl_diff"])
        print(f"\nKL rule, KL2 - KL1: {len(kd)} replicates; SD {kd['kl_diff'].std(ddof=1):.3g}, "
              f"mean sandwich SE {kd['kl_se'].mean():.3g}")
    if args.write is not None:
        files = ", ".join(f"`detm_interval_raw{t}.csv`" for t in args.tag)
        refit = (f" --refit {' '.join(args.refit)}" if args.refit else "")
        (OUT / f"detm_interval{args.write}.md").write_text(
            "# DETM/SETM: the search for the maximum and the interval for pi (issue 19)\n\n"
            f"`python studies/detm_interval.py summarise --tag {' '.join(args.tag)}{refit} "
            f"--write {args.write}` over {files}. See `README_detm.md` for the commands, "
            "commits and the reading.\n\n" + text + "\n")
    return out


def _width_at(g: pd.DataFrame, cut: float) -> float:
    """Mean width of the replicates' profile intervals at the cut-off ``cut``, interpolated
    per replicate linearly in sqrt(cut-off) between the widths recorded at 3.84 (the plain
    interval) and at ``run``'s ``--cuts`` (exact where the profile is quadratic in pi; a
    cut-off below 3.84 gets the plain width; NaN where a replicate lacks them)."""
    cuts = [c for c in (6.63, 9.0, 14.0) if f"lower_{c:g}" in g]
    if not cuts:
        return np.nan
    w = np.column_stack([g["upper"] - g["lower"]]
                        + [g[f"upper_{c:g}"] - g[f"lower_{c:g}"] for c in cuts])
    x = np.sqrt([CUT, *cuts])
    w = np.array([np.interp(np.sqrt(cut), x, r) for r in w])  # NaN rows stay NaN
    return float(np.nanmean(w)) if np.isfinite(w).any() else np.nan


def _apply_refit(df: pd.DataFrame, tags) -> pd.DataFrame:
    """``df`` with pi-hat and ``R*(pi_true)`` of the replicates ``refit`` reran (its rows
    ``detm_refit_raw<tag>.csv``) replaced by today's; the stored values are kept as
    ``pi_hat_stored``, ``r_true_stored``. The refitted replicates' resamples (``R*_b``) and
    interval limits stay the stored fits'."""
    new = pd.concat([pd.read_csv(OUT / f"detm_refit_raw{t}.csv") for t in tags],
                    ignore_index=True).drop_duplicates(REFIT_KEY)
    m = df.merge(new[REFIT_KEY + ["pi_hat", "r_true"]], on=REFIT_KEY, how="left",
                 suffixes=("", "_today"), indicator=True)
    m["refitted"] = m.pop("_merge") == "both"
    m["pi_hat_stored"], m["r_true_stored"] = m["pi_hat"], m["r_true"]
    m["refit_changed"] = m["refitted"] & ~((m["pi_hat_today"] - m["pi_hat"]).abs() <= 1e-8)
    for c in ("pi_hat", "r_true"):
        m[c] = m[c].where(~m["refitted"], m.pop(f"{c}_today"))
    return m


def _load_direct(tags) -> pd.DataFrame:
    """The rows of the direct runs of ``tags``, pooled (one row per design, model, pi, n,
    seed)."""
    frames = []
    for t in tags:
        f = pd.read_csv(OUT / f"detm_interval_direct_raw{t}.csv")
        if "design" not in f:  # the first runs: SAR design, DETM
            f["design"], f["model"] = "sar", "DETM"
        frames.append(f)
    return pd.concat(frames, ignore_index=True).drop_duplicates(
        ["design", "model", "pi", "n", "seed"])


def _print_cells(rows) -> str:
    """The per-cell rows as a markdown table (cells as columns), printed and returned."""
    text = pd.DataFrame(rows).set_index(["design", "model", "pi", "n = m"]).T.to_markdown(
        floatfmt=".4g")
    print(text)
    return text


def _apply_recheck(df: pd.DataFrame, recheck, refit) -> pd.DataFrame:
    """``df`` (direct rows) with the fit and both intervals of the replicates
    ``recheck-direct`` reran (``detm_interval_recheck_raw<tag>.csv`` for ``recheck``) replaced
    by today's, and the replicates whose fit ``refit`` changed (``detm_refit_raw<tag>.csv``
    for ``refit``, pi-hat by more than 1e-8) flagged. Adds ``rechecked``, ``refit_changed``,
    ``covers_stored`` (the stored default interval's decision) and ``covers`` (the one used)."""
    cols = ["pi_hat", "se", "boot_se", "cutoff_bootstrap"] + [
        f"{e}_{m}" for m in ("bootstrap", "profile") for e in ("lower", "upper")]
    key = REFIT_KEY
    new = pd.concat([pd.read_csv(OUT / f"detm_interval_recheck_raw{t}.csv") for t in recheck],
                    ignore_index=True).drop_duplicates(key) if recheck else pd.DataFrame(
                        columns=key + cols)
    m = df.merge(new[key + cols], on=key, how="left", suffixes=("", "_today"),
                 indicator=True)
    m["rechecked"] = m.pop("_merge") == "both"
    m["covers_stored"] = (m["lower_bootstrap"] <= m["pi"]) & (m["pi"] <= m["upper_bootstrap"])
    for c in cols:
        m[c] = m[c].where(~m["rechecked"], m.pop(f"{c}_today"))
    m["covers"] = (m["lower_bootstrap"] <= m["pi"]) & (m["pi"] <= m["upper_bootstrap"])
    m["refit_changed"] = False
    if refit:
        f = pd.concat([pd.read_csv(OUT / f"detm_refit_raw{t}.csv") for t in refit],
                      ignore_index=True).drop_duplicates(key)
        f = f.loc[~((f["pi_hat"] - f["pi_hat_old"]).abs() <= 1e-8), key].assign(_c=True)
        m = m.merge(f, on=key, how="left")
        m["refit_changed"] = m.pop("_c").eq(True)
    return m


def summarise_direct(args):
    """Coverage, width and time of the plain and the bootstrap-calibrated interval; with
    ``--recheck`` / ``--refit``, today's rechecked replicates in place of the stored ones
    (``_apply_recheck``) and the decisions that differ."""
    df = _load_direct(args.tag)
    if args.recheck or args.refit:
        df = _apply_recheck(df[df["n"] == 1000], args.recheck, args.refit)
    rows = []
    for (design, model, pi, n), g in df.groupby(["design", "model", "pi", "n"]):
        row = {"design": design, "model": model, "pi": pi, "n = m": n, "reps": len(g),
               "pi-hat mean": g["pi_hat"].mean(), "pi-hat SD": g["pi_hat"].std(ddof=1),
               **_paper(design, model, pi, n),
               "SE (obs. info) mean": g["se"].mean(), "bootstrap SE mean": g["boot_se"].mean()}
        for m in ("profile", "bootstrap"):
            cov = float(np.mean((g[f"lower_{m}"] <= pi) & (pi <= g[f"upper_{m}"])))
            row.update({f"{m}: coverage": cov, f"{m}: MC SE": np.sqrt(cov * (1 - cov) / len(g)),
                        f"{m}: mean width": (g[f"upper_{m}"] - g[f"lower_{m}"]).mean(),
                        f"{m}: CPU s": g[f"t_{m}"].mean()})
        row["bootstrap cut-off mean"] = g["cutoff_bootstrap"].mean()
        row["fit CPU s"] = g["t_fit"].mean()
        if "covers" in g:
            row["stored: coverage"] = g["covers_stored"].mean()
            row["refit: pi-hat changed"] = int(g["refit_changed"].sum())
            row["of them not rechecked"] = int((g["refit_changed"] & ~g["rechecked"]).sum())
            row["rechecked"] = int(g["rechecked"].sum())
            row["covers today only / stored only"] = (
                f"{int((g['covers'] & ~g['covers_stored']).sum())} / "
                f"{int((g['covers_stored'] & ~g['covers']).sum())}")
        rows.append(row)
    text = _print_cells(rows)
    if args.write:
        flags = "".join(f" --{k} " + " ".join(v) for k, v in
                        (("tag", args.tag), ("recheck", args.recheck), ("refit", args.refit)) if v)
        (OUT / f"detm_interval_direct{args.write}.md").write_text(
            "# The direct cells\n\n`python studies/detm_interval.py summarise-direct"
            f"{flags} --write {args.write}`\n\n{text}\n")
    return text


def se_check(args):
    """Which SE of pi-hat agrees with the default interval? Over the direct runs' replicates,
    each candidate's mean against the SD of pi-hat (and the median, as the SAR cells have
    heavy tails) and the coverage of its Wald interval ``pi-hat +- z SE`` beside the
    calibrated interval's own: the observed information (Theorem 2), the SD of the
    resamples' pi-hat, and the width of the calibrated 95% interval over ``2 z`` (a limit at 0
    or 1: the other limit's distance from pi-hat over ``z``), which ``bse["pi"]`` uses."""
    df = _load_direct(args.tag)
    z = stats.norm.ppf(0.975)
    lo, hi = df["lower_bootstrap"], df["upper_bootstrap"]
    width_se = np.where(lo <= 0, hi - df["pi_hat"],
                        np.where(hi >= 1, df["pi_hat"] - lo, (hi - lo) / 2)) / z
    cands = {"observed information": df["se"], "SD of the resamples' pi-hat": df["boot_se"],
             "calibrated CI width / 2z (bse)": pd.Series(width_se, index=df.index)}
    rows = []
    for (design, model, pi, n), g in df.groupby(["design", "model", "pi", "n"]):
        sd = g["pi_hat"].std(ddof=1)
        cov = float(np.mean((g["lower_bootstrap"] <= pi) & (pi <= g["upper_bootstrap"])))
        row = {"design": design, "model": model, "pi": pi, "n = m": n, "reps": len(g),
               "pi-hat SD": sd, "calibrated CI: coverage": cov}
        for name, se in cands.items():
            se = se[g.index]
            row[f"{name}: mean / SD"] = se.mean() / sd
            row[f"{name}: median / SD"] = se.median() / sd
            row[f"{name}: Wald coverage"] = float(np.mean(np.abs(g["pi_hat"] - pi) <= z * se))
        rows.append(row)
    return _print_cells(rows)


def compare_direct(args):
    """Paired comparison of two direct runs on the same replicates (seeds): the calibrated
    interval of ``--base`` tags against that of ``--other`` tags (e.g. another ``--smooth``):
    coverage, width and cut-off of each on the common replicates."""
    key = ["design", "model", "pi", "n", "seed"]
    both = _load_direct(args.base).merge(_load_direct(args.other), on=key, suffixes=("_a", "_b"))
    rows = []
    for (design, model, pi, n), g in both.groupby(["design", "model", "pi", "n"]):
        row = {"design": design, "model": model, "pi": pi, "n = m": n, "paired reps": len(g)}
        for sfx, name in (("_a", "base"), ("_b", "other")):
            cov = float(np.mean((g[f"lower_bootstrap{sfx}"] <= pi)
                                & (pi <= g[f"upper_bootstrap{sfx}"])))
            row.update({f"{name}: coverage": cov,
                        f"{name}: MC SE": np.sqrt(cov * (1 - cov) / len(g)),
                        f"{name}: mean width": (g[f"upper_bootstrap{sfx}"]
                                                - g[f"lower_bootstrap{sfx}"]).mean(),
                        f"{name}: cut-off mean": g[f"cutoff_bootstrap{sfx}"].mean()})
        prof = float(np.mean((g["lower_profile_a"] <= pi) & (pi <= g["upper_profile_a"])))
        row["plain profile: coverage"] = prof
        row["plain profile: mean width"] = (g["upper_profile_a"] - g["lower_profile_a"]).mean()
        rows.append(row)
    return _print_cells(rows)


def worldbias(args):
    """Is the bootstrap world's pi the fitted pi? For ``--worlds`` samples of a design, the
    fitted model's draws ``(R*_b(pi-hat), pi-hat_b)`` (``--n-boot`` resamples) with the
    default Silverman bandwidth and without smoothing (h = 0): the mean of
    ``pi-hat_b - pi-hat`` (the estimator's bias in the world) and the quantiles of ``R*_b``
    (its 95% quantile is the calibrated cut-off)."""
    rows = []
    for w in range(args.worlds):
        seed = 123 + w
        df = DESIGNS[args.design](args.n, args.n, args.pi, p=args.p,
                                  rng=np.random.default_rng(seed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = getattr(pu, args.model).from_formula(formula(args.p), data=df).fit()
            data = res.model.data
            for label, h in (("silverman", boot.bandwidth(data, "silverman")), ("0", 0.0)):
                d = boot.interval_replicate(res, args.n_boot, np.random.default_rng(0),
                                            smooth=h)
                r, pb = d[:, 0], d[:, 1]
                rows.append(dict(design=args.design, model=args.model, pi=args.pi, seed=seed,
                                 smooth=label, h=h, pi_hat=res.pi,
                                 bias_world=np.nanmean(pb) - res.pi, sd_world=np.nanstd(pb),
                                 r_q50=np.nanquantile(r, 0.5), r_q95=np.nanquantile(r, 0.95)))
                print(rows[-1], flush=True)
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".4g"))


RECHECK_KEEP = ["design", "model", "seed", "pi", "n", "p", "n_boot", "pi_hat", "lower_bootstrap",
                "upper_bootstrap", "cutoff_bootstrap", "lower_profile", "upper_profile"]


def _pending(src: pd.DataFrame, path):
    """The stored replicates of ``src`` not yet in the output file ``path`` (restartable
    reruns), each as ``(stored row, p, data regenerated from its seed)``."""
    done = set()
    if path.exists():
        old = pd.read_csv(path)
        done = set(zip(old["design"], old["model"], old["pi"].round(6), old["seed"], strict=True))
    for _, o in src.iterrows():
        if (o["design"], o["model"], round(o["pi"], 6), o["seed"]) in done:
            continue
        p = int(o["p"]) if pd.notna(o.get("p")) else 15
        yield o, p, DESIGNS[o["design"]](int(o["n"]), int(o["n"]), float(o["pi"]), p=p,
                                         rng=np.random.default_rng(int(o["seed"])))


def _in_cells(src: pd.DataFrame, cells) -> pd.DataFrame:
    """The rows of ``src`` in the ``design:model:pi`` cells ``cells`` (all if none)."""
    if not cells:
        return src
    keep = {(d, m, float(q)) for d, m, q in (c.split(":") for c in cells)}
    return src[[(d, m, float(q)) in keep for d, m, q in
                zip(src["design"], src["model"], src["pi"], strict=True)]]


def recheck_direct(args):
    """The direct runs' replicates (``--tag``) with today's code: each replicate's fit and
    default interval (199 resamples) afresh, paired with the stored run on the same seed. Rows
    are appended to ``results/detm_interval_recheck_raw<out>.csv`` (restartable); ``--cells``
    limits the run to ``design:model:pi`` cells, ``--first`` / ``--reps`` to replicates in the
    order of their seeds, ``--seeds`` to the given seeds.

    Reusing a stored cut-off where pi-hat is unchanged is not exact: since the runs of
    sessions 23-27, rounding-level changes of the arithmetic send some resamples' refits to
    other local maxima (in session 30's rerun the cut-off of a replicate with unchanged pi-hat
    moved by more than 1e-4 in 52 of 980 replicates, 47 of them in the SAR cells)."""
    src = _load_direct(args.tag)
    src = src[src["n"] == args.n]
    src = _in_cells(src, args.cells)
    src = src.sort_values(["design", "model", "pi", "seed"])
    r = src.groupby(["design", "model", "pi"]).cumcount()
    src = src[(r >= args.first) & (r < args.first + args.reps)]
    if args.seeds:
        src = src[src["seed"].isin(args.seeds)]
    path = OUT / f"detm_interval_recheck_raw{args.out}.csv"
    for o, p, df in _pending(src, path):
        row = {f"{c}_old" if c in RECHECK_KEEP[7:] else c: o[c] for c in RECHECK_KEEP}
        opts = argparse.Namespace(penalty="ridge", n_boot=int(o["n_boot"]), p=p,
                                  smooth="silverman", check_limits=args.check_limits)
        row.update(direct_one(getattr(pu, o["model"]), df, opts, int(o["seed"])))
        row["changed"] = not abs(row["pi_hat"] - o["pi_hat"]) <= 1e-8
        _append(path, row)


def _append(path, row):
    """Append ``row`` to the CSV at ``path`` (rewriting it if the row has new columns)."""
    out = pd.DataFrame([row])
    if path.exists():
        cols = pd.read_csv(path, nrows=0).columns
        if any(c not in cols for c in out.columns):
            out = pd.concat([pd.read_csv(path), out], ignore_index=True)
            out.to_csv(path, index=False)
            print(row, flush=True)
            return
        out = out.reindex(columns=cols)
    out.to_csv(path, mode="a", header=not path.exists(), index=False)
    print(row, flush=True)


def summarise_recheck(args):
    """Per cell: replicates rechecked, how many changed pi-hat, how far the cut-offs of the
    others moved from the stored ones, and the coverage and mean width of the default and the
    plain interval with today's code beside the stored run's."""
    frames = [pd.read_csv(OUT / f"detm_interval_recheck_raw{t}.csv") for t in args.tag]
    df = pd.concat(frames, ignore_index=True)
    rows = []
    for (design, model, pi, n), g in df.groupby(["design", "model", "pi", "n"]):
        same = g[~g["changed"]]
        moved = (same["cutoff_bootstrap"] - same["cutoff_bootstrap_old"]).abs()
        row = {"design": design, "model": model, "pi": pi, "n = m": n, "reps": len(g),
               "pi-hat changed": int(g["changed"].sum()),
               "cut-off moved > 1e-4 (pi-hat unchanged)": int((moved > 1e-4).sum()),
               "max |cut-off - stored| (pi-hat unchanged)": float(moved.max())
               if len(same) else float("nan"),
               "pi-hat mean": g["pi_hat"].mean(), "pi-hat SD": g["pi_hat"].std(ddof=1),
               "stored pi-hat SD": g["pi_hat_old"].std(ddof=1)}
        cov_new = (g["lower_bootstrap"] <= pi) & (pi <= g["upper_bootstrap"])
        cov_old = (g["lower_bootstrap_old"] <= pi) & (pi <= g["upper_bootstrap_old"])
        row["covers today only / stored only"] = (f"{int((cov_new & ~cov_old).sum())} / "
                                                   f"{int((cov_old & ~cov_new).sum())}")
        row["cut-off today / stored (median ratio)"] = float(
            (g["cutoff_bootstrap"] / g["cutoff_bootstrap_old"]).median())
        for m in ("bootstrap", "profile"):
            for tag, suf in (("today", ""), ("stored", "_old")):
                lo, hi = g[f"lower_{m}{suf}"], g[f"upper_{m}{suf}"]
                cov = float(np.mean((lo <= pi) & (pi <= hi)))
                row[f"{m} {tag}: coverage"] = cov
                if tag == "today":
                    row[f"{m} {tag}: MC SE"] = np.sqrt(cov * (1 - cov) / len(g))
                row[f"{m} {tag}: mean width"] = float((hi - lo).mean())
        rows.append(row)
    text = _print_cells(rows)
    if args.write:
        (OUT / f"detm_interval_recheck{args.write}.md").write_text(
            "# Direct cells at n = m = 1000 rechecked with today's fit\n\n"
            "`python studies/detm_interval.py summarise-recheck --tag "
            + " ".join(args.tag) + "`\n\n" + text + "\n")


def compare_recheck(args):
    """Two reruns of the same direct replicates (``recheck-direct`` at two commits, tags
    ``--before`` and ``--after``), paired on the seed: per cell, how many changed pi-hat, how
    many cut-offs moved with pi-hat unchanged, the coverage decisions that differ, and the
    default interval's coverage and mean width in each."""
    def load(tags):
        return pd.concat([pd.read_csv(OUT / f"detm_interval_recheck_raw{t}.csv") for t in tags],
                         ignore_index=True)

    key = ["design", "model", "pi", "n", "seed"]
    m = load(args.before).merge(load(args.after), on=key, suffixes=("_b", "_a"))
    rows = []
    for (design, model, pi), g in m.groupby(["design", "model", "pi"]):
        changed = ~((g["pi_hat_a"] - g["pi_hat_b"]).abs() <= 1e-8)
        moved = (g["cutoff_bootstrap_a"] - g["cutoff_bootstrap_b"]).abs()[~changed]
        cov = {t: (g[f"lower_bootstrap_{t}"] <= pi) & (pi <= g[f"upper_bootstrap_{t}"])
               for t in ("b", "a")}
        rows.append({"cell": f"{design} {model}, pi = {pi:g}", "replicates": len(g),
                     "pi-hat changed": int(changed.sum()),
                     "cut-off moved > 1e-4 (same pi-hat)": int((moved > 1e-4).sum()),
                     "covers after only / before only":
                         f"{int((cov['a'] & ~cov['b']).sum())} / "
                         f"{int((cov['b'] & ~cov['a']).sum())}",
                     "coverage before": cov["b"].mean(), "coverage after": cov["a"].mean(),
                     "mean width before": (g["upper_bootstrap_b"] - g["lower_bootstrap_b"]).mean(),
                     "mean width after": (g["upper_bootstrap_a"] - g["lower_bootstrap_a"]).mean()})
    _report(rows, args.write and f"detm_interval_recheck{args.write}.md",
            "The direct cells at n = m = 1000: two reruns of the same replicates",
            f"compare-recheck --before {' '.join(args.before)} --after {' '.join(args.after)} "
            f"--write {args.write}")


def summarise_limits(args):
    """The limits of ``recheck-direct --check-limits`` runs: per cell and interval, how many
    limits (not at a bound) are crossings of the cut-off (R* within 1e-4 of it at the limit,
    below it 1e-3 inside and above it 1e-3 outside), how many lie inside the set (R* below the
    cut-off at the limit), how many are jumps out of it (R* above), and how many have the set
    continue beyond them (R* below the cut-off 1e-3 outside)."""
    df = pd.concat([pd.read_csv(OUT / f"detm_interval_recheck_raw{t}.csv") for t in args.tag],
                   ignore_index=True)
    rows, tol = [], 1e-4
    for (design, model, pi), g in df.groupby(["design", "model", "pi"]):
        for method in ("profile", "bootstrap"):
            cut = np.concatenate([g[f"cutoff_{method}"]] * 2)
            r = {t: np.concatenate([g[f"rstar_{side}_{method}_{t}"] for side in
                                    ("lower", "upper")]) for t in ("in", "at", "out")}
            ok = np.isfinite(r["at"])
            at = r["at"][ok] - cut[ok]
            crossing = (np.abs(at) <= tol) & (r["in"][ok] < cut[ok]) & (r["out"][ok] > cut[ok])
            rows.append({"cell": f"{design} {model}, pi = {pi:g}", "interval": method,
                         "limits": int(ok.sum()), "crossings": int(crossing.sum()),
                         "inside the set": int((at < -tol).sum()),
                         "jump out of it": int((at > tol).sum()),
                         "set continues beyond": int((r["out"][ok] < cut[ok]).sum()),
                         "at the bound / not computable": int((~ok).sum())})
    _report(rows, args.write and f"detm_interval_limits{args.write}.md",
            "Are the limits crossings of the cut-off?",
            f"summarise-limits --tag {' '.join(args.tag)} --write {args.write}")
    if args.before:
        _moved_limits(df, args)


def _moved_limits(after, args):
    """The limits that moved (by more than 1e-6) from the runs ``--before`` (paired on the
    seed), with R* 1e-3 inside, at and 1e-3 outside each, before and after."""
    before = pd.concat([pd.read_csv(OUT / f"detm_interval_recheck_raw{t}.csv")
                        for t in args.before], ignore_index=True)
    m = before.merge(after, on=["design", "model", "pi", "n", "seed"], suffixes=("_b", "_a"))
    rows = []
    for _, r in m.iterrows():
        for method in ("profile", "bootstrap"):
            for side, sign in (("lower", -1), ("upper", +1)):
                b, a = r[f"{side}_{method}_b"], r[f"{side}_{method}_a"]
                if not abs(a - b) > 1e-6:
                    continue
                row = {"cell": f"{r['design']} {r['model']}, pi = {r['pi']:g}",
                       "seed": int(r["seed"]), "limit": f"{method} {side}",
                       "cut-off": r[f"cutoff_{method}_a"], "before": b, "after": a,
                       "outwards": bool(sign * (a - b) > 0)}
                for t in ("b", "a"):
                    # a run without --check-limits has no R* columns (then unsuffixed after
                    # the merge, on the other run's side)
                    vals = [r.get(f"rstar_{side}_{method}_{k}_{t}",
                                  r.get(f"rstar_{side}_{method}_{k}", np.nan) if t == "a"
                                  else np.nan) for k in ("in", "at", "out")]
                    row[f"R* in / at / out ({'before' if t == 'b' else 'after'})"] = " / ".join(
                        f"{v:.4f}" for v in vals)
                rows.append(row)
    _report(rows, args.write and f"detm_interval_limits_moved{args.write}.md",
            "Limits that moved", f"summarise-limits --tag {' '.join(args.tag)} --before "
            f"{' '.join(args.before)} --write {args.write}")


def _report(rows, name, title, command, floatfmt=".4g"):
    """Print ``rows`` as a markdown table and, if ``name``, write it to ``results/name`` under
    ``title`` with the ``detm_interval.py`` command that made it."""
    text = pd.DataFrame(rows).to_markdown(index=False, floatfmt=floatfmt)
    print(text)
    if name:
        (OUT / name).write_text(
            f"# {title}\n\n`python studies/detm_interval.py {command}`\n\n{text}\n")


REFIT_KEY = ["design", "model", "pi", "n", "seed"]


def _load_refit(tags) -> pd.DataFrame:
    """The rows of ``refit``'s files ``detm_refit_raw<tag>.csv``, one per replicate (the
    first tag's where several have it)."""
    return pd.concat([pd.read_csv(OUT / f"detm_refit_raw{t}.csv") for t in tags],
                     ignore_index=True).drop_duplicates(REFIT_KEY)


def refit(args):
    """Stored fits refitted with today's code: for each replicate of the raw files
    ``--files`` (CSV names under results/ with design, model, pi, n, seed and the stored
    fit's pi_hat, ideally its f_fit), the default fit (``pi_interval="profile"``) afresh --
    pi-hat, penalised log-EL, whether today's fit is a run of the probe's climb (``"profile
    climb"``), the runs of the probe (``"profile ..."``), ``R*(pi_true)`` of its plain
    profile and ``R*`` at the stored pi-hat (a ``ProfileError`` there: the stored fit was
    higher) -- beside the stored values. Rows go to ``results/detm_refit_raw<out>.csv``
    (restartable); ``--part k/K`` runs every K-th replicate from the k-th (for K processes),
    ``--cells`` only the given ``design:model:pi`` cells, ``--reps R`` the first R replicates
    of each cell (in the order of their seeds). ``--hop-seed S``: the search's basin hopping
    draws its random moves with seed S (``fit(seed=S)``) instead of the default 0 (session 37:
    does another set of moves find a higher maximum?). ``--hops-per-radius H``: H random moves
    per radius instead of the package's ``HOPS_PER_RADIUS`` (a larger search). ``--ridge-scale
    K``: the fit's ridge ``c`` is K times the default ``1/(2 sqrt(N))`` (session 38: do the
    searches' disagreements come from the weak ridge?); ``R*`` is then that penalised
    profile's."""
    if args.hops_per_radius:
        _starts.HOPS_PER_RADIUS = args.hops_per_radius
    src = pd.concat([_with_design(pd.read_csv(OUT / f)) for f in args.files], ignore_index=True)
    src = src.drop_duplicates(REFIT_KEY).sort_values(REFIT_KEY).reset_index(drop=True)
    src = _in_cells(src, args.cells)
    src = src[src.groupby(["design", "model", "pi", "n"]).cumcount() < args.reps]
    k, kk = (int(x) for x in args.part.split("/"))
    src = src.iloc[k::kk]
    path = OUT / f"detm_refit_raw{args.out}.csv"
    for o, p, df in _pending(src, path):
        row = {c: o[c] for c in REFIT_KEY}
        row.update(pi_hat_old=o["pi_hat"], f_old=o.get("f_fit", np.nan),
                   r_true_old=o.get("r_true", np.nan), f_indep=o.get("f_indep", np.nan))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            res = getattr(pu, o["model"]).from_formula(formula(p), data=df).fit(
                pi_interval="profile", seed=args.hop_seed,
                penalty=args.ridge_scale * ridge_strength(2 * int(o["n"])) if args.ridge_scale
                else "ridge")
            row["t_fit"] = time.process_time() - t0
            s = res.starts
            top = s.loc[s["objective"] >= res.llf_penalized - 1e-9, "start"]
            row.update(pi_hat=res.pi, f_fit=res.llf_penalized,
                       climbed=bool((top == "profile climb").any()),
                       climb_runs=int((s["start"] == "profile climb").sum()),
                       probe_runs=int(s["start"].str.startswith("profile").sum()))
            try:
                row["r_true"] = res.profile_pi().statistic(float(o["pi"]))
            except ValueError as exc:
                row.update(r_true=np.nan, ci_error=str(exc)[:80])
            # the stored fit as an independent start: a ProfileError at its pi-hat means
            # today's profile there is above today's fit
            try:
                row["r_stored"] = res.profile_pi().statistic(float(o["pi_hat"]))
            except ValueError as exc:
                row.update(r_stored=np.nan, stored_error=str(exc)[:80])
        _append(path, row)


def summarise_refit(args):
    """Per cell of ``refit``'s rows (``--tag``): replicates, how many fits changed (pi-hat
    by more than 1e-8) and whether a climb ran in them (one that ran leads the search to
    other points, so the final fit can be a later probe's run), the log-EL gained, the climbs that
    did not change the fit, and (where the stored rows have them) the misses of the polished
    independent starts and the plain profile's coverage decisions ``R*(pi_true) <= 3.84``
    (a ``ProfileError`` counts as not covering) before and after. With ``--before TAGS`` the
    "before" is an earlier ``refit`` of the same replicates (its pi-hat, log-EL, ``R*(pi_true)``)
    instead of the stored fit."""
    load = _load_refit
    df = load(args.tag)
    if args.before:
        prev = load(args.before)[REFIT_KEY + ["pi_hat", "f_fit", "r_true"]].rename(
            columns={"pi_hat": "pi_hat_old", "f_fit": "f_old", "r_true": "r_true_old"})
        df = df.drop(columns=["pi_hat_old", "f_old", "r_true_old"]).merge(prev, on=REFIT_KEY)
    for c in ("stored_error", "ci_error", "probe_runs"):
        if c not in df:
            df[c] = np.nan
    rows = []
    for (design, model, pi, n), g in df.groupby(["design", "model", "pi", "n"]):
        changed = ~((g["pi_hat"] - g["pi_hat_old"]).abs() <= 1e-8)
        gain = g["f_fit"] - g["f_old"]
        row = {"cell": f"{design} {model}, pi = {pi:g}", "n = m": n, "replicates": len(g),
               "pi-hat changed": int(changed.sum()),
               # without a climb run the search is the stored one: its fit must be the same
               "of them with / without a climb run": (
                   f"{int((changed & (g['climb_runs'] > 0)).sum())} / "
                   f"{int((changed & (g['climb_runs'] == 0)).sum())}"),
               "ending on the climb's run": int((changed & g["climbed"]).sum()),
               "log-EL higher / lower (> 1e-6)":
                   f"{int((gain > 1e-6).sum())} / {int((gain < -1e-6).sum())}",
               "max gain": float(gain.max()),
               "climbs run, fit unchanged": int(((g["climb_runs"] > 0) & ~changed).sum()),
               "changed with / without a probe run": (
                   f"{int((changed & (g['probe_runs'] > 0)).sum())} / "
                   f"{int((changed & ~(g['probe_runs'] > 0)).sum())}")
               if g["probe_runs"].notna().all() else "",
               "fit below its profile at the truth / at the stored pi-hat": (
                   f"{int(g['ci_error'].notna().sum())} / {int(g['stored_error'].notna().sum())}"),
               "mean fit CPU s": g["t_fit"].mean()}
        if g["f_indep"].notna().any():
            row["misses before / after"] = (
                f"{int((g['f_indep'] > g['f_old'] + 1e-6).sum())} / "
                f"{int((g['f_indep'] > g['f_fit'] + 1e-6).sum())}")
        if g["r_true_old"].notna().any():
            old, new = g["r_true_old"] <= CUT, g["r_true"] <= CUT
            row["plain covers after only / before only"] = (
                f"{int((new & ~old).sum())} / {int((old & ~new).sum())}")
        rows.append(row)
    text = pd.DataFrame(rows).to_markdown(index=False, floatfmt=".4g")
    print(text)
    ch = df[~((df["pi_hat"] - df["pi_hat_old"]).abs() <= 1e-8)]
    listing = ch[REFIT_KEY + ["pi_hat_old", "pi_hat", "f_old", "f_fit", "climb_runs",
                              "climbed", "r_true_old", "r_true"]].to_markdown(index=False, floatfmt=".6g")
    print(listing)
    if args.write:
        before = f" --before {' '.join(args.before)}" if args.before else ""
        (OUT / f"detm_refit{args.write}.md").write_text(
            "# Stored fits refitted with today's code\n\n"
            f"`python studies/detm_interval.py summarise-refit --tag {' '.join(args.tag)}"
            f"{before} --write {args.write}`\n\n{text}\n\nThe changed fits:\n\n{listing}\n")


def summarise_best(args):
    """The default fit against the best maximum any of several searches reached on the same
    replicates (session 37): ``--default`` the refit tags of the default search, ``--others``
    one comma-separated group of refit tags per other search (another hop seed, another
    machine). Per cell, over the replicates every search ran: how many default fits lie below
    the best known maximum (> 1e-6), which search found it, the gap and the change in pi-hat.
    ``--join``: comma-separated groups of refit tags of further seeds whose best, with the
    default's, is the fit (a search of several seeds)."""
    def load(tags):
        return _load_refit(tags)[REFIT_KEY + ["f_fit", "pi_hat"]]

    m = load(args.default)
    for w in args.join:  # a search of several seeds: the best of them is its fit
        o = load(w.split(",")).rename(columns={"f_fit": "f_w", "pi_hat": "pi_w"})
        m = m.merge(o, on=REFIT_KEY)
        up = m["f_w"] > m["f_fit"]
        m.loc[up, "f_fit"], m.loc[up, "pi_hat"] = m.loc[up, "f_w"], m.loc[up, "pi_w"]
        m = m.drop(columns=["f_w", "pi_w"])
    names = [",".join(g) for g in (o.split(",") for o in args.others)]
    for i, o in enumerate(args.others):
        m = m.merge(load(o.split(",")).rename(columns={"f_fit": f"f_{i}", "pi_hat": f"pi_{i}"}),
                    on=REFIT_KEY)
    f_o = m[[f"f_{i}" for i in range(len(names))]].to_numpy()
    best = np.maximum(m["f_fit"].to_numpy(), f_o.max(axis=1))
    m["gap"] = best - m["f_fit"]
    m["below"] = m["gap"] > 1e-6
    pi_best = np.where(f_o.max(axis=1) > m["f_fit"], m[[f"pi_{i}" for i in range(len(names))]]
                       .to_numpy()[np.arange(len(m)), f_o.argmax(axis=1)], m["pi_hat"])
    m["dpi"] = np.abs(pi_best - m["pi_hat"])
    rows = []
    for (design, model, pi, n), g in m.groupby(["design", "model", "pi", "n"]):
        b = g[g["below"]]
        row = {"cell": f"{design} {model}, pi = {pi:g}", "n = m": n, "replicates": len(g),
               "default below the best known": len(b)}
        for i, nm in enumerate(names):
            row[f"higher by {nm}"] = int((g[f"f_{i}"] > g["f_fit"] + 1e-6).sum())
        row.update({"gap median / max": f"{b['gap'].median():.3g} / {b['gap'].max():.3g}"
                    if len(b) else "", "|pi-hat change| max": b["dpi"].max() if len(b) else 0.0})
        rows.append(row)
    _report(rows, args.write and f"detm_refit{args.write}.md",
            "The default fit against the best known maximum",
            f"summarise-best --default {' '.join(args.default)}"
            + "".join(f" --join {w}" for w in args.join) + " --others "
            f"{' '.join(args.others)} --write {args.write}", floatfmt=".3g")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--pi", type=float, nargs="+", default=[0.3, 0.7], choices=[0.3, 0.7])
    r.add_argument("--n", type=int, default=1000)
    r.add_argument("--p", type=int, default=15)
    r.add_argument("--reps", type=int, default=400)
    r.add_argument("--first", type=int, default=0)
    r.add_argument("--random", type=int, default=4, help="random starts per replicate")
    r.add_argument("--ridge-scales", type=float, nargs="*", default=[])
    r.add_argument("--smooth", default="silverman")
    r.add_argument("--cuts", type=float, nargs="*", default=[6.63, 9.0, 14.0],
                   help="also record the interval's limits at these cut-offs")
    r.add_argument("--tag", default="")
    r.add_argument("--design", choices=["sar", "scar", "gamma"], default="sar")
    r.add_argument("--model", choices=["DETM", "SETM"], default="DETM")
    r.add_argument("--resamples", type=int, default=1,
                   help="bootstrap resamples per replicate (pooled for the warp cut-off)")
    mr = sub.add_parser("more-resamples")
    mr.add_argument("--tag", required=True)
    mr.add_argument("--design", choices=["sar", "scar", "gamma"], default="sar")
    mr.add_argument("--model", choices=["DETM", "SETM"], default="DETM")
    mr.add_argument("--resamples", type=int, default=10)
    mr.add_argument("--random", type=int, default=4, help="as run's (the draws before)")
    mr.add_argument("--first", type=int, default=0)
    mr.add_argument("--reps", type=int, default=10**6)
    k = sub.add_parser("klse")
    k.add_argument("--design", choices=["gauss2", "sar"], default="gauss2")
    k.add_argument("--reps", type=int, default=400)
    d = sub.add_parser("direct")
    d.add_argument("--pi", type=float, nargs="+", default=[0.3, 0.7], choices=[0.3, 0.7])
    d.add_argument("--n", type=int, default=1000)
    d.add_argument("--p", type=int, default=15)
    d.add_argument("--reps", type=int, default=400)
    d.add_argument("--first", type=int, default=0)
    d.add_argument("--n-boot", type=int, default=199)
    d.add_argument("--design", choices=sorted(DESIGNS), default="sar")
    d.add_argument("--model", nargs="+", choices=["DETM", "SETM"], default=["DETM"])
    d.add_argument("--penalty", default="ridge", help="fit(penalty=...): 'ridge' or a number")
    d.add_argument("--smooth", default="silverman",
                   help="the bootstrap's bandwidth: 'silverman' (the default) or a number (0: "
                        "the discrete EL bootstrap)")
    d.add_argument("--tag", default="")
    wb = sub.add_parser("worldbias")
    wb.add_argument("--design", choices=sorted(DESIGNS), default="scar")
    wb.add_argument("--model", choices=["DETM", "SETM"], default="SETM")
    wb.add_argument("--pi", type=float, default=0.7)
    wb.add_argument("--n", type=int, default=1000)
    wb.add_argument("--p", type=int, default=15)
    wb.add_argument("--n-boot", type=int, default=99)
    wb.add_argument("--worlds", type=int, default=1)
    em = sub.add_parser("empirical")
    em.add_argument("--design", choices=sorted(DESIGNS), default="gamma")
    em.add_argument("--model", choices=["DETM", "SETM"], default="DETM")
    em.add_argument("--pi", type=float, default=0.7, choices=[0.3, 0.7])
    em.add_argument("--n", type=int, default=1000)
    em.add_argument("--p", type=int, default=15)
    em.add_argument("--n-boot", type=int, default=99)
    em.add_argument("--reps", type=int, default=40)
    em.add_argument("--first", type=int, default=0)
    se = sub.add_parser("summarise-empirical")
    se.add_argument("--tag", nargs="+", default=["_d", "_e", "_f_scar", "_f_gamma"])
    cd = sub.add_parser("compare-direct")
    cd.add_argument("--base", nargs="+", default=["_d", "_e", "_f_scar"])
    cd.add_argument("--other", nargs="+", default=["_h0_sar", "_h0_scar"])
    sd = sub.add_parser("summarise-direct")
    sd.add_argument("--tag", nargs="+", default=["_d"])
    sd.add_argument("--recheck", nargs="*", default=[],
                    help="recheck-direct tags whose rows replace the stored ones (n = 1000)")
    sd.add_argument("--refit", nargs="*", default=[],
                    help="refit tags: count the changed fits and those not rechecked")
    sd.add_argument("--write", default=None)
    sc = sub.add_parser("se-check")
    sc.add_argument("--tag", nargs="+", default=["_d", "_e", "_f_scar", "_f_scar_b",
                                                  "_f_gamma", "_g_scar"])
    rc = sub.add_parser("recheck-direct")
    rc.add_argument("--tag", nargs="+", default=["_d", "_e", "_f_scar", "_f_scar_b",
                                                  "_f_gamma", "_g_scar"])
    rc.add_argument("--cells", nargs="*", default=[], help="design:model:pi, e.g. sar:DETM:0.3")
    rc.add_argument("--n", type=int, default=1000)
    rc.add_argument("--first", type=int, default=0, help="replicates FIRST .. FIRST + REPS - 1 "
                    "of each cell (in the order of their seeds)")
    rc.add_argument("--reps", type=int, default=10**6)
    rc.add_argument("--seeds", nargs="*", type=int, default=[], help="only these seeds")
    rc.add_argument("--out", default="")
    rc.add_argument("--check-limits", action="store_true",
                    help="record R* at each limit and 1e-3 either side of it")
    sr = sub.add_parser("summarise-recheck")
    sr.add_argument("--tag", nargs="+", default=[""])
    sr.add_argument("--write", default=None)
    cr = sub.add_parser("compare-recheck")
    cr.add_argument("--before", nargs="+", required=True)
    cr.add_argument("--after", nargs="+", required=True)
    cr.add_argument("--write", default=None)
    sl = sub.add_parser("summarise-limits")
    sl.add_argument("--tag", nargs="+", required=True)
    sl.add_argument("--before", nargs="*", default=[],
                    help="also list the limits that moved from these runs")
    sl.add_argument("--write", default=None)
    rf = sub.add_parser("refit")
    rf.add_argument("--files", nargs="+", required=True)
    rf.add_argument("--part", default="0/1")
    rf.add_argument("--cells", nargs="*", default=[], help="design:model:pi, e.g. sar:DETM:0.7")
    rf.add_argument("--out", default="")
    rf.add_argument("--reps", type=int, default=10**6, help="the first REPS of each cell")
    rf.add_argument("--hop-seed", type=int, default=0, help="seed of the hops' random moves")
    rf.add_argument("--ridge-scale", type=float, default=0.0,
                    help="the ridge c as a multiple of the default 1/(2 sqrt(N)) (0: default)")
    rf.add_argument("--hops-per-radius", type=int, default=0,
                    help="random moves per radius (default: the package's)")
    srf = sub.add_parser("summarise-refit")
    srf.add_argument("--tag", nargs="+", required=True)
    srf.add_argument("--before", nargs="*", default=[],
                     help="refit tags of an earlier refit of the same replicates (the before)")
    srf.add_argument("--write", default=None)
    sb = sub.add_parser("summarise-best")
    sb.add_argument("--default", nargs="+", required=True)
    sb.add_argument("--others", nargs="+", required=True,
                    help="one comma-separated group of refit tags per other search")
    sb.add_argument("--join", nargs="*", default=[],
                    help="comma-separated refit tags of further seeds joined to the default")
    sb.add_argument("--write", default=None)
    s = sub.add_parser("summarise")
    s.add_argument("--tag", nargs="+", default=[""], help="files to pool (their tags)")
    s.add_argument("--write", default=None, help="write results/detm_interval<WRITE>.md")
    s.add_argument("--refit", nargs="*", default=[],
                   help="with pi-hat and R*(pi_true) of the replicates in these refit files "
                        "(detm_refit_raw<TAG>.csv) replaced by today's fits'")
    args = ap.parse_args()
    commands = {"run": run, "more-resamples": more_resamples, "direct": direct, "klse": klse,
                "compare-direct": compare_direct,
                "worldbias": worldbias, "empirical": empirical,
                "summarise-empirical": summarise_empirical,
                "summarise-direct": summarise_direct, "se-check": se_check,
                "recheck-direct": recheck_direct, "summarise-recheck": summarise_recheck,
                "compare-recheck": compare_recheck, "refit": refit,
                "summarise-limits": summarise_limits,
                "summarise-refit": summarise_refit, "summarise-best": summarise_best,
                "summarise": summarise}
    commands[args.cmd](args)

if __name__ == "__main__":
    main()
