# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
# ---

# %% [markdown]
# # Probabilities after negative down-sampling: the Hillstrom conversions
#
# **Question.** Conversions are rare: in Kevin Hillstrom's e-mail experiment 0.9% of 64,000
# customers bought something in the two weeks after the campaign. A model of rare events is
# often trained on all the positives and a small random share `w` of the negatives, which
# costs little information and much less time. Its predicted probabilities are then far too
# high: the model has learned the training set's base rate. How are they corrected, do the
# corrected probabilities hold up on held-out customers, and what did the down-sampling cost?
#
# **The correction** (Haupt, *Recalibration after Negative Sampling*). Down-sampling the
# negatives changes the base rate from `b` to `b'` but not the distribution of the features
# within each class: it is a prior shift. By Bayes' theorem a prediction `p'` of the model
# trained on the down-sampled data becomes
#
# $$ p = \frac{p'}{p' + (1 - p') / w}, \qquad w = \frac{b}{1 - b} \cdot \frac{1 - b'}{b'} ,$$
#
# which is Lemma 3 of Ziegler and Czyż (`pu.adjust_prior`) with the old prior `b'` and the
# new prior `b`. `pu.downsampling_correction` computes it from `w` or from the two base rates.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats
from scipy.special import expit, logit

import puinfer as pu

df = pu.datasets.load_hillstrom()
print(f"{len(df):,} customers, conversion rate {df['conversion'].mean():.4f}")

# %% [markdown]
# ## Training on all rows and on down-sampled rows
#
# Half of the customers (at random) train the models, the other half test them. The model is
# a logistic regression of `conversion` on the customer's history and the campaign. One fit
# uses every training row; the other all the training conversions and each non-converting
# customer with probability `w = 0.05` (about 6% of the rows).

# %%
rng = np.random.default_rng(2024)
is_test = rng.random(len(df)) < 0.5
train, test = df[~is_test], df[is_test]
formula = ("conversion ~ np.log1p(history) + recency + mens + womens + newbie + C(zip_code)"
           " + C(channel) + C(segment)")
w = 0.05
kept = train[(train["conversion"] == 1) | (rng.random(len(train)) < w)]
full = smf.logit(formula, data=train).fit(disp=0)
down = smf.logit(formula, data=kept).fit(disp=0)
b, b_kept = train["conversion"].mean(), kept["conversion"].mean()
print(f"training rows: all {len(train):,} (base rate {b:.4f}); down-sampled {len(kept):,} "
      f"(base rate {b_kept:.4f})")

# %% [markdown]
# ## The correction on the test half
#
# The down-sampled model's predictions average about 15%, the training set's base rate; the
# correction brings them back to the population's. The base rates give the realised `w` (the
# share of negatives actually kept, slightly off 0.05 by chance), and with it the same
# correction as the design's `w` to within that difference.

# %%
y = test["conversion"]
p_full = full.predict(test)
p_down = down.predict(test)
forecasts = {
    "all rows": p_full,
    "down-sampled, raw": p_down,
    "down-sampled, corrected (w = 0.05)": pu.downsampling_correction(p_down, w),
    "down-sampled, corrected (base rates)": pu.downsampling_correction(
        p_down, base_rate=b, sampled_base_rate=b_kept),
}
print(f"realised w = {b / (1 - b) * (1 - b_kept) / b_kept:.4f}")
table = pu.metrics.compare_calibration(y, forecasts, n_bins=10)
table.insert(0, "mean prediction", [p.mean() for p in forecasts.values()])
print(f"observed conversion rate on the test half: {y.mean():.5f}")
print(table.round(5).to_string())

# %% [markdown]
# After the correction the down-sampled model is as good as the model trained on all rows by
# every score: Brier score and log-loss equal to the fourth digit, the calibration errors
# (KS, equal-mass ECE) of the same size. It was trained on 6% of the rows.
#
# `downsampling_correction` is `adjust_prior` with the old prior `b'` and the new prior `b`,
# and for a logistic regression it is the *prior correction* of King and Zeng (2001): the
# intercept moved by `log w`, the slopes untouched.

# %%
p_cor = forecasts["down-sampled, corrected (base rates)"]
same = pu.adjust_prior(p_down, old_prior=b_kept, new_prior=b)
w_real = b / (1 - b) * (1 - b_kept) / b_kept
shifted = expit(logit(p_down) + np.log(w_real))
print(f"max |downsampling_correction - adjust_prior|     = {np.max(np.abs(p_cor - same)):.1e}")
print(f"max |downsampling_correction - intercept + log w| = {np.max(np.abs(p_cor - shifted)):.1e}")

