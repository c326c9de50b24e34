"""Performance claim of issue 3: one MBC fit on NG20-1 in <= 30 s, beside IND in the same run.

NG20-1 = 20 Newsgroups bydate (train+test) split at random into two halves of ~9,400
documents, 20 groups each (``load_mbc_tasks("ng20-1")``: one vocabulary on the union, tf-idf,
L2-normalised rows, sparse CSR). Both methods use squared Euclidean distance, K = 20 per task,
and start from the same k-means++ centres (one random stream, task by task). IND is
``BregmanKMeans`` on each task (the same Lloyd loop MBC reduces to with lam = 0).

Numba kernels are compiled on a small slice first; that compile time is printed separately
and excluded from the timings. Each fit prints its wall time and the process's CPU time (the
steadier figure on a loaded machine; with one BLAS/numba thread they match when it is quiet).

Usage::

    python benchmarks/mbc_speed.py [--runs 1] [--lam 0.5 | --lam auto] [--seed 0]

``--lam auto`` times the estimator's default coupling rule (one IND fit and several MBC fits
from the same starts); its per-iteration ratio then counts the chosen run's sweeps only.
"""

import argparse
import platform
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bregclust.datasets import load_mbc_tasks
from bregclust.kmeans import BregmanKMeans, bregman_kmeans_plusplus
from bregclust.mbc import MultitaskBregmanClustering
from bregclust.metrics import nmi

TARGET_SECONDS = 30.0


def _lam(text):
    """``--lam``: a non-negative float or ``auto``."""
    return text if text == "auto" else float(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1, help="timed fits per method (default 1)")
    ap.add_argument("--lam", type=_lam, default=0.5, help="a float, or auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-iter", type=int, default=300)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    data = load_mbc_tasks("ng20-1")
    t_load = time.perf_counter() - t0
    Xs, ys = data.Xs, data.ys
    K = [20, 20]

    # compile every kernel used below on a small slice (excluded from the timings)
    t0 = time.perf_counter()
    small = [X[:300] for X in Xs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        MultitaskBregmanClustering(K, lam=args.lam, max_iter=2, random_state=0).fit(small)
        BregmanKMeans(20, max_iter=2, random_state=0).fit(small[0])
    t_compile = time.perf_counter() - t0

    print("MBC speed on NG20-1 (issue 3 performance claim)")
    print(f"  data     : {data.description}")
    print(f"  shapes   : task 1 {Xs[0].shape} nnz={Xs[0].nnz}, task 2 {Xs[1].shape} "
          f"nnz={Xs[1].nnz}; load {t_load:.1f} s")
    print(f"  machine  : {platform.processor() or platform.machine()}, numpy {np.__version__}")
    print(f"  params   : sqeuclidean, K = 20 per task, lam = {args.lam}, tol = 1e-4, "
          f"same k-means++ init for IND and MBC")
    print(f"  first-call compile (small slice, both methods): {t_compile:.1f} s")
    print()
    print(f"{'run':>3} {'method':>6} {'fit s':>8} {'cpu s':>8} {'iters':>6} {'s/iter':>8} "
          f"{'NMI task1':>10} {'NMI task2':>10}")
    rs = np.random.RandomState(args.seed)
    mbc_times = []
    ratios = []
    for run in range(args.runs):
        init = [bregman_kmeans_plusplus(X, k, "sqeuclidean", random_state=rs)[0]
                for X, k in zip(Xs, K)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0, c0 = time.perf_counter(), time.process_time()
            ind = [BregmanKMeans(k, init=c, max_iter=args.max_iter).fit(X)
                   for X, k, c in zip(Xs, K, init)]
            t_ind, c_ind = time.perf_counter() - t0, time.process_time() - c0
            t0, c0 = time.perf_counter(), time.process_time()
            est = MultitaskBregmanClustering(K, lam=args.lam, init=init,
                                             max_iter=args.max_iter).fit(Xs)
            t_mbc, c_mbc = time.perf_counter() - t0, time.process_time() - c0
        it_ind = sum(m.n_iter_ for m in ind)  # iterations summed over the two tasks
        per_ind = t_ind / max(it_ind, 1) * 2  # one IND iteration = one sweep over both tasks
        per_mbc = t_mbc / max(est.n_iter_, 1)
        mbc_times.append(t_mbc)
        ratios.append(per_mbc / per_ind)
        print(f"{run:>3} {'IND':>6} {t_ind:>8.2f} {c_ind:>8.2f} {it_ind / 2:>6.1f} {per_ind:>8.3f} "
              f"{nmi(ys[0], ind[0].labels_):>10.3f} {nmi(ys[1], ind[1].labels_):>10.3f}")
        print(f"{run:>3} {'MBC':>6} {t_mbc:>8.2f} {c_mbc:>8.2f} {est.n_iter_:>6d} {per_mbc:>8.3f} "
              f"{nmi(ys[0], est.labels_[0]):>10.3f} {nmi(ys[1], est.labels_[1]):>10.3f}"
              + (f"  lam_={est.lam_:g}" if args.lam == "auto" else ""))
    print()
    worst = max(mbc_times)
    print(f"MBC fit on NG20-1: worst {worst:.1f} s over {args.runs} run(s) "
          f"(target <= {TARGET_SECONDS:.0f} s): {'PASS' if worst <= TARGET_SECONDS else 'FAIL'}")
    print(f"time per iteration MBC / IND (both tasks): {np.mean(ratios):.2f}")
    print("(IND iterations are averaged over the two tasks; an MBC iteration updates both "
          "tasks' centres, the 2 relation matrices and both tasks' labels.)")


if __name__ == "__main__":
    main()
