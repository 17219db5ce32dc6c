"""Demo: ``python -m puinfer`` runs the main analyses on the bundled data and prints them."""

from __future__ import annotations

import sys


def _section(title: str) -> None:
    print("\n" + "#" * 78 + f"\n# {title}\n" + "#" * 78)


def demo_pu() -> None:
    """SETM and DETM on the Mobile Phone PU split (seed 004, Section 5.2)."""
    import warnings

    import numpy as np

    from . import DETM, SETM
    from .datasets import MOBILE_FEATURES, load_mobile_pu

    _section("PU data: SETM and DETM on the Mobile Phone data (seed 004, Section 5.2)")
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
    print(setm.summary())
    print()
    print(detm.summary())
    print()
    print(detm.test_scar())
    ci = detm.conf_int_pi(0.95)
    print(f"\npi-hat = {detm.pi:.4f}, 95% profile EL interval [{ci['lower']:.4f}, "
          f"{ci['upper']:.4f}]   (paper: 0.667, [0.6425, 0.6903]; truth 0.6667)")
    y = df.loc[df.labeled == 0, "y_true"].to_numpy()
    acc = np.mean((detm.predict().to_numpy() > 0.5) == y)
    print(f"Accuracy of the approximate Bayes classifier on the target rows: {acc:.3f}")


DEMOS = [demo_pu]


def main(argv=None) -> int:
    import warnings

    warnings.simplefilter("default")
    for demo in DEMOS:
        demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
