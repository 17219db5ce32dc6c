"""Demo: ``python -m puinfer`` runs the main analyses on the bundled data and prints them."""

from __future__ import annotations

import sys


def _section(title: str) -> None:
    print("\n" + "#" * 78 + f"\n# {title}\n" + "#" * 78)


def demo_pu() -> None:
    """SETM and DETM on the Mobile Phone PU split (Liu et al., Section 5.2)."""
    import warnings

    import numpy as np

    from . import DETM, SETM
    from .datasets import MOBILE_FEATURES, load_mobile_pu

    _section("PU data: SETM and DETM on the Mobile Phone data (Liu et al., Section 5.2)")
    df = load_mobile_pu()
    print("Source: 500 phones of price class 2 (labeled positives); target: 1500 unlabeled phones "
          "of classes 0, 1 (positives) and 3 (negatives); true pi = 2/3.\n")
    formula = "labeled ~ " + " + ".join(MOBILE_FEATURES)
    with warnings.catch_warnings():
        # the classes are nearly separable; the ridge keeps the fit finite (recorded in the
        # summaries below)
        warnings.simplefilter("ignore")
        setm = SETM.from_formula(formula, data=df).fit()
        detm = DETM.from_formula(formula, data=df).fit(label_rule="pi>0.5")
        # DETM's summary fits the SCAR test's null model (SETM), which warns the same: the
        # summary prints it with the others
        print(setm.summary())
        print()
        print(detm.summary())
    print()
    print(detm.test_scar())
    ci = detm.conf_int_pi(method="profile")
    cb = detm.conf_int_pi()
    print(f"\npi-hat = {detm.pi:.4f}, 95% profile EL interval [{ci['lower']:.4f}, "
          f"{ci['upper']:.4f}]   (paper: 0.667, [0.6425, 0.6903]; truth 0.6667); "
          f"bootstrap-calibrated (the default): [{cb['lower']:.4f}, {cb['upper']:.4f}]")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the LabelAmbiguityWarning is recorded and printed
        kl = DETM.from_formula(formula, data=df).fit()
    print(f"The default label rule (KL, Remark 1) compared {kl.label_check.compared}: "
          f"{'weakly determined' if kl.label_check.near_tie else 'clear'} (pi = {kl.pi:.4f}); "
          "the paper's labelling is label_rule='pi>0.5'.")
    y = df.loc[df.labeled == 0, "y_true"].to_numpy()
    acc = np.mean((detm.predict().to_numpy() > 0.5) == y)
    print(f"Accuracy of the approximate Bayes classifier on the target rows: {acc:.3f}")


def demo_calem() -> None:
    """CalEM on the Hillstrom e-mail data (Sergazinov et al., Section 5.2): baseline vs CalEM."""
    _section("Biased labels: CalEM calibration on the Hillstrom e-mail data (Sergazinov et al., "
             "Sec. 5.2)")
    import numpy as np
    import pandas as pd
    import statsmodels.api as sm

    from .datasets import load_hillstrom
    from .models.calem import CalEM

    df = load_hillstrom()
    ctrl, trt = df[df["segment"] == "No E-Mail"], df[df["segment"] != "No E-Mail"]
    print(f"visit rate: control {ctrl['visit'].mean():.4f} (n = {len(ctrl)}), "
          f"e-mailed {trt['visit'].mean():.4f} (n = {len(trt)})")

    def design(d):
        X = d[["recency", "mens", "womens", "newbie"]].astype(float)
        X["log_history"] = np.log1p(d["history"])
        X = pd.concat([X, pd.get_dummies(d[["zip_code", "channel"]], drop_first=True,
                                         dtype=float)], axis=1)
        return sm.add_constant(X, has_constant="add").to_numpy()

    rng = np.random.default_rng(2008)
    idx = rng.permutation(len(ctrl))
    n_tr, n_cal = int(0.9 * len(ctrl)), int(0.05 * len(ctrl))
    train, cal, test = (ctrl.iloc[idx[:n_tr]], ctrl.iloc[idx[n_tr:n_tr + n_cal]],
                        ctrl.iloc[idx[n_tr + n_cal:]])
    clf = sm.Logit(train["visit"].to_numpy(), design(train)).fit(disp=0)
    print("classifier: logistic regression on 90% of the control customers; calibration on "
          f"{len(cal)} clean control rows + {len(trt)} e-mailed rows; test on {len(test)}")
    res = CalEM(np.r_[clf.predict(design(cal)), clf.predict(design(trt))],
                np.r_[cal["visit"], trt["visit"]],
                np.r_[np.zeros(len(cal)), np.ones(len(trt))], calibrator="spline").fit()
    print(res.summary())
    s_test = clf.predict(design(test))
    print("\nTest-set calibration metrics:")
    print(res.metrics(s_test, test["visit"].to_numpy()).round(5).to_string())


