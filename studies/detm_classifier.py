"""Figure 4 of Liu et al. (*Positive and Unlabeled Data: Model, Estimation, Inference, and
Classification*): the approximate Bayes classifier of DETM/SETM against the usual PU learners.

Design (Section 5.1): source positives N(0, I_15); target negatives N(1_15, I); target
positives N(0, I) (SCAR) or N((1_7, 0_8), I) (SAR); pi in {0.3, 0.7}; n = m; a fresh validation
sample of n rows from the target, on which every classifier is scored. Classifiers:

* ``Bayes (true parameters)``: the posterior with the true densities and pi (the ceiling);
* ``DETM``, ``SETM``: ``results.predict`` (the approximate Bayes classifier, Section 4.2);
* ``Elkan-Noto (pulearn)``: ``pulearn.ElkanotoPuClassifier`` with scikit-learn's
  ``LogisticRegression`` (labeled = source rows, unlabeled = target rows), as a user of PU
  learning would call it; ``Weighted Elkan-Noto (pulearn)`` likewise.

Per classifier and replicate: accuracy at the posterior threshold 0.5; balanced accuracy when
classifying by ``posterior > pi_hat`` (the rule that maximises balanced accuracy under the
model; the Bayes row uses the true pi); Brier score and log-loss of the posterior (clipped to
[1e-15, 1 - 1e-15]). The paper's PS, KM2 and TIcE have no maintained Python package and are not
rewritten here.

    python studies/detm_classifier.py run --reps 100 --sizes 1000 3000 5000
    python studies/detm_classifier.py summarise          # table + plot from the raw CSV

Results go to ``studies/results/detm_classifier{.md,.png,_raw.csv}``. Needs the ``bench``
extra (pulearn, scikit-learn, tabulate).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import special  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.simulate import scar_design  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
P = 15
SHIFT = {"SCAR": 0, "SAR": 7}

# Liu et al., Figure 4 (read from the text of Section 5.1; the figure gives no table): accuracy
# of DETM. SCAR: above 95% (pi = 0.3) and at least 90% (pi = 0.7) for all classifiers; SAR:
# DETM about 90%, rising with n; the SCAR-based methods 70-80% (pi = 0.3), about 60% (pi = 0.7).
PAPER = {("SCAR", 0.3): "all > 95%", ("SCAR", 0.7): "all >= 90% (KM2 ~87%)",
         ("SAR", 0.3): "DETM ~90%, others 70-80%", ("SAR", 0.7): "DETM ~90%, PS/KM2/TIcE ~60%"}


def true_posterior(X: np.ndarray, design: str, pi: float) -> np.ndarray:
    """``P_t(y = 1 | x)`` with the true components: N(mu1, I) against N(1, I)."""
    mu1 = np.r_[np.ones(SHIFT[design]), np.zeros(P - SHIFT[design])]
    # log N(x; mu1) - log N(x; 1) = x'(mu1 - 1) - (|mu1|^2 - |1|^2) / 2
    llr = X @ (mu1 - 1.0) - 0.5 * (mu1 @ mu1 - P)
    return special.expit(np.log(pi / (1 - pi)) + llr)


def scores(name: str, post: np.ndarray, y: np.ndarray, pi_hat: float) -> dict:
    """Accuracy at 0.5, balanced accuracy at ``pi_hat``, Brier score, log-loss."""
    q = np.clip(post, 1e-15, 1 - 1e-15)
    pred_bal = post > pi_hat
    tpr = np.mean(pred_bal[y == 1]) if np.any(y == 1) else np.nan
    tnr = np.mean(~pred_bal[y == 0]) if np.any(y == 0) else np.nan
    return dict(method=name, accuracy=float(np.mean((post > 0.5) == (y == 1))),
                balanced_accuracy=float(0.5 * (tpr + tnr)),
                brier=float(np.mean((post - y) ** 2)),
                log_loss=float(-np.mean(y * np.log(q) + (1 - y) * np.log1p(-q))),
                pi_hat=float(pi_hat))


def replicate(design: str, pi: float, n: int, seed: int, *, probe: bool = True,
              baselines: bool = True) -> list[dict]:
    """One replicate: fit every classifier on a PU sample, score it on a fresh target sample."""
    rng = np.random.default_rng(seed)
    df = scar_design(n, n, pi, n_shift=SHIFT[design], p=P, rng=rng)
    val = scar_design(1, n, pi, n_shift=SHIFT[design], p=P, rng=rng)
    val = val[val.labeled == 0]
    cols = [f"x{j + 1}" for j in range(P)]
    X, s = df[cols].to_numpy(), df["labeled"].to_numpy()
    Xv, yv = val[cols].to_numpy(), val["y_true"].to_numpy()
    rows = [scores("Bayes (true parameters)", true_posterior(Xv, design, pi), yv, pi)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # separation and start warnings are recorded in results
        for name, model in (("DETM", pu.DETM), ("SETM", pu.SETM)):
            r = model(X[s == 1], X[s == 0]).fit(probe=probe)
            rows.append(scores(name, np.asarray(r.predict(Xv)), yv, r.pi))
    if baselines:
        from pulearn import ElkanotoPuClassifier, WeightedElkanotoPuClassifier
        from sklearn.linear_model import LogisticRegression

        for name, clf in (
                ("Elkan-Noto (pulearn)",
                 ElkanotoPuClassifier(LogisticRegression(max_iter=1000), hold_out_ratio=0.1,
                                      random_state=seed)),
                ("Weighted Elkan-Noto (pulearn)",
                 WeightedElkanotoPuClassifier(LogisticRegression(max_iter=1000), labeled=n,
                                              unlabeled=n, hold_out_ratio=0.1,
                                              random_state=seed))):
            clf.fit(X, s)
            post = np.clip(clf.predict_proba(Xv)[:, 1], 0.0, 1.0)
            # pulearn gives no prior: its balanced rule uses the mean posterior on the target
            rows.append(scores(name, post, yv, float(np.mean(clf.predict_proba(X[s == 0])[:, 1]))))
    for r in rows:
        r.update(design=design, pi=pi, n=n, seed=seed)
    return rows


def run(reps: int, sizes: list[int], out: Path, probe: bool = True) -> pd.DataFrame:
    """All replicates of the design; appends to ``out`` (restartable: done seeds are skipped)."""
    done = pd.read_csv(out) if out.exists() else pd.DataFrame(columns=["design", "pi", "n", "seed"])
    keys = set(zip(done["design"], done["pi"], done["n"], done["seed"], strict=True))
    for design in ("SCAR", "SAR"):
        for pi in (0.3, 0.7):
            for n in sizes:
                t0 = time.perf_counter()
                for rep in range(reps):
                    seed = 10_000 * (design == "SAR") + 1_000 * int(10 * pi) + rep + n * 100
                    if (design, pi, n, seed) in keys:
                        continue
                    rows = pd.DataFrame(replicate(design, pi, n, seed, probe=probe))
                    rows.to_csv(out, mode="a", header=not out.exists(), index=False)
                print(f"{design} pi={pi} n={n}: {reps} replicates in "
                      f"{time.perf_counter() - t0:.0f} s", flush=True)
    return pd.read_csv(out)


def summarise(raw: pd.DataFrame) -> pd.DataFrame:
    """Mean and Monte-Carlo SE of every measure by design, pi, n and method."""
    g = raw.groupby(["design", "pi", "n", "method"], sort=False)
    out = g[["accuracy", "balanced_accuracy", "brier", "log_loss"]].agg(["mean", "sem"])
    out.columns = [f"{a}_{b}" for a, b in out.columns]
    out["reps"] = g.size()
    return out.reset_index()


def write(tab: pd.DataFrame, path_md: Path, path_png: Path) -> None:
    lines = ["# Approximate Bayes classifier: Liu et al., Figure 4 design\n",
             "Accuracy at 0.5 and balanced accuracy (threshold pi-hat) on a fresh target "
             "sample of n rows; mean (Monte-Carlo SE) over `reps` replicates. Brier score and "
             "log-loss of the posterior. Command: `python studies/detm_classifier.py run ...` "
             "then `summarise`.\n"]
    for (design, pi), sub in tab.groupby(["design", "pi"], sort=False):
        lines.append(f"\n## {design}, pi = {pi} (paper, Figure 4: {PAPER[design, pi]})\n")
        t = pd.DataFrame({
            "n": sub["n"], "method": sub["method"], "reps": sub["reps"],
            "accuracy %": [f"{100 * a:.2f} ({100 * b:.2f})"
                           for a, b in zip(sub["accuracy_mean"], sub["accuracy_sem"], strict=True)],
            "balanced acc. %": [f"{100 * a:.2f} ({100 * b:.2f})" for a, b in
                                zip(sub["balanced_accuracy_mean"], sub["balanced_accuracy_sem"],
                                    strict=True)],
            "Brier": [f"{a:.4f}" for a in sub["brier_mean"]],
            "log-loss": [f"{a:.4f}" for a in sub["log_loss_mean"]]})
        lines.append(t.to_markdown(index=False))
        lines.append("")
    path_md.write_text("\n".join(lines) + "\n")
    plot(tab, path_png)


def plot(tab: pd.DataFrame, path) -> None:
    """Accuracy against n, one panel per (design, pi), as Figure 4 (with 2-SE bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    for ax, ((design, pi), sub) in zip(axes.ravel(), tab.groupby(["design", "pi"], sort=False),
                                       strict=False):
        for method, d in sub.groupby("method", sort=False):
            ax.errorbar(d["n"], 100 * d["accuracy_mean"], yerr=200 * d["accuracy_sem"],
                        marker="o", capsize=3, label=method)
        ax.set_title(f"{design}, pi = {pi}")
        ax.set_xlabel("n = m")
        ax.set_ylabel("accuracy on a fresh target sample (%)")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize="small")
    fig.suptitle("Approximate Bayes classifier (Liu et al., Figure 4 design); bars: 2 MC SE")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["run", "summarise"])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 3000, 4000, 5000])
    ap.add_argument("--no-probe", action="store_true")
    a = ap.parse_args(argv)
    raw_path = OUT / "detm_classifier_raw.csv"
    if a.what == "run":
        run(a.reps, a.sizes, raw_path, probe=not a.no_probe)
    raw = pd.read_csv(raw_path)
    tab = summarise(raw)
    write(tab, OUT / "detm_classifier.md", OUT / "detm_classifier.png")
    print(tab.to_string(index=False))


if __name__ == "__main__":
    sys.exit(main())
