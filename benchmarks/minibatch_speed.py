"""MiniBatchBregmanKMeans against scikit-learn's MiniBatchKMeans and against full-batch k-means.

Run from the repository root::

    python benchmarks/minibatch_speed.py                       # dense and kl sections
    python benchmarks/minibatch_speed.py --skip-dense --skip-kl --out-of-core 40000000
    python benchmarks/minibatch_speed.py --compile             # first call, empty numba cache

1. Dense blobs (``--n-dense`` x 50, k = 20): scikit-learn's ``MiniBatchKMeans`` and ours with
   the same initial centres, ``batch_size``, seed and number of steps (``max_iter`` epochs,
   ``max_no_improvement=None``), labels and inertia computed at the end by both. Our
   in-memory fit draws scikit-learn's batches, so the centres agree to rounding; the time
   ratio (target <= 1.0) and the inertia difference (target within 1%) are printed.
2. kl on 20 Newsgroups term frequencies (counts over terms in >= 5 documents, English stop
   words removed, headers/footers/quotes stripped, rows L1-normalised; ``smoothing="auto"``):
   full-batch ``BregmanKMeans`` to convergence and ours, from the same k-means++ centres;
   ratios of objective (target within 2%) and time (target <= 1/5).
3. ``--out-of-core N``: one epoch over an ``N`` x 50 float32 ``.npy`` file read chunk by chunk
   by two dask workers limited to ``--memory-limit`` each (the file is written and the
   cluster started as in ``benchmarks/dask_kmeans.py --out-of-core``); peak worker memory.
4. ``--compile``: the first fit in a fresh interpreter with an empty ``NUMBA_CACHE_DIR``.

Every timing is the best of ``--repeat`` alternating runs (the machine is shared).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine, table  # noqa: E402


def best(fn, repeat):
    """``(result of the last run, best wall time)`` of ``repeat`` runs."""
    t_best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        t_best = min(t_best, time.perf_counter() - t0)
    return out, t_best


def dense(a):
    from sklearn.cluster import MiniBatchKMeans, kmeans_plusplus

    from bregclust import MiniBatchBregmanKMeans

    rng = np.random.default_rng(0)
    k, d = a.k, 50
    centres = rng.normal(scale=4.0, size=(k, d))
    X = centres[rng.integers(0, k, a.n_dense)] + rng.normal(scale=3.0, size=(a.n_dense, d))
    C0, _ = kmeans_plusplus(X[:3 * a.batch_size], k, random_state=0)
    kw = dict(init=C0, n_init=1, batch_size=a.batch_size, max_iter=a.max_iter,
              max_no_improvement=None, random_state=0)
    MiniBatchBregmanKMeans(k, **dict(kw, max_iter=1)).fit(X[:20000])  # compile every kernel
    t_sk = t_ours = float("inf")
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        sk = MiniBatchKMeans(k, **kw).fit(X)
        t_sk = min(t_sk, time.perf_counter() - t0)
        t0 = time.perf_counter()
        ours = MiniBatchBregmanKMeans(k, **kw).fit(X)
        t_ours = min(t_ours, time.perf_counter() - t0)
    diff = np.abs(ours.cluster_centers_ - sk.cluster_centers_).max()
    print(f"\n## dense {a.n_dense:,} x {d}, k={k}, batch_size={a.batch_size}, "
          f"max_iter={a.max_iter} (same init, seed and steps; labels and inertia computed)\n")
    table(["implementation", "steps", "fit s", "ms / step", "inertia"],
          [["sklearn MiniBatchKMeans", sk.n_steps_, f"{t_sk:.2f}",
            f"{1e3 * t_sk / sk.n_steps_:.3f}", f"{sk.inertia_:.8g}"],
           ["bregclust MiniBatchBregmanKMeans", ours.n_steps_, f"{t_ours:.2f}",
            f"{1e3 * t_ours / ours.n_steps_:.3f}", f"{ours.inertia_:.8g}"]])
    rel = abs(ours.inertia_ - sk.inertia_) / sk.inertia_
    print(f"\ntime ours / sklearn: {t_ours / t_sk:.3f} (target <= 1.0); inertia relative "
          f"difference {rel:.1e} (target <= 1e-2); largest centre difference {diff:.1e}; "
          f"identical labels: {np.array_equal(ours.labels_, sk.labels_)}")


def kl(a):
    from sklearn.preprocessing import normalize

    from bregclust import BregmanKMeans, MiniBatchBregmanKMeans, bregman_kmeans_plusplus
    from bregclust.datasets import load_20newsgroups

    ng = load_20newsgroups(vectorizer="count", min_df=5, stop_words="english",
                           remove=("headers", "footers", "quotes"))
    X = normalize(ng.X, "l1").tocsr()
    k = 20
    print(f"\n## kl on 20 Newsgroups term frequencies (CSR {X.shape[0]} x {X.shape[1]}, "
          f"nnz={X.nnz}), k={k}, smoothing='auto', same k-means++ centres; mini-batch "
          f"batch_size={a.kl_batch_size}, max_iter={a.kl_max_iter} epoch(s), "
          "max_no_improvement=None, labels and inertia computed\n")
    rows = []
    ratios_t, ratios_o = [], []
    for seed in range(a.kl_seeds):
        C0, _ = bregman_kmeans_plusplus(X, k, "kl", random_state=seed, smoothing="auto")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            BregmanKMeans(k, divergence="kl", init=C0, max_iter=2).fit(X)
            MiniBatchBregmanKMeans(k, divergence="kl", init=C0, max_iter=1).fit(X)
            kw = dict(divergence="kl", init=C0, batch_size=a.kl_batch_size,
                      max_iter=a.kl_max_iter, max_no_improvement=None, random_state=seed)
            t_full = t_mb = t_c = float("inf")
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                full = BregmanKMeans(k, divergence="kl", init=C0).fit(X)
                t_full = min(t_full, time.perf_counter() - t0)
                t0 = time.perf_counter()
                mb = MiniBatchBregmanKMeans(k, **kw).fit(X)
                t_mb = min(t_mb, time.perf_counter() - t0)
                t0 = time.perf_counter()
                centres = MiniBatchBregmanKMeans(k, compute_labels=False, **kw).fit(X)
                t_c = min(t_c, time.perf_counter() - t0)
        assert np.array_equal(centres.cluster_centers_, mb.cluster_centers_)
        ro = mb.inertia_ / full.inertia_
        ratios_t.append(t_mb / t_full)
        ratios_o.append(ro)
        rows.append([seed, full.n_iter_, f"{t_full:.3f}", f"{full.inertia_:.6g}", mb.n_steps_,
                     f"{t_mb:.3f}", f"{t_c:.3f}", f"{mb.inertia_:.6g}", f"{ro:.4f}",
                     f"{t_mb / t_full:.3f}", f"{t_c / t_full:.3f}"])
    table(["seed", "full iterations", "full s", "full objective", "mini-batch steps",
           "mini-batch s", "centres only s", "mini-batch objective", "objective ratio",
           "time ratio", "centres only / full"], rows)
    print(f"\nworst objective ratio {max(ratios_o):.4f} (target <= 1.02); worst time ratio "
          f"{max(ratios_t):.3f} (target <= 0.2); 'centres only' is the fit with "
          "compute_labels=False (the labels pass left out; same centres, objective above "
          "from the fit with labels)")


def _warm_minibatch():
    """Compile (or load from the numba cache) the kernels of a mini-batch fit, in this
    process."""
    import dask
    import dask.array as da

    from bregclust import MiniBatchBregmanKMeans

    X = np.abs(np.random.default_rng(0).normal(size=(2000, 50))) + 0.1
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore")
        MiniBatchBregmanKMeans(20, batch_size=256, max_iter=1, random_state=0).fit(
            da.from_array(X, chunks=(1000, -1)))
    return True


def out_of_core(a):
    import dask_kmeans as DK
    from distributed import Client, LocalCluster

    from bregclust import MiniBatchBregmanKMeans

    n, d, k = a.out_of_core, 50, a.k
    free = shutil.disk_usage(tempfile.gettempdir()).free
    need = n * d * 4
    if free < 1.5 * need:
        raise SystemExit(f"--out-of-core {n} needs {need / 2**30:.2f} GiB on disk, "
                         f"{free / 2**30:.2f} GiB free under {tempfile.gettempdir()}.")
    tmp = tempfile.mkdtemp(prefix="bregclust_mb_ooc_")
    try:
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          memory_limit=a.memory_limit, dashboard_address=None,
                          env=DK.WORKER_ENV) as cluster, Client(cluster) as client:
            X, _ = DK.npy_blobs(client, os.path.join(tmp, "X.npy"), n, d, k, a.rows_per_chunk)
            client.run(_warm_minibatch)
            _warm_minibatch()
            C0 = np.asarray(X[:k].compute(), dtype=np.float64)
            t0 = time.perf_counter()
            X.sum(axis=0).compute()  # a plain read of the file, for scale
            t_read = time.perf_counter() - t0
            stop, peak = threading.Event(), {}
            th = threading.Thread(target=DK._peak_rss, args=(client, stop, peak), daemon=True)
            th.start()
            t0 = time.perf_counter()
            mb = MiniBatchBregmanKMeans(k, init=C0, batch_size=a.batch_size, max_iter=1,
                                        max_no_improvement=None, compute_labels=False,
                                        random_state=0).fit(X)
            t_fit = time.perf_counter() - t0
            t0 = time.perf_counter()
            inertia = -mb.score(X)
            t_score = time.perf_counter() - t0
            stop.set()
            th.join()
            limit = next(iter(client.run(DK._memory_limit).values()))
        print(f"\n## out of core: {n} x {d} float32 .npy on disk ({need / 2**30:.2f} GiB), "
              f"{-(-n // a.rows_per_chunk)} chunks, 2 workers limited to "
              f"{limit / 2**30:.2f} GiB each; one epoch, batch_size={a.batch_size}, k={k}\n")
        table(["steps", "fit s (first pass + epoch)", "ms / step", "rows / s",
               "plain read s", "score pass s", "inertia", "peak worker RSS (MiB)",
               "limit (MiB)"],
              [[mb.n_steps_, f"{t_fit:.1f}", f"{1e3 * t_fit / mb.n_steps_:.3f}",
                f"{n / t_fit:.3g}", f"{t_read:.1f}", f"{t_score:.1f}", f"{inertia:.6g}",
                ", ".join(f"{v / 2**20:.0f}" for v in peak.values()), f"{limit / 2**20:.0f}"]])
        print(f"\npeak worker memory / limit: {max(peak.values()) / limit:.2f}; data / total "
              f"limit: {need / (2 * limit):.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


COMPILE = r"""
import time, warnings
import numpy as np, scipy.sparse as sp
t0 = time.perf_counter()
from bregclust import MiniBatchBregmanKMeans
from bregclust._kernels import minibatch as KM
t_import = time.perf_counter() - t0
rng = np.random.default_rng(0)
X = rng.gamma(2.0, 1.0, size=(3000, 20))
S = sp.csr_matrix(np.where(X > 2.5, X, 0.0))
out = {}
from bregclust import get_divergence
g = get_divergence("kl").generator
U = np.ones((2, 3)); GT = np.empty((3, 2)); c = np.empty(2); zg = np.empty(2)
fin = np.empty(2, dtype=bool)
upd = (g.code, g.fn_phi, g.fn_dphi, U, np.zeros(2), np.ones((2, 3)), np.ones(2), 0.0,
       np.ones(3), GT, c, zg, fin)
