# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
# ---

# %% [markdown]
# # Base rates in the field
#
# A spam filter was trained and calibrated in the lab on a **balanced** set of e-mails: half
# spam, half not. Deployed on real mailboxes, it sees far less spam, and the share differs from
# mailbox to mailbox. Nobody labels the field e-mails. Two questions:
#
# 1. **What is the spam share (the base rate) in each mailbox, with a confidence interval?**
#    Averaging the filter's predictions does not answer it: under a prior shift the mean
#    prediction is biased towards the lab's 50% (Theorem 5 of Ziegler & Czyz, *Unsupervised
#    Recalibration*).
# 2. **How should the filter's probabilities be corrected for each mailbox?** Lemma 3: reweight
#    by the ratio of the field and lab base rates.
#
# Unsupervised recalibration (URC) answers both from the predictions alone. It bins the
# predictions into cells of equal lab probability (eq. (11)), learns in the lab how each class
# spreads over the cells (`M_A`, eq. (9)), and finds the base rates whose mixture of the class
# histograms best explains each mailbox's histogram (Definition 8). It rests on one assumption,
# Axiom 2: *within each class*, the predictions are distributed alike in lab and field. A
# goodness-of-fit test checks it.

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import puinfer as pu
from puinfer.simulate.urc import simulate_urc, spambase_lab_field

# %% [markdown]
# ## The data
#
# The bundled UCI Spambase e-mails (`pu.datasets.load_spambase()`), split at random: a logistic
# regression on six features is trained on 500 + 500 e-mails; the **lab** set is another
# 200 spam + 200 non-spam; the **field** is three mailboxes of the remaining e-mails with spam
# shares of 5%, 15% and 40%. We keep the field labels only to check the answers.

# %%
d = spambase_lab_field(seed=42)
field = pd.DataFrame({"mailbox": d.field_group, "pred": d.field_pred, "spam": d.field_y})
print(field.groupby("mailbox").agg(n=("spam", "size"), true_share=("spam", "mean"),
                                   mean_prediction=("pred", "mean")))

# %% [markdown]
# The mean prediction (the naive estimator) lies between the truth and 50% in every mailbox.

# %% [markdown]
# ## Global URC: one base rate for all the field data

# %%
# the lab set holds 200 spam and 200 non-spam e-mails by design: stratified
model = pu.URC(d.lab_pred, d.lab_y, n_bins=4, lab_design="stratified")
print(model.lab_counts)
glob = model.fit(d.field_pred)
print(glob.summary())

# %% [markdown]
# The estimate is close to the true overall share (about 20%), the naive mean (31%) is not.
# The interval is a **profile-likelihood** interval: the limits solve
# `2 {l(p_hat) - l_profile(p)} = chi2_{1, 0.95}` by root-finding.
#
# By default URC uses the **joint likelihood**: the lab histograms are data too, so the
# interval accounts for the lab set having only 400 e-mails. The paper's likelihood treats
# `M_A` as known; its interval is much narrower, too narrow: in the coverage study
# (`studies/urc_studies.py`, lab 200, field 5000) it covers the truth about a third of the
# time, against 94% for the joint one.
#
# The joint likelihood also carries, by default, **lab pseudo-counts**: Perks' 1/|A| in every
# cell, one pseudo-item per class (the summary's "Lab pseudo-counts per cell" line): with small
# lab sets the maximum-likelihood profile statistic runs above its chi-square reference and the
# intervals fall short; the pseudo-counts bring them close to 95% without biasing the
# estimates much under a shift (`studies/results/urc_pc_default.md`, a declared study of five
# candidates). `fit(lab_pseudocount=0)` gives maximum likelihood. For the same reason the
# default number of cells shrinks for small lab sets (at least 15 lab items per class and cell
# on average).

# %%
paper = model.fit(d.field_pred, likelihood="fixed")
print(pd.concat({"joint": glob.conf_int(), "fixed M_A (paper)": paper.conf_int()}))

