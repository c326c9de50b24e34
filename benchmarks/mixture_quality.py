"""BregmanMixture quality: the multinomial mixture against kl k-means, and choosing K by BIC.

1. NMI on text: the multinomial mixture (``BregmanMixture(K, divergence="kl")``: raw counts,
   the defaults: smoothing="auto" = 0.1 pseudo-words per term, init="auto" = tf-idf k-means
   starts; ``benchmarks/mixture_text.py`` compares them with the former ones) beside kl k-means (``BregmanKMeans(K, divergence="kl")``
   on the rows divided by their lengths, smoothing="auto"), K = number of classes, one start
   per seed, the same seeds for both. Data: the six CLUTO document sets (raw counts,
   ``classid`` labels) and 20 Newsgroups (bydate, all 18,846 documents, counts of terms in
   >= 2 documents), empty rows dropped. Reported as measured (nothing is tuned).
2. BIC on synthetic mixtures of each family with a known K = 3, 4, ..., 12 (one draw each):
   ``BregmanMixture(candidates)`` with candidates K-3 .. K+3 (at least 1), three starts per
   candidate; the count of draws where BIC picks the true K (target: >= 9 of 10). Beside it,
   the X-means-style choice for k-means (:func:`bregclust.select_n_clusters`, the same
   candidates and family, tied dispersion).
3. The CLUTO sets: the K that BIC chooses for the multinomial mixture (candidates 2 .. 2 x the
   number of classes) and for kl k-means, beside the number of classes.

Run: python benchmarks/mixture_quality.py [--seeds 10] [--datasets tr11 ... 20ng]
         [--draws 10] [--skip-nmi] [--skip-synthetic] [--skip-cluto-k]
"""

import argparse
import time
import warnings

import numpy as np
from _common import machine, table
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import normalize

from bregclust import BregmanKMeans, BregmanMixture, EmptyClusterWarning, select_n_clusters
from bregclust.datasets import CLUTO_NAMES, load_20newsgroups, load_cluto
from bregclust.metrics import nmi


def load(name):
    d = load_20newsgroups(vectorizer="count", min_df=2) if name == "20ng" else load_cluto(name)
    keep = np.asarray(d.X.sum(axis=1)).ravel() > 0
    return d.X[keep].astype(np.float64), np.asarray(d.y)[keep]


def nmi_table(datasets, seeds):
    print(f"\n## NMI, multinomial mixture vs kl k-means, {seeds} seeds (mean ± std)")
    rows = []
    for name in datasets:
        X, y = load(name)
        k = len(np.unique(y))
        tf = normalize(X, "l1")
        km, mm, its, t_km, t_mm = [], [], [], 0.0, 0.0
        for seed in range(seeds):
            t0 = time.perf_counter()
            km.append(nmi(y, BregmanKMeans(k, divergence="kl", random_state=seed).fit(tf)
                          .labels_))
            t1 = time.perf_counter()
            gm = BregmanMixture(k, divergence="kl", random_state=seed).fit(X)
            mm.append(nmi(y, gm.predict(X)))
            t_km += t1 - t0
            t_mm += time.perf_counter() - t1
            its.append(gm.n_iter_)
        rows.append((name, f"{X.shape[0]} x {X.shape[1]}", k,
                     f"{np.mean(km):.3f} ± {np.std(km):.3f}", f"{np.mean(mm):.3f} ± {np.std(mm):.3f}",
                     f"{np.mean(mm) - np.mean(km):+.3f}", f"{np.mean(its):.0f}",
                     f"{t_km / seeds:.1f} / {t_mm / seeds:.1f}"))
        print(f"  {name} done", flush=True)
    table(["data", "docs x terms", "K", "kl k-means (tf)", "multinomial mixture (counts)",
           "mixture - k-means", "EM iterations", "s per fit km / mixture"], rows)