first = [
    ("draw_rows", lambda: KM.draw_rows(np.linspace(0.1, 1.0, 10), np.array([0.5]),
                                       np.empty(1, dtype=np.int64))),
    ("centre_parts", lambda: KM.centre_parts(g.code, g.fn_phi, g.fn_dphi, U, np.arange(2),
                                             np.ones(3), GT, c, zg, fin)),
    ("count_update", lambda: KM.count_update(*upd)),
    ("count_update_par", lambda: KM.count_update_par(*upd)),
    ("move_centres", lambda: KM.move_centres(U, np.zeros(2), np.ones((2, 3)), np.ones(2), 0.0,
                                             np.ones(3), np.empty(2, dtype=np.bool_))),
]
total = 0.0
for name, call in first:
    t0 = time.perf_counter()
    call()
    out[f"first call, _kernels/minibatch.{name}"] = time.perf_counter() - t0
    total += out[f"first call, _kernels/minibatch.{name}"]
out["the mini-batch kernels together"] = total
# k d = 5 x 4000 coordinates: the count update takes the closed-form parts (numpy)
wide = sp.random(3000, 4000, density=0.01, random_state=0, format="csr")
wide = wide[np.asarray(wide.sum(axis=1)).ravel() > 0]
for name, data, what in (("sqeuclidean", X, "dense"), ("kl", S, "sparse"),
                         ("kl", wide, "sparse 3000 x 4000, closed-form parts")):
    for which in ("first", "second"):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            MiniBatchBregmanKMeans(5, divergence=name, batch_size=256, max_iter=2,
                                   random_state=0).fit(data)
        out[f"{which} fit, {name} ({what})"] = time.perf_counter() - t0
