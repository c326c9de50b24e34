"""Time and peak memory of LNKMTC / LSKMTC at n ~ 20,000, and the ratio to a dense-eigh version.

Our implementation never forms an ``n x n`` matrix (sparse kNN graph, rank ``m - 1`` MMD
operator, ARPACK on a ``LinearOperator``, k-means on the ``n x r`` factor). The peer is the
obvious dense implementation of the same algorithm: ``L`` and ``S`` as dense ``n x n`` arrays and
``scipy.linalg.eigh(L + C S, subset_by_index=[0, k - 1])``, then the same k-means; it runs on
subsets of the same data up to ``--dense-max-n`` points (memory ``~ 3 n^2`` doubles).

Each measurement runs in a fresh subprocess (``--blas-threads``, default 1, for both versions)
that first runs the method on 60 points per task (imports, numba compilation, the cvxpy LP;
reported as "first call"), then times ``fit`` on the full data and records the growth of the
process's peak RSS. The peak of Python/numpy allocations (``tracemalloc``, which slows Python
code) is measured in a separate subprocess.

Data (``--data``):
* ``20ng`` (default): all of 20 Newsgroups bydate (18,846 documents minus empty ones), tf-idf
  (min_df=2, L2 rows), 4 tasks = the 20 groups in name order, 5 groups per task.
* ``synthetic``: exactly ``--n`` sparse tf-idf-like documents (4 tasks, 5,000 terms, ~60 terms per
  document, 5 topics), reproducible, no download.

Usage::

    python benchmarks/kernel_mtc_speed.py                       # 20 NG, dense peer up to n=6000
    python benchmarks/kernel_mtc_speed.py --data synthetic --n 20000
"""

import argparse
import multiprocessing as mp
import os
import platform
import resource
import time
import tracemalloc
import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

