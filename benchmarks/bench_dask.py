"""Benchmark: URC and CalEM fitted out of core from Parquet on a Dask LocalCluster (issue 16).

Writes synthetic data sets to Parquet in row chunks (never all in memory), then fits

* URC (binary, three groups) on ``--urc`` field predictions: one pass (the field histogram);
* CalEM (spline calibrator, 5 knots) on ``--calem`` rows, ``--control-share`` of them
  control rows (in memory), the rest treated (read from Parquet at every pass);

on a ``distributed.LocalCluster`` (``--workers`` processes, one thread each, a memory limit
per worker of ``--memory-limit``), and reports the wall time, the passes over the data, the
peak resident memory of each worker process (``ru_maxrss``) and, for the ratio, the same fit's
cost in memory with numpy on the same rows (if ``--compare`` rows fit in memory): for URC the
field histogram, for CalEM one evaluation of the fixed-point sums (gradient and Hessian) on
the in-memory design, against one Dask pass (the fit's wall time over its passes, which
includes reading Parquet and building the spline design at every pass).

Usage::

    python benchmarks/bench_dask.py                                  # small: about a minute
    python benchmarks/bench_dask.py --urc 1e8 --calem 1e7 --compare 1e7 --memory-limit 1GB
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import tempfile
import threading
import time
import warnings

import numpy as np
import pandas as pd


def _write_parquet(path, n, chunk, make):
    """Write ``n`` rows in files of ``chunk`` rows, ``make(rows, rng)`` making each."""
    os.makedirs(path, exist_ok=True)
    for i, start in enumerate(range(0, n, chunk)):
        rows = min(chunk, n - start)
        make(rows, np.random.default_rng(1000 + i)).to_parquet(
            os.path.join(path, f"part-{i:05d}.parquet"), index=False)


def urc_data(n_lab=2000):
    from puinfer.simulate.urc import simulate_urc

    lab = simulate_urc(n_lab=n_lab, n_field=10, field_base_rate=0.2,
                       rng=np.random.default_rng(0))

    def make(rows, rng):
        sizes = [rows // 3, rows // 3, rows - 2 * (rows // 3)]
        sim = simulate_urc(n_lab=10, n_field=sizes, field_base_rate=[0.1, 0.2, 0.35], rng=rng)
        return pd.DataFrame({"pred": sim.field_pred,
                             "region": np.array(["north", "east", "south"])[sim.field_group]})

    return lab, make


def calem_make(control_share):
    from puinfer.simulate.calibration import simulate_calem

    def make(rows, rng):
        d = simulate_calem(rows, event_prob=0.3, miscalibration="g1", transition="h1",
                           clean_share=control_share, rng=rng)
        return d[["score", "label", "treated"]].astype({"label": "int8", "treated": "int8"})

    return make


def _peak_mb(client):
    """Peak resident memory of each worker process so far (MB)."""
    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    return sorted(round(v) for v in client.run(peak).values())


def _cluster(a):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                           memory_limit=a.memory_limit, dashboard_address=":0",
                           silence_logs=50)
    client = Client(cluster)
    client.run(_warm)  # imports on the workers: not part of a fit's cost
    return cluster, client


def _warm():
    import puinfer.models.calem._dask  # noqa: F401
    import puinfer.models.detm._dask  # noqa: F401
    import puinfer.models.urc._dask  # noqa: F401


def detm_make(n_total, m_total, p):
    """Rows of Liu et al.'s SAR design (``sar_design``: p features, pi = 0.3), in files of
    source rows then target rows (each file one sample, ``n_total / (n_total + m_total)`` of
    the files source)."""
    from puinfer.simulate.detm import sar_design

    def make(rows, rng, source):
        n, m = (rows, 1) if source else (1, rows)
        d = sar_design(n, m, 0.3, p=p, rng=rng).drop(columns="y_true")
        return d[d.labeled == (1 if source else 0)]

    return make


def _write_detm(path, n, m, chunk, p):
    os.makedirs(path, exist_ok=True)
    make = detm_make(n, m, p)
    i = 0
    for rows_total, source in ((n, True), (m, False)):
        for start in range(0, rows_total, chunk):
            rows = min(chunk, rows_total - start)
            make(rows, np.random.default_rng(5000 + i), source).to_parquet(
                os.path.join(path, f"part-{i:05d}.parquet"), index=False)
            i += 1


def bench_detm(a, root):
    """DETM from Parquet (one file set, the indicator column ``labeled``): the full fit (the
    starts on the sample, the polish, the record and the probe with its 95% profile interval)
    or, with ``--detm-probe off``, the fit without the probe (then ``conf_int_pi`` is not
    computed)."""
    import dask.dataframe as dd

    import puinfer as pu

    n = int(a.detm)
    p = a.detm_p
    path = os.path.join(root, "detm")
    t0 = time.perf_counter()
    _write_detm(path, n, n, int(a.chunk), p)
    t_write = time.perf_counter() - t0
    f = "labeled ~ " + " + ".join(f"x{j + 1}" for j in range(p))
    probe = a.detm_probe == "on"
    cluster, client = _cluster(a)
    try:
        ddf = dd.read_parquet(path)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = pu.DETM.from_formula(f, data=ddf)
            with _progress(model.data, t0, a.progress):
                res = model.fit(probe=probe)
                ci = res.conf_int_pi() if probe else None
        t_fit = time.perf_counter() - t0
        passes = model.data.passes
        # (no summary here: a DETM summary shows the SCAR test, whose SETM fit on all rows is
        # as long again; the fit above is what is timed)
        # one pass on its own: the profile log-EL's sums at the fit (what a Newton step of
        # the profile costs per pass), three times
        d, lam = model.data, np.array(res.lagrange_multipliers, dtype=float)
        reps = []
        for k in range(3):
            # multipliers moved by rounding-level amounts: distinct task keys, so that no
            # repetition reuses a result the scheduler still holds
            t0 = time.perf_counter()
            d._profile_pass(np.array(res.theta, dtype=float), res.pi, lam * (1 + 1e-13 * k),
                            False)
            reps.append(time.perf_counter() - t0)
        peaks = _peak_mb(client)
    finally:
        client.close()
        cluster.close()
    row = {"method": f"DETM p={p}" + ("" if probe else " (probe off)"), "rows": 2 * n,
           "partitions": ddf.npartitions, "write s": t_write, "fit s": t_fit,
           "passes": passes, "peak MB/worker": peaks, "dask s/pass": min(reps), "pi": res.pi,
           "pi CI": None if ci is None else (round(ci["lower"], 4), round(ci["upper"], 4))}
    if 2 * n <= int(a.compare):
        row.update(_detm_in_memory(path, f, res, probe, min(reps)))
    elif 2 * n <= int(a.compare_pass):
        row.update(_detm_in_memory(path, f, res, None, min(reps)))
    return row


@contextlib.contextmanager
def _progress(data, t0, every):
    """Print the passes over the data so far every ``every`` seconds (0: never) while a long
    fit runs."""
    stop = threading.Event()

    def report():
        while not stop.wait(every):
            print(f"  {time.perf_counter() - t0:8.0f} s: {data.passes} passes", flush=True)

    th = threading.Thread(target=report, daemon=True)
    if every > 0:
        th.start()
    try:
        yield
    finally:
        stop.set()


def _detm_in_memory(path, f, res, probe, dpass):
    """The same fit in memory (its time; ``probe=None``: no fit, the pass only), one
    evaluation of the profile log-EL with its derivatives (one pass's work) on all rows at
    the Dask fit's estimates, and the ratio of a Dask pass to it."""
    import puinfer as pu
    from puinfer.models.detm import _el

    df = pd.read_parquet(path)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m0 = pu.DETM.from_formula(f, data=df)
        del df
        if probe is not None:
            t0 = time.perf_counter()
            r0 = m0.fit(probe=probe)
            if probe:  # the plain profile interval, as out of core (the default there)
                r0.conf_int_pi(method="profile")
            out["numpy fit s"] = time.perf_counter() - t0
            if res is None:  # in memory only: its own estimates
                res = r0
                ci0 = r0.conf_int_pi(method="profile") if probe else None
                out.update({"pi": r0.pi} if ci0 is None else
                           {"pi": r0.pi, "pi CI": (round(ci0["lower"], 5),
                                                   round(ci0["upper"], 5))})
            else:
                out["max rel diff params"] = float(np.max(
                    np.abs(res.params.to_numpy() - r0.params.to_numpy())
                    / np.abs(r0.params.to_numpy())))
    d = m0.data
    reps = []
    for _ in range(3):
        t0 = time.perf_counter()
        with np.errstate(all="ignore"):
            _el.profile_log_el(np.array(res.theta), res.pi, d.Z, d.y, 0.0, X1=d.X1)
        reps.append(time.perf_counter() - t0)
    out["numpy s/pass"] = min(reps)
    if dpass is not None:
        out["ratio"] = dpass / min(reps)
    return out


def bench_detm_in_memory(a, root):
    """The DETM default fit (probe and 95% profile interval) in memory with numpy on the
    Parquet rows of ``--detm`` (written first unless ``--dir`` holds them): the in-memory side
    of the ratio, on the same rows as the out-of-core fit; peak resident memory of this
    process."""
    n, p = int(a.detm), a.detm_p
    path = os.path.join(root, "detm")
    if not os.path.isdir(path):
        _write_detm(path, n, n, int(a.chunk), p)
    f = "labeled ~ " + " + ".join(f"x{j + 1}" for j in range(p))
    row = {"method": f"DETM p={p}, numpy in memory", "rows": 2 * n}
    row.update(_detm_in_memory(path, f, None, True, None))
    row["peak MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def bench_urc(a, root):
    import dask.dataframe as dd

    import puinfer as pu

    n = int(a.urc)
    lab, make = urc_data()
    path = os.path.join(root, "urc")
    t0 = time.perf_counter()
    _write_parquet(path, n, int(a.chunk), make)
    t_write = time.perf_counter() - t0
    model = pu.URC(lab.lab_pred, lab.lab_y)
    cluster, client = _cluster(a)
    try:
        ddf = dd.read_parquet(path)
        t0 = time.perf_counter()
        res = model.fit(ddf["pred"], groups=ddf["region"])
        t_fit = time.perf_counter() - t0
        str(res.summary())
        peaks = _peak_mb(client)
    finally:
        client.close()
        cluster.close()
    row = {"method": "URC (3 groups)", "rows": n, "partitions": ddf.npartitions,
           "write s": t_write, "fit s": t_fit, "passes": 1, "peak MB/worker": peaks}
    if n <= int(a.compare):
        df = pd.read_parquet(path)
        from puinfer.models.urc.model import field_histogram

        t0 = time.perf_counter()
        field_histogram(model, df["pred"], df["region"], "raise")
        t_mem = time.perf_counter() - t0
        row.update({"numpy s/pass": t_mem, "dask s/pass": t_fit, "ratio": t_fit / t_mem})
    return row


def bench_calem(a, root):
    import dask.dataframe as dd

    from puinfer.models.calem import CalEM

    n = int(a.calem)
    path = os.path.join(root, "calem")
    t0 = time.perf_counter()
    _write_parquet(path, n, int(a.chunk), calem_make(a.control_share))
    t_write = time.perf_counter() - t0
    cluster, client = _cluster(a)
    try:
        ddf = dd.read_parquet(path)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = CalEM(ddf["score"], ddf["label"], ddf["treated"], calibrator="spline")
            res = model.fit()
        t_fit = time.perf_counter() - t0
        str(res.summary())
        peaks = _peak_mb(client)
    finally:
        client.close()
        cluster.close()
    passes = model._dask.passes
    row = {"method": "CalEM spline", "rows": n, "partitions": ddf.npartitions,
           "write s": t_write, "fit s": t_fit, "passes": passes, "peak MB/worker": peaks,
           "iterations": res.convergence.iterations}
    if n <= int(a.compare):
        df = pd.read_parquet(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m0 = CalEM(df["score"], df["label"], df["treated"], calibrator="spline")
            t0 = time.perf_counter()
            r0 = m0.fit()
            t_mem_fit = time.perf_counter() - t0
        eng = m0._setup.engine
        theta = r0.params.to_numpy()
        reps = []
        for _ in range(3):
            t0 = time.perf_counter()
            eng.evaluate(theta, jac=True)
            reps.append(time.perf_counter() - t0)
        t_pass = min(reps)
        dpass = t_fit / passes
        rel = float(np.max(np.abs(res.params.to_numpy() - theta) / np.abs(theta)))
        row.update({"numpy fit s": t_mem_fit, "numpy s/pass": t_pass, "dask s/pass": dpass,
                    "ratio": dpass / t_pass, "max rel diff params": rel})
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--urc", type=float, default=2e6, help="URC field rows")
    ap.add_argument("--calem", type=float, default=1e6, help="CalEM rows (control + treated)")
    ap.add_argument("--control-share", type=float, default=0.01)
    ap.add_argument("--chunk", type=float, default=5e5, help="rows per Parquet file")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="1GB", help="per worker")
    ap.add_argument("--compare", type=float, default=1e7,
                    help="also fit in memory (numpy) up to this many rows, for the ratio")
    ap.add_argument("--dir", default=None, help="where to write Parquet (default: a temp dir)")
    ap.add_argument("--detm", type=float, default=1e5, help="DETM rows per sample (n = m)")
    ap.add_argument("--detm-p", type=int, default=15, help="DETM features")
    ap.add_argument("--detm-probe", choices=["on", "off"], default="on")
    ap.add_argument("--compare-pass", type=float, default=2e7,
                    help="DETM: above --compare, time one in-memory pass (no fit) up to this "
                    "many rows")
    ap.add_argument("--only", choices=["urc", "calem", "detm", "detm-memory"], default=None,
                    help="one benchmark; detm-memory: the DETM fit in memory only (numpy)")
    ap.add_argument("--progress", type=float, default=0,
                    help="print the DETM fit's passes so far every this many seconds")
    a = ap.parse_args(argv)
    root = a.dir or tempfile.mkdtemp(prefix="puinfer-bench-dask-")
    rows = []
    try:
        if a.only in (None, "urc"):
            rows.append(bench_urc(a, root))
            print(rows[-1], flush=True)
        if a.only in (None, "calem"):
            rows.append(bench_calem(a, root))
            print(rows[-1], flush=True)
        if a.only in (None, "detm"):
            rows.append(bench_detm(a, root))
            print(rows[-1], flush=True)
        if a.only == "detm-memory":
            rows.append(bench_detm_in_memory(a, root))
            print(rows[-1], flush=True)
    finally:
        if a.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    print()
    print(f"workers: {a.workers} x 1 thread, memory limit {a.memory_limit} per worker")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3g}"))


if __name__ == "__main__":
    main()