# %% [markdown]
# ## Calibration on held-out customers, with exact intervals
#
# Reliability diagrams on the test half: the observed conversion rate in ten groups of equal
# size against the mean prediction there, with exact (Clopper-Pearson) 95% intervals. A
# test of calibration in the large compares the number of conversions with the sum of the
# predictions (its variance `sum p (1 - p)` under calibration).

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
pu.metrics.plot_reliability(y, p_down, n_bins=10, label="down-sampled, raw", ax=axes[0],
                            color="C3")
axes[0].set_title("Before the correction")
for name, p, c in [("all rows", p_full, "C0"), ("down-sampled, corrected", p_cor, "C1")]:
    pu.metrics.plot_reliability(y, p, n_bins=10, label=name, ax=axes[1], color=c)
axes[1].set_title("After the correction")
for ax in axes:
    ax.legend(loc="upper left")
fig.tight_layout()
fig.savefig("prior_shift_downsampling.png", dpi=80)


def calibration_in_the_large(y, p):
    """Observed minus expected conversions, as a z statistic and a two-sided p-value."""
    observed, expected, var = y.sum(), p.sum(), (p * (1 - p)).sum()
    z = (observed - expected) / np.sqrt(var)
    return pd.Series({"observed": observed, "expected": expected, "z": z,
                      "p-value": 2 * stats.norm.sf(abs(z))})


print(pd.DataFrame({name: calibration_in_the_large(y, p) for name, p in
                    [("all rows", p_full), ("down-sampled, raw", p_down),
                     ("down-sampled, corrected", p_cor)]}).T.round(4))

# %% [markdown]
# The raw predictions expect about sixteen times the conversions observed; the corrected
# ones, like the model trained on all rows, are consistent with the test half's count.
#
# ## What the down-sampling cost
#
# Under a correctly specified model the slopes are the same parameters in both fits (only the
# intercept moves, by `log w`), so the down-sampled estimates differ from the full ones by
# sampling error alone; a misspecified model's slopes would differ, which is what the test
# checks. Because the
# full fit is efficient and the down-sampled rows are a subset of its rows, the variance of
# the difference is the difference of the variances (Hausman, 1978): a test of "the same
# slopes" and a measure of the information lost.

# %%
slopes = [k for k in full.params.index if k != "Intercept"]
diff = down.params[slopes] - full.params[slopes]
V = down.cov_params().loc[slopes, slopes] - full.cov_params().loc[slopes, slopes]
stat = float(diff @ np.linalg.solve(V, diff))
print(f"Hausman test of equal slopes: chi2 = {stat:.2f} on {len(slopes)} df, "
      f"p = {stats.chi2.sf(stat, len(slopes)):.3f}")
cost = pd.DataFrame({"all rows": full.params, "SE": full.bse,
                     "down-sampled": down.params, "SE ": down.bse})
cost.loc["Intercept", "down-sampled"] += np.log(w_real)  # on the population's scale
cost["SE ratio"] = down.bse / full.bse
print(cost.round(3).to_string())

# %% [markdown]
# With 6% of the rows the standard errors of the slopes grow by only about 10%: nearly all the
# information about a rare outcome is in its positives. (The intercept's row shows the
# down-sampled intercept plus `log w`, the King-Zeng correction, on the population's scale.)
#
# ## Repeating the down-sampling
#
# One down-sample is one draw. Repeating it shows that the corrected predictions are right on
# average and how much they vary from draw to draw.

# %%
n_rep = 30 if os.environ.get("PUINFER_VIGNETTE_TEST") else 100
rows = []
for r in range(n_rep):
    g = np.random.default_rng([2024, r])
    sub = train[(train["conversion"] == 1) | (g.random(len(train)) < w)]
    fit_r = smf.logit(formula, data=sub).fit(disp=0)
    p_r = pu.downsampling_correction(fit_r.predict(test), base_rate=b,
                                     sampled_base_rate=sub["conversion"].mean())
    rows.append({"mean prediction": p_r.mean(), "log-loss": pu.metrics.log_loss(y, p_r)})
reps = pd.DataFrame(rows)
print(reps.describe().loc[["mean", "std", "min", "max"]].round(5))
print(f"all rows: mean prediction {p_full.mean():.5f}, "
      f"log-loss {pu.metrics.log_loss(y, p_full):.5f}")

# %% [markdown]
# **Reading.** Over the repeated down-samples the corrected mean prediction averages the
# full model's to within its spread, and the log-loss stays within a few ten-thousandths of
# the full model's. The correction assumes only what down-sampling guarantees: negatives
# dropped at random, whatever their features. It does *not* fix a model that was
# miscalibrated before the down-sampling (calibrate it first, e.g. with
# `pu.LogisticCalibrator` or {doc}`CalEM <../guide/calem>`), and it needs the kept share `w`
# (or the two base rates). Where the field's base rate is unknown, estimate it with its
# uncertainty by URC ({doc}`urc_base_rates`) before adjusting the prior.