def demo_urc() -> None:
    """URC on the bundled UCI Spambase data: spam shares of three mailboxes (Ziegler and Czyż,
    "Unsupervised Recalibration")."""
    import numpy as np

    from . import URC
    from .simulate.urc import spambase_lab_field

    _section("URC: spam base rates in three mailboxes from a classifier's predictions "
             "(Ziegler and Czyż, UCI Spambase)")
    d = spambase_lab_field(seed=42)
    print("A logistic classifier trained and calibrated on balanced e-mails (lab: 200 spam + "
          "200 non-spam) is applied to three mailboxes whose spam shares are 5%, 15%, 40%.")
    # (200 + 200 by design: the no-shift test's null is the lab sample's shares, as in the
    # README; session 67's audit found the demo fitting the default random design)
    res = URC(d.lab_pred, d.lab_y, lab_design="stratified").fit(d.field_pred,
                                                                 groups=d.field_group)
    print(res.summary())
    rec = res.recalibrate(d.field_pred, groups=d.field_group)
    y = d.field_y
    shares = ", ".join(f"{g} {r:.3f}" for g, r in zip(res.groups, d.field_base_rates[:, 1],
                                                      strict=True))
    print(f"true spam shares: {shares}")
    print(f"accuracy (threshold 0.5): {np.mean((d.field_pred > 0.5) == y):.4f} before, "
          f"{np.mean((rec > 0.5) == y):.4f} after recalibration")
    print(f"Brier score: {np.mean((d.field_pred - y) ** 2):.4f} before, "
          f"{np.mean((rec - y) ** 2):.4f} after recalibration")


def demo_prior() -> None:
    """The down-sampling correction (Haupt) on the Hillstrom conversions: a logistic regression
    trained on all conversions and 5% of the other customers, checked on held-out customers
    (the vignette ``prior_shift_downsampling`` goes further)."""
    import numpy as np
    import pandas as pd
    import statsmodels.formula.api as smf

    from . import downsampling_correction
    from .datasets import load_hillstrom
    from .metrics import compare_calibration

    _section("Prior shift: probabilities after negative down-sampling (Haupt; Hillstrom "
             "conversions)")
    df = load_hillstrom()
    rng = np.random.default_rng(2024)
    is_test = rng.random(len(df)) < 0.5
    train, test = df[~is_test], df[is_test]
    kept = train[(train["conversion"] == 1) | (rng.random(len(train)) < 0.05)]
    formula = ("conversion ~ np.log1p(history) + recency + mens + womens + newbie + "
               "C(zip_code) + C(channel) + C(segment)")
    b, b_kept = train["conversion"].mean(), kept["conversion"].mean()
    print(f"A logistic regression of conversion (base rate {b:.4f} in the {len(train):,} "
          f"training customers) fitted on all of them and on the {len(kept):,} left after "
          f"keeping each non-converter with probability 0.05 (base rate {b_kept:.4f}); "
          f"scored on {len(test):,} held-out customers.")
    full = smf.logit(formula, data=train).fit(disp=0).predict(test)
    down = smf.logit(formula, data=kept).fit(disp=0).predict(test)
    forecasts = {"all rows": full, "down-sampled, raw": down,
                 "down-sampled, corrected": downsampling_correction(
                     down, base_rate=b, sampled_base_rate=b_kept)}
    table = compare_calibration(test["conversion"], forecasts, n_bins=10)
    table.insert(0, "mean prediction", [p.mean() for p in forecasts.values()])
    with pd.option_context("display.width", 120):
        print(table.round(5).to_string())
    print(f"observed conversion rate of the held-out customers: {test['conversion'].mean():.5f}")


DEMOS = {"pu": demo_pu, "calem": demo_calem, "urc": demo_urc, "prior": demo_prior}


def main(argv=None) -> int:
    import argparse
    import warnings

    parser = argparse.ArgumentParser(
        prog="python -m puinfer", description=__doc__.replace("``", "").strip() + " The PU section "
        "takes about 20 seconds on one core (its default intervals refit 199 bootstrap "
        "resamples per model).")
    parser.add_argument("sections", nargs="*", metavar="SECTION",
                        help=f"which analyses to run, of {list(DEMOS)} (default: all)")
    args = parser.parse_args(argv)
    unknown = [s for s in args.sections if s not in DEMOS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {list(DEMOS)}")
    warnings.simplefilter("default")
    for name in dict.fromkeys(args.sections) or DEMOS:  # (each once, in the order given)
        DEMOS[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