C_VALUE = 1.0


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_synthetic(n, n_tasks=4, d=5000, nnz=60, n_topics=5, seed=0):
    rng = np.random.RandomState(seed)
    topics = [rng.choice(d, 400, replace=False) for _ in range(n_topics)]
    sizes = [n // n_tasks + (t < n % n_tasks) for t in range(n_tasks)]
    Xs, ys = [], []
    for nt in sizes:
        y = rng.randint(n_topics, size=nt)
        rows, cols = [], []
        for i in range(nt):
            k_topic = int(nnz * 0.6)
            cols.append(rng.choice(topics[y[i]], k_topic, replace=False))
            cols.append(rng.randint(d, size=nnz - k_topic))
            rows.append(np.full(nnz, i))
        X = sp.csr_matrix((rng.exponential(1.0, nt * nnz), (np.concatenate(rows),
                                                            np.concatenate(cols))), shape=(nt, d))
        X.sum_duplicates()
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        Xs.append(sp.csr_matrix(sp.diags(1 / norms) @ X))
        ys.append(y)
    return Xs, ys, (f"synthetic: {n_tasks} tasks, {n} documents, {d} terms, {nnz} stored "
                    f"entries per row before merging, {n_topics} topics, seed {seed}")


def load_20ng():
    from bregclust.datasets import load_20newsgroups

    data = load_20newsgroups(vectorizer="tfidf", min_df=2)
    groups = np.asarray(data.y)
    task_of_group = np.arange(len(data.target_names)) // 5
    Xs, ys = [], []
    for t in range(4):
        idx = np.flatnonzero(task_of_group[groups] == t)
        Xs.append(sp.csr_matrix(data.X[idx]))
        ys.append(groups[idx])
    return Xs, ys, "20 Newsgroups tf-idf, 4 tasks of 5 groups: " + data.description


def get_data(args):
    if args.data == "synthetic":
        return make_synthetic(args.n)
    return load_20ng()


def subset(Xs, ys, n):
    """The first ``n / m`` points of each task."""
    m = len(Xs)
    per = n // m
    return [X[:per] for X in Xs], [y[:per] for y in ys]


# ----------------------------------------------------------------------------- the two versions
def ours(Xs, method, k_clusters, seed):
    from bregclust.kernel_mtc import NonparametricKernelMTC, SpectralKernelMTC

    est = (NonparametricKernelMTC(k_clusters, C=C_VALUE, b=30, n_init=1, random_state=seed)
           if method == "LNKMTC" else
           SpectralKernelMTC(k_clusters, C=C_VALUE, b=1, n_eigenvectors=30, n_init=1,
                             random_state=seed))
    est.fit(Xs)
    return est.labels_


def dense_peer(Xs, method, k_clusters, seed):
    """The same algorithm with dense n x n L and S and LAPACK eigh (the obvious version)."""
    from bregclust.kernel_mtc import (
        nonparametric_kernel_weights,
        spectral_kernel_weights,
        task_knn_graph,
    )
    from bregclust.kmeans import BregmanKMeans

    sizes = np.array([X.shape[0] for X in Xs])
    m = sizes.size
    n = int(sizes.sum())
    W = task_knn_graph(Xs, 10).toarray()
    deg = W.sum(axis=1)
    dinv = np.where(deg > 0, 1 / np.sqrt(np.where(deg > 0, deg, 1)), 0.0)
    L = np.eye(n) - dinv[:, None] * W * dinv[None, :]
    del W
    task = np.repeat(np.arange(m), sizes)
    E = np.zeros((n, m))
    E[np.arange(n), task] = 1.0 / sizes[task]
    S = E @ (m * np.eye(m) - np.ones((m, m))) @ E.T
    if method == "LNKMTC":
        A = L + C_VALUE * S
        del L
        sig, P = sla.eigh(A, subset_by_index=[0, 29], overwrite_a=True)
        F = P * np.sqrt(nonparametric_kernel_weights(sig, 30))
    else:
        lam, V = sla.eigh(L, subset_by_index=[0, 29], overwrite_a=True)
        s = np.einsum("ij,ij->j", V, S @ V)
        F = V * np.sqrt(spectral_kernel_weights(lam, s, C_VALUE, 1))
    labels = BregmanKMeans(k_clusters, n_init=1, random_state=seed).fit(F).labels_
    return np.split(labels, np.cumsum(sizes)[:-1])


def _child(args, n, method, impl, mode, queue):
    warnings.simplefilter("ignore")
    Xs, ys, _ = get_data(args)
    if n is not None:
        Xs, ys = subset(Xs, ys, n)
    k = len(np.unique(np.concatenate(ys)))
    run = ours if impl == "ours" else dense_peer
    # first call on a small subset: imports, numba compilation, the cvxpy LP for r=30
    t0 = time.perf_counter()
    run([X[:60] for X in Xs], method, k, 0)
    first = time.perf_counter() - t0
    rss0 = _rss_mb()
    if mode == "memory":
        tracemalloc.start()
    t0 = time.perf_counter()
    run(Xs, method, k, 0)
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 2 ** 20 if mode == "memory" else None
    queue.put((sum(X.shape[0] for X in Xs), elapsed, peak, _rss_mb() - rss0, first))


def measure(args, n, method, impl, mode):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(args, n, method, impl, mode, q))
    p.start()
    res = q.get()
    p.join()
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", choices=["20ng", "synthetic"], default="20ng")
    ap.add_argument("--n", type=int, default=20000, help="points for --data synthetic")
    ap.add_argument("--dense-max-n", type=int, default=6000,
                    help="largest n for the dense peer (memory ~ 3 n^2 doubles)")
    ap.add_argument("--runs", type=int, default=1, help="repetitions (median time reported)")
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="BLAS threads in the measured processes (1: the machine is shared and "
                    "oversubscribed multithreaded LAPACK is ~10x slower; same for both versions)")
    args = ap.parse_args(argv)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.blas_threads)  # read by the spawned children at start
    Xs, ys, desc = get_data(args)
    n_full = sum(X.shape[0] for X in Xs)
    print(f"# kernel_mtc_speed.py  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  "
          f"python {platform.python_version()}  {platform.machine()}  cores={mp.cpu_count()}  "
          f"load average {os.getloadavg()[0]:.1f}  BLAS threads {args.blas_threads}")
    print(f"# data: {desc}")
    print(f"# tasks {[X.shape[0] for X in Xs]}, n={n_full}; LNKMTC C={C_VALUE} b=30; "
          f"LSKMTC C={C_VALUE} b=1 r=30; kNN 10 cosine; k-means n_init=1")
    print("\n| method | impl | n | time (s) | first call on 4x60 points (s) | "
          "tracemalloc peak (MB) | peak RSS growth (MB) |")
    print("|---|---|---|---|---|---|---|")
    dense_n = min(args.dense_max_n, n_full)
    for method in ("LNKMTC", "LSKMTC"):
        rows = {}
        for impl, n in (("ours", None), ("ours", dense_n), ("dense eigh", dense_n)):
            kind = "ours" if impl == "ours" else "dense"
            res = [measure(args, n, method, kind, "time") for _ in range(args.runs)]
            mem = measure(args, n, method, kind, "memory")
            nn = res[0][0]
            t = float(np.median([r[1] for r in res]))
            rows[(impl, nn)] = t
            print(f"| {method} | {impl} | {nn} | {t:.2f} | {res[0][4]:.2f} | {mem[2]:.0f} | "
                  f"{res[0][3]:.0f} |", flush=True)
        key_n = [k for k in rows if k[0] == "dense eigh"][0][1]
        print(f"| {method} | ratio dense/ours at n={key_n} | | "
              f"{rows[('dense eigh', key_n)] / rows[('ours', key_n)]:.1f}x | | | |", flush=True)


if __name__ == "__main__":
    main()
