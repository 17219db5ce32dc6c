"""Bundled real datasets and their loaders (provenance in ``../shared/data/README.md``).

* ``mobile_price_train.csv`` -- Kaggle "Mobile Price Classification" (Abhishek Sharma),
  2000 phones x 20 features + ``price_range`` (0..3), byte-identical to the Kaggle file
  (SHA-256 f9e8cd31...c624).
* ``hillstrom.csv.gz`` -- Kevin Hillstrom's MineThatData e-mail experiment (2008), 64,000
  customers; gzip of the publisher's original CSV (SHA-256 of the uncompressed file
  0e589332...aece).
* ``spambase.csv.gz`` -- UCI Spambase (Hopkins, Reeber, Forman, Suermondt, HP Labs 1999),
  4601 e-mails x 57 features + ``spam``; gzip of ``../shared/data/spambase.csv`` (SHA-256 of
  the uncompressed file 43cbe9a4...ab4b).
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd

__all__ = ["load_mobile_price", "load_mobile_pu", "load_hillstrom", "load_spambase",
           "MOBILE_FEATURES"]

MOBILE_FEATURES = [
    "battery_power", "blue", "clock_speed", "dual_sim", "fc", "four_g", "int_memory", "m_dep",
    "mobile_wt", "n_cores", "pc", "px_height", "px_width", "ram", "sc_h", "sc_w", "talk_time",
    "three_g", "touch_screen", "wifi",
]


def _open(name):
    return resources.files(__name__).joinpath(name).open("rb")


def load_mobile_price() -> pd.DataFrame:
    """The Mobile Price Classification data: 2000 rows, 20 features and ``price_range``.

    Returns
    -------
    pandas.DataFrame
        A fresh copy on every call.
    """
    with _open("mobile_price_train.csv") as f:
        return pd.read_csv(f)


def load_mobile_pu() -> pd.DataFrame:
    """The positive-unlabeled split of the Mobile Phone data used in Liu et al., Section 5.2.

    Class 2 is the labeled **source** positive sample (n = 500); classes 0 and 1 are the target
    positives (low-end phones, 1000) and class 3 the target negatives (500), so that the
    unlabeled **target** sample has m = 1500 and true mixture proportion pi = 2/3.

    Returns
    -------
    pandas.DataFrame
        The 20 features, ``price_range``, ``labeled`` (1 = source, 0 = target) and ``y_true``
        (the true target label: 1 for classes 0-1, 0 for class 3; 1 for the source rows,
        which are positives by construction). Use ``y_true`` only to evaluate a fit.

    Notes
    -----
    Section 5.2's text swaps the target's counts ("m = 1500, where 500 are positive and 1000
    are negative"); its own construction (classes 0 and 1 merged into the target positives,
    class 3 the negatives, 500 rows per class) and its pi_0 = 2/3 give 1,000 positives and
    500 negatives, as here.
    """
    df = load_mobile_price()
    df["labeled"] = (df["price_range"] == 2).astype(int)
    df["y_true"] = (df["price_range"] != 3).astype(int)
    # source rows first, then the target, as in the paper's (x_1..x_n, x_{n+1}..x_N)
    order = np.argsort(-df["labeled"].to_numpy(), kind="stable")
    return df.iloc[order].reset_index(drop=True)


def load_hillstrom() -> pd.DataFrame:
    """Kevin Hillstrom's MineThatData e-mail experiment (64,000 customers, 12 columns).

    ``segment`` is one of ``"Mens E-Mail"``, ``"Womens E-Mail"``, ``"No E-Mail"`` (control);
    outcomes ``visit``, ``conversion``, ``spend``.
    """
    with _open("hillstrom.csv.gz") as f:
        return pd.read_csv(f, compression="gzip")


def load_spambase() -> pd.DataFrame:
    """UCI Spambase: 4601 e-mails, 57 word/character/capital-run features and ``spam`` (0/1).

    1813 spam and 2788 non-spam e-mails; no missing values. Provenance and checksums in
    ``../shared/data/README.md``.

    Returns
    -------
    pandas.DataFrame
        A fresh copy on every call.
    """
    with _open("spambase.csv.gz") as f:
        return pd.read_csv(f, compression="gzip")