# ----------------------------------------------------------------------------- synthetic
def draw(family, k, rng):
    """A mixture of ``k`` components of ``family`` with its samples."""
    if family == "gaussian":
        d, per = 5, 100
        means = rng.normal(scale=6.0, size=(k, d))
        sd = rng.uniform(0.6, 1.4, size=k)
        y = np.repeat(np.arange(k), per)
        return means[y] + sd[y, None] * rng.normal(size=(k * per, d)), "sqeuclidean"
    if family == "multinomial":
        d, per = 60, 60
        topics = rng.dirichlet(np.full(d, 0.1), size=k)
        y = np.repeat(np.arange(k), per)
        N = rng.integers(50, 150, size=k * per)
        return np.array([rng.multinomial(m, topics[t]) for m, t in zip(N, y)], float), "kl"
    if family == "poisson":
        d, per = 10, 60
        rates = np.exp(rng.uniform(0.0, np.log(30.0), size=(k, d)))
        y = np.repeat(np.arange(k), per)
        return rng.poisson(rates[y]).astype(float), "kl"
    d, per = 6, 80
    means = np.exp(rng.uniform(0.0, np.log(50.0), size=(k, d)))
    shapes = rng.uniform(3.0, 10.0, size=k)
    y = np.repeat(np.arange(k), per)
    return rng.gamma(shapes[y, None], means[y] / shapes[y, None]), "itakura_saito"


def synthetic(draws):
    print(f"\n## choosing K by BIC on synthetic mixtures, true K = 3 .. {2 + draws}, one draw each")
    rows = []
    for family in ("gaussian", "multinomial", "poisson", "gamma"):
        hits_m = hits_k = 0
        picks_m, picks_k = [], []
        t0 = time.perf_counter()
        for i in range(draws):
            k = 3 + i
            rng = np.random.default_rng(1000 * i + 7)
            X, div = draw(family, k, rng)
            cands = list(range(max(1, k - 3), k + 4))
            gm = BregmanMixture(cands, divergence=div, family=family, n_init=3,
                                random_state=i).fit(X)
            sel = select_n_clusters(X, cands, divergence=div, family=family, n_init=3,
                                    random_state=i)
            picks_m.append(f"{gm.n_components_}/{k}")
            picks_k.append(f"{sel.n_clusters}/{k}")
            hits_m += gm.n_components_ == k
            hits_k += sel.n_clusters == k
        rows.append((family, f"{hits_m} / {draws}", " ".join(picks_m), f"{hits_k} / {draws}",
                     " ".join(picks_k), f"{time.perf_counter() - t0:.0f}"))
        print(f"  {family} done", flush=True)
    table(["family", "mixture BIC: true K chosen (target >= 9 / 10)", "chosen / true",
           "k-means X-means BIC: true K chosen", "chosen / true", "seconds"], rows)


def cluto_k(datasets):
    print("\n## K chosen by BIC on the CLUTO sets (candidates 2 .. 2 x classes, seed 0)")
    rows = []
    for name in datasets:
        X, y = load(name)
        c = len(np.unique(y))
        cands = list(range(2, 2 * c + 1))
        t0 = time.perf_counter()
        gm = BregmanMixture(cands, divergence="kl", criterion="bic", random_state=0).fit(X)
        sel = select_n_clusters(X, cands, divergence="kl", random_state=0)
        edge = lambda k: " (edge)" if k == cands[-1] else ""  # noqa: E731
        rows.append((name, c, f"{gm.n_components_}{edge(gm.n_components_)}",
                     f"{sel.n_clusters}{edge(sel.n_clusters)}",
                     f"{nmi(y, gm.predict(X)):.3f}", f"{time.perf_counter() - t0:.0f}"))
        print(f"  {name} done", flush=True)
    table(["data", "classes", "multinomial mixture BIC K", "kl k-means X-means BIC K",
           "NMI of the chosen mixture", "seconds"], rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--datasets", nargs="+", default=list(CLUTO_NAMES) + ["20ng"])
    ap.add_argument("--draws", type=int, default=10)
    ap.add_argument("--skip-nmi", action="store_true")
    ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument("--skip-cluto-k", action="store_true")
    a = ap.parse_args()
    print(f"# {machine()}")
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("ignore", EmptyClusterWarning)
    if not a.skip_nmi:
        nmi_table(a.datasets, a.seeds)
    if not a.skip_synthetic:
        synthetic(a.draws)
    if not a.skip_cluto_k:
        cluto_k([d for d in a.datasets if d != "20ng"])


if __name__ == "__main__":
    main()