print(f"import\t{t_import}")
for key, v in out.items():
    print(f"{key}\t{v}")
"""


def compile_time():
    cache = tempfile.mkdtemp(prefix="bregclust_numba_")
    try:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        res = subprocess.run([sys.executable, "-c", COMPILE], env=env, capture_output=True,
                             text=True, check=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print("\n## first calls in a fresh interpreter, empty NUMBA_CACHE_DIR\n")
    table(["what", "seconds"], [[ln.split("\t")[0], f"{float(ln.split(chr(9))[1]):.2f}"]
                                for ln in res.stdout.splitlines()])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-dense", type=int, default=1_000_000)
    p.add_argument("--k", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--max-iter", type=int, default=1, help="epochs of the dense section")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--skip-dense", action="store_true")
    p.add_argument("--skip-kl", action="store_true")
    p.add_argument("--kl-batch-size", type=int, default=1024)
    p.add_argument("--kl-max-iter", type=int, default=1)
    p.add_argument("--kl-seeds", type=int, default=3)
    p.add_argument("--out-of-core", type=int, default=0, metavar="N",
                   help="rows of an on-disk float32 .npy file to run one epoch on (0: skip)")
    p.add_argument("--memory-limit", default="2GB", help="per worker, for --out-of-core")
    p.add_argument("--rows-per-chunk", type=int, default=100_000)
    p.add_argument("--compile", action="store_true")
    a = p.parse_args(argv)
    print(f"machine: {machine()}")
    print("command: python benchmarks/minibatch_speed.py "
          f"{' '.join(sys.argv[1:] if argv is None else argv)}")
    if not a.skip_dense:
        dense(a)
    if not a.skip_kl:
        kl(a)
    if a.out_of_core:
        out_of_core(a)
    if a.compile:
        compile_time()


if __name__ == "__main__":
    main()