# %% [markdown]
# Two plots: the profile likelihood-ratio curve with the cut-off, and the field histogram with
# the fitted mixture and what the lab base rates would predict.

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
glob.plot_profile(ax=axes[0], true_value=float(d.field_y.mean()))
glob.plot_histogram(ax=axes[1])
fig.tight_layout()
fig.savefig("urc_global.png", dpi=80)

# %% [markdown]
# ## Tests
#
# * **No shift**: are the field base rates the lab's? A likelihood-ratio test (under the joint
#   likelihood `M_A` is re-estimated under the null). The lab set here is balanced by design
#   (`lab_design="stratified"`), so "the lab's" base rates are the fixed 50/50. A lab set drawn
#   at random from a population (the default, `lab_design="random"`) makes it a two-sample
#   test of field = lab *population* base rates, which allows for the sampling error of the lab
#   shares.
# * **Goodness of fit** of the fitted histogram, `|A| - k = 2` degrees of freedom per group:
#   a test of Axiom 2, the assumption everything rests on.

# %%
print(glob.test_no_shift())
print()
print(glob.gof())

# %% [markdown]
# ## Local URC: one base rate per mailbox
#
# Algorithm 1 of the paper: the same `M_A` for all mailboxes, a base rate for each. The joint
# likelihood uses the lab counts and all mailboxes' histograms together.

# %%
loc = model.fit(d.field_pred, groups=field["mailbox"])
print(loc.summary())

# %% [markdown]
# The intervals cover the true shares (5%, 15%, 40%); mailbox A's reaches 0, so it is reported
# one-sided. The likelihood-ratio test of equal base rates rejects clearly, and the
# goodness-of-fit test per mailbox does not reject Axiom 2:

# %%
print(loc.test_equal_base_rates())
print(loc.gof(by_group=True))

# %% [markdown]
# ## Recalibration
#
# Lemma 3 with each mailbox's estimated base rate: `loc.recalibrate(pred, groups=...)`.
# Accuracy of the hard classifier (threshold 0.5) and Brier score, before and after, global
# (one base rate) and local (per mailbox):

# %%
y = d.field_y
variants = {
    "lab-calibrated filter": d.field_pred,
    "global URC": glob.recalibrate(d.field_pred),
    "local URC": loc.recalibrate(d.field_pred, groups=field["mailbox"]),
}
rows = []
for name, p in variants.items():
    rows.append({"predictions": name, "accuracy": np.mean((p > 0.5) == y),
                 "Brier": np.mean((p - y) ** 2),
                 "log-loss": -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))})
print(pd.DataFrame(rows).set_index("predictions").round(4))

# %% [markdown]
# Both recalibrations improve all three scores; local URC also sharpens the filter (each
# mailbox gets its own prior), which global recalibration cannot do.
#
# ## A check where the truth is known exactly
#
# A simulated classifier of modest accuracy (the Bayes classifier of two unit-variance normal
# scores 1.2 apart, AUC 0.80), a balanced lab set of 2000 and 20,000 field predictions with
# base rate 0.2:

# %%
s = simulate_urc(n_lab=2000, n_field=20000, lab_base_rates=0.5, field_base_rate=0.2,
                 separation=1.2, rng=np.random.default_rng(2026))
r = pu.URC(s.lab_pred, s.lab_y).fit(s.field_pred)
print(f"URC estimate {r.base_rate.iloc[0]:.4f}, 95% interval "
      f"[{r.conf_int().iloc[0, 0]:.4f}, {r.conf_int().iloc[0, 1]:.4f}]; "
      f"naive mean prediction {r.naive.iloc[0, 1]:.4f}; truth 0.2")

# %% [markdown]
# ## Prior-shift corrections without URC
#
# When the new base rate is known, no estimation is needed: `pu.adjust_prior` is Lemma 3, and
# `pu.downsampling_correction` undoes the training of a model on data whose negatives were
# kept at rate `w` (Haupt, *Recalibration after Negative Sampling*):

# %%
p = np.array([0.1, 0.5, 0.9])
print(pu.adjust_prior(p, old_prior=0.5, new_prior=0.05))
print(pu.downsampling_correction(p, w=1 / 9))
print(pu.downsampling_correction(p, base_rate=0.1, sampled_base_rate=0.5))

# %%
plt.close("all")
