"""BregmanMixture speed: one EM iteration against one Lloyd iteration and against scikit-learn.

1. 20 Newsgroups term counts (all 18,846 documents, every term, CSR, 20 components): the
   multinomial mixture's EM iteration on the counts against one Lloyd iteration of kl
   ``BregmanKMeans`` on the same rows divided by their lengths (the same sparsity pattern),
   from the same means. Target: ratio <= 2.
2. Dense n=200,000, d=50, 20 components: EM with one variance per component against
   scikit-learn's ``GaussianMixture(covariance_type="spherical")`` from the same initial
   parameters (the lower-bound trajectories are compared and printed). scikit-learn is timed
   with its BLAS limited to one thread and with every core (its only parallelism); bregclust
   runs its own threads with BLAS single-threaded. Target: ratio <= 1.
3. First call of the E-step kernels in a fresh interpreter with an empty numba cache, and of a
   whole fit cold and warm.

The time of one iteration is the marginal one: (fit with ``a + m`` iterations - fit with ``a``)
/ ``m``, both with ``tol=0`` from the same start, best of ``--repeat`` runs each, so the fixed
set-up of a fit (validation, statistics, the base-measure pass) is left out.

Run: python benchmarks/mixture_speed.py [--n-dense 200000] [--iters 10] [--repeat 3]
         [--skip-20ng] [--skip-compile]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from _common import machine, table
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

from bregclust import BregmanKMeans, BregmanMixture


def marginal(fit, a, m, repeat):
    """Seconds per iteration: best of ``repeat`` fits of ``a + m`` minus best of ``a``."""
    t_a = t_b = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fit(a)
        t_a = min(t_a, time.perf_counter() - t0)
        t0 = time.perf_counter()
        fit(a + m)
        t_b = min(t_b, time.perf_counter() - t0)
    return (t_b - t_a) / m, t_b, fit(a + m).n_iter_


def newsgroups(a):
    from sklearn.preprocessing import normalize

    from bregclust.datasets import load_20newsgroups

    ng = load_20newsgroups(vectorizer="count")
    X = ng.X.astype(np.float64)
    X = X[np.asarray(X.sum(axis=1)).ravel() > 0]
    tf = normalize(X, "l1")
    k = 20
    C0 = BregmanKMeans(k, divergence="kl", random_state=0, max_iter=1).fit(tf).cluster_centers_

    def km(it):
        return BregmanKMeans(k, divergence="kl", init=C0, max_iter=it, tol=0.0).fit(tf)

    def em(it):
        return BregmanMixture(k, divergence="kl", init={"means": C0}, max_iter=it,
                              tol=0.0).fit(X)

    print(f"\n## 20 Newsgroups term counts, CSR {X.shape}, nnz={X.nnz:,}, k={k}, same means")
    km(1), em(1)  # compile
    t_km, f_km, i_km = marginal(km, 2, a.iters, a.repeat)
    t_em, f_em, i_em = marginal(em, 2, a.iters, a.repeat)
    table(["estimator", "s / iteration", f"fit of {a.iters + 2} iterations (s)",
           "iterations run"],
          [("BregmanKMeans(kl) on counts / length, one Lloyd iteration", f"{t_km:.3f}",
            f"{f_km:.2f}", i_km),
           ("BregmanMixture(kl, multinomial) on counts, one EM iteration", f"{t_em:.3f}",
            f"{f_em:.2f}", i_em)])
    print(f"\nEM / Lloyd iteration ratio (target <= 2): {t_em / t_km:.2f}")


def dense(a):
    rng = np.random.default_rng(0)
    n, d, k = a.n_dense, 50, 20
    centres = rng.normal(scale=4.0, size=(k, d))
    X = centres[rng.integers(0, k, n)] + rng.normal(scale=3.0, size=(n, d))
    U0 = X[rng.choice(n, k, replace=False)]
    w0, v0 = np.full(k, 1.0 / k), np.full(k, 9.0)

    def ours(it):
        return BregmanMixture(k, init={"means": U0, "weights": w0, "dispersion": v0},
                              max_iter=it, tol=0.0, reg_dispersion=0.0).fit(X)

    def sk(it):
        return GaussianMixture(k, covariance_type="spherical", weights_init=w0, means_init=U0,
                               precisions_init=1.0 / v0, max_iter=it, tol=0.0,
                               reg_covar=0.0).fit(X)

    print(f"\n## dense n={n:,} d={d} k={k}: spherical Gaussian mixture, same initial "
          "parameters")
    ours(1)
    t_ours, f_ours, _ = marginal(ours, 2, a.iters, a.repeat)
    rows = [("bregclust BregmanMixture (own threads, BLAS 1 thread)", f"{t_ours:.3f}",
             f"{f_ours:.2f}", "1.00")]
    for label, limit in [("scikit-learn GaussianMixture, BLAS 1 thread", 1),
                         (f"scikit-learn GaussianMixture, BLAS {os.cpu_count()} threads",
                          os.cpu_count())]:
        with threadpool_limits(limits=limit, user_api="blas"):
            sk(1)
            t_sk, f_sk, _ = marginal(sk, 2, a.iters, a.repeat)
        rows.append((label, f"{t_sk:.3f}", f"{f_sk:.2f}", f"{t_ours / t_sk:.2f}"))
    table(["estimator", "s / iteration", f"fit of {a.iters + 2} iterations (s)",
           "ratio ours / this (target <= 1.0)"], rows)
    lb_ours = np.array(ours(a.iters).lower_bounds_)
    lb_sk = np.array(sk(a.iters).lower_bounds_)
    print(f"\nlower-bound trajectories, {a.iters} iterations: largest relative difference "
          f"{np.max(np.abs(lb_ours - lb_sk) / np.abs(lb_sk)):.1e}")


_COMPILE = r"""
import json, time
t0 = time.perf_counter()
import numpy as np, scipy.sparse as sp
from bregclust import BregmanMixture, get_divergence
from bregclust import _execution as E
from bregclust import _mixture_pass as MP
from bregclust._kernels import mixture as KM
t_import = time.perf_counter() - t0
rng = np.random.default_rng(0)
X = rng.poisson(3.0, size=(64, 5)).astype(float)
out = {"import": t_import}
what = WHAT
if what == "kernels":
    div = get_divergence("kl")
    mc = MP.prepare_mixture(div, X[:3] + 0.5, np.zeros(3), np.ones(3))
    for name, XX in [("dense", X), ("csr", sp.csr_matrix(X))]:
        Xg, phi = E.prepare(div, XX)
        args = (phi, mc.GT, mc.c, mc.alpha, mc.beta, np.ones(64), False, False, True)
        outs = (np.empty(64, np.int64), np.empty(64), np.empty((0, 3)))
        sums = (np.zeros((3, 5)) if name == "dense" else np.zeros((5, 3)), np.zeros(3),
                np.zeros(3), np.zeros(1))
        t0 = time.perf_counter()
        if name == "dense":
            KM.mixture_step_dense(XX, *args, 16, *outs, *sums)
        else:
            KM.mixture_step_csr(XX.data, XX.indices, XX.indptr, *args, *outs, *sums)
        out["mixture_step_" + name] = time.perf_counter() - t0
