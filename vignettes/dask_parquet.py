# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
# ---

# %% [markdown]
# # From Parquet to URC and CalEM on a cluster
#
# The field data of a deployed classifier, or the logs of an uplift experiment, outgrow one
# machine long before the questions change: *what is the base rate in each region, with an
# interval?* (URC) and *what is the calibration curve, given a small clean control set and a
# large set of biased labels?* (CalEM). Both fits need only **sums over rows** at each
# iteration -- histogram counts for URC; the gradient and Hessian of a low-dimensional
# likelihood for CalEM -- so puinfer computes them block by block on a Dask cluster, with the
# very functions it uses in memory, and returns the usual results.
#
# This vignette writes two synthetic data sets to Parquet, starts a local cluster of two
# worker processes with a memory limit each, fits both models from the files, and checks
# that the answers are those of the in-memory fit on the same rows. (It needs the optional
# extra: `pip install "puinfer[dask]"`.)

# %%
import os
import tempfile
import warnings

import matplotlib

if os.environ.get("PUINFER_VIGNETTE_TEST"):
    matplotlib.use("Agg")
import dask.dataframe as dd
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from distributed import Client, LocalCluster

import puinfer as pu
from puinfer.simulate.calibration import simulate_calem
from puinfer.simulate.urc import simulate_urc

FAST = os.environ.get("PUINFER_VIGNETTE_TEST") == "1"
N_FILES, ROWS_PER_FILE = (3, 20_000) if FAST else (10, 200_000)
root = tempfile.mkdtemp(prefix="puinfer-vignette-")

# %% [markdown]
# ## The cluster
#
# Any Dask scheduler works; here a `LocalCluster` with two worker processes, one thread and
# 1 GB each. Once a `Client` exists, puinfer's fits run on it. (Run as a script, e.g. by the
# test suite, this file is `__main__`, from which worker processes cannot be spawned without
# an `if __name__ == "__main__"` guard; there the workers are threads. `tests/test_dask.py`
# runs the same fits on worker processes.)

# %%
in_script = "__file__" in globals()
cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=not in_script,
                       memory_limit="1GB", dashboard_address=":0", silence_logs=50)
client = Client(cluster)

# %% [markdown]
# ## URC: base rates in three regions
#
# The lab set is small and stays in memory: 2,000 labelled predictions of a classifier
# calibrated on a balanced lab population. The field predictions, with the region of each
# item, are written to Parquet one file at a time (they would come from a data lake).

# %%
lab = simulate_urc(n_lab=2000, n_field=10, field_base_rate=0.2, rng=np.random.default_rng(0))
regions = np.array(["east", "north", "south"])
truth = [0.10, 0.20, 0.35]
for i in range(N_FILES):
    sim = simulate_urc(n_lab=10, n_field=[ROWS_PER_FILE // 3] * 3, field_base_rate=truth,
                       rng=np.random.default_rng(100 + i))
    pd.DataFrame({"pred": sim.field_pred, "region": regions[sim.field_group]}).to_parquet(
        f"{root}/field-{i:03d}.parquet", index=False)

field = dd.read_parquet(f"{root}/field-*.parquet")
print(f"{field.npartitions} partitions, {len(field):,} field predictions")

# %% [markdown]
# The fit reads each partition once, bins its predictions into the lab partition's cells and
# counts them per region; the counts are added up the tree, and everything after that -- the
# likelihood, profile intervals, tests -- is the in-memory code on the histogram.

# %%
urc = pu.URC(lab.lab_pred, lab.lab_y)
u = urc.fit(field["pred"], groups=field["region"])
print(u.summary())

# %%
print(u.conf_int())
print(u.test_equal_base_rates())

# %% [markdown]
# The true base rates are 0.10, 0.20 and 0.35; the naive mean prediction (in the summary) is
# pulled towards the lab's 0.5. Read in memory, the same rows give the same fit -- the counts
# are integers, so equal exactly:

# %%
mem = pd.concat((pd.read_parquet(f"{root}/field-{i:03d}.parquet") for i in range(N_FILES)),
                ignore_index=True)
u_mem = urc.fit(mem["pred"], groups=mem["region"])
print("largest difference of the base rates:",
      float(np.max(np.abs(u_mem.params - u.params))))

# %% [markdown]
# ## CalEM: calibration from a small control set and a large biased set
#
# An uplift experiment: 1% of the rows are a control group with clean labels; the rest were
# treated, and the treatment turned some negatives into positives. Only the control rows are
# brought into memory; the treated rows are read from Parquet at every pass.

# %%
for i in range(N_FILES):
    d = simulate_calem(ROWS_PER_FILE, event_prob=0.3, miscalibration="g1", transition="h1",
                       clean_share=0.01, rng=np.random.default_rng(200 + i))
    d[["score", "label", "treated"]].to_parquet(f"{root}/logs-{i:03d}.parquet", index=False)

logs = dd.read_parquet(f"{root}/logs-*.parquet")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # a clean-up of the simulated scores at 0 or 1
    model = pu.CalEM(logs["score"], logs["label"], logs["treated"], calibrator="spline")
    c = model.fit()
print(c.summary())

# %% [markdown]
# The spline's knots are the exact quantiles of all scores (found in two passes), every
# Newton step is one pass returning the value, gradient and Hessian of CalEM's surrogate
# likelihood, and the biased fit, the pooled fit behind the bias test and the sandwich
# standard errors are block sums too:

# %%
print(f"passes over the data: {model._dask.passes} "
      f"({c.convergence.iterations} Newton iterations of the fixed point)")
print(c.test_bias())

# %% [markdown]
# The same rows in memory give the same estimates, to rounding (the sums are added in
# another order):

# %%
logs_mem = pd.concat((pd.read_parquet(f"{root}/logs-{i:03d}.parquet") for i in range(N_FILES)),
                     ignore_index=True)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    c_mem = pu.CalEM(logs_mem["score"], logs_mem["label"], logs_mem["treated"],
                     calibrator="spline").fit()
rel = np.max(np.abs(c.params - c_mem.params) / np.abs(c_mem.params))
print(f"largest relative difference of the parameters: {rel:.1e}")
assert rel < 1e-9

# %% [markdown]
# Predictions on a Dask collection stay lazy, partition by partition; the results object is
# the usual one, so the plots work as in memory.

# %%
calibrated = c.predict(logs["score"])
print(calibrated.head())
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
c.plot_calibration(ax=axes[0])
c.plot_treatment_effect(ax=axes[1])
fig.tight_layout()
plt.show()

# %%
client.close()
cluster.close()