else:
    XX, kw = (X, {}) if what == "gaussian" else (sp.csr_matrix(X), {"divergence": "kl"})
    t0 = time.perf_counter()
    BregmanMixture(2, random_state=0, **kw).fit(XX)
    t1 = time.perf_counter()
    BregmanMixture(2, random_state=0, **kw).fit(XX)
    out["first"], out["again"] = t1 - t0, time.perf_counter() - t1
print(json.dumps(out))
"""


def compile_times():
    """Each entry in its own fresh interpreter, with an empty numba cache (a new user's first
    call) and with the cache that run filled."""
    print("\n## first calls in a fresh interpreter (seconds)")
    rows = []
    for what, label in [("kernels", None), ("gaussian", "BregmanMixture.fit, dense Gaussian"),
                        ("multinomial", "BregmanMixture.fit, sparse multinomial")]:
        res = {}
        with tempfile.TemporaryDirectory() as tmp:
            for state in ("cold", "warm"):
                env = dict(os.environ, NUMBA_CACHE_DIR=tmp)
                out = subprocess.run([sys.executable, "-c", _COMPILE.replace("WHAT", repr(what))],
                                     env=env, check=True, capture_output=True, text=True)
                res[state] = json.loads(out.stdout.strip().splitlines()[-1])
        if what == "kernels":
            rows.append(("import bregclust", f"{res['cold']['import']:.2f}",
                         f"{res['warm']['import']:.2f}"))
            for key in ("mixture_step_dense", "mixture_step_csr"):
                rows.append((f"first call of {key}", f"{res['cold'][key]:.2f}",
                             f"{res['warm'][key]:.2f}"))
        else:
            rows.append((f"first {label} (every kernel it uses); a second fit",
                         f"{res['cold']['first']:.2f}; {res['cold']['again']:.3f}",
                         f"{res['warm']['first']:.2f}; {res['warm']['again']:.3f}"))
    table(["what", "empty numba cache", "cache filled"], rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-dense", type=int, default=200_000)
    ap.add_argument("--iters", type=int, default=10, help="iterations timed (beyond 2)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-20ng", action="store_true")
    ap.add_argument("--skip-compile", action="store_true")
    a = ap.parse_args()
    print(f"# {machine()}")
    warnings.simplefilter("ignore", ConvergenceWarning)
    if not a.skip_compile:
        compile_times()
    dense(a)
    if not a.skip_20ng:
        newsgroups(a)


if __name__ == "__main__":
    main()
