"""Clustering quality on text: mixtures of von Mises-Fisher distributions and spherical k-means
against squared Euclidean k-means on tf-idf and the multinomial mixture on counts (NMI).

Methods (k = the number of classes, one fit per seed, ``--runs`` seeds, mean +- std of NMI):
* ``spkmeans``: ``BregmanKMeans(k, divergence="cosine")`` on tf-idf rows (Dhillon & Modha 2001);
* ``soft-moVMF``: ``BregmanMixture(k, divergence="cosine")`` (a kappa per component, EM);
* ``hard-moVMF``: the same model fitted by classification EM (each row given wholly to its
  most probable component), written here on ``bregclust._vmf`` (the estimator has no hard EM
  option) and started from the soft fit's seeds (spherical k-means++ then one hard partition);
* ``sq k-means``: ``BregmanKMeans(k)`` (squared Euclidean) on the same tf-idf rows;
* ``multinomial``: ``BregmanMixture(k, divergence="kl")`` (mixture of multinomials) on counts.

Data: the CLUTO sets in ``$BREGCLUST_DATA/cluto_docs`` (term counts; tf-idf = scikit-learn's
``TfidfTransformer``, rows L2-normalised) and three subsets of 20 Newsgroups defined as in
Banerjee et al. (2005): news20-diff3 (alt.atheism, rec.sport.baseball, sci.space),
news20-same3 (comp.graphics, comp.os.ms-windows.misc, comp.windows.x), each ``--per-group``
documents per group drawn at random (seeded), and small-news20 (``--per-group`` documents of
each of the 20 groups); headers kept, English stop words removed, terms in >= 2 documents.
The paper's printed figures were not available to this script; only the "as run" rows are
printed.

Run: python benchmarks/cosine_quality.py [--runs 10] [--datasets tr11 tr23 ...]
[--per-group 100]
"""

import argparse
import time
import warnings

import numpy as np
from _common import machine, table
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.preprocessing import normalize

from bregclust import BregmanKMeans, BregmanMixture
from bregclust._vmf import KAPPA_MAX, KAPPA_MIN, concentration, log_normaliser
from bregclust.metrics import nmi

CLUTO = ["tr11", "tr23", "tr45", "reviews", "hitech"]
NG = {"news20-diff3": ["alt.atheism", "rec.sport.baseball", "sci.space"],
      "news20-same3": ["comp.graphics", "comp.os.ms-windows.misc", "comp.windows.x"],
      "small-news20": None}


def load(name, per_group, seed=0):
    """``(counts CSR, tf-idf CSR with unit rows, labels)`` of one data set."""
    if name in NG:
        from bregclust.datasets import load_20newsgroups
        ng = load_20newsgroups(categories=NG[name], vectorizer="count")
        rng = np.random.default_rng(seed)
        keep = np.concatenate([rng.choice(np.flatnonzero(ng.y == c),
                                          min(per_group, int(np.sum(ng.y == c))),
                                          replace=False) for c in np.unique(ng.y)])
        X, y = ng.X[np.sort(keep)], ng.y[np.sort(keep)]
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
        vocab = np.asarray(ng.feature_names) if hasattr(ng, "feature_names") else None
        cols = np.asarray((X > 0).sum(axis=0)).ravel() >= 2
        if vocab is not None:
            cols &= ~np.isin(vocab, list(ENGLISH_STOP_WORDS))
        X = X[:, np.flatnonzero(cols)]
    else:
        from bregclust.datasets import load_cluto
        b = load_cluto(name)
        X, y = b.X, b.y
    X = X.tocsr().astype(np.float64)
    nz = np.asarray(X.sum(axis=1)).ravel() > 0
    X, y = X[nz], y[nz]
    T = normalize(TfidfTransformer().fit_transform(X))
    return X, T.tocsr(), np.asarray(y)


def hard_movmf(T, k, seed, max_iter=100):
    """Classification EM of a vMF mixture from a soft fit's start (one M-step of it)."""
    start = BregmanMixture(k, divergence="cosine", max_iter=1, random_state=seed).fit(T)
    M, kap, logpi = start.means_, 1.0 / start.dispersion_, np.log(start.weights_)
    d = T.shape[1]
    labels = None
    for _ in range(max_iter):
        L = logpi + log_normaliser(d, kap) + np.asarray(T @ M.T) * kap
        new = L.argmax(axis=1)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        for h in range(k):
            rows = labels == h
            if not rows.any():
                continue
            s = np.asarray(T[rows].sum(axis=0)).ravel()
            r = np.linalg.norm(s)
            M[h] = s / r
            kap[h] = np.clip(concentration(d, r / rows.sum())[0], KAPPA_MIN, KAPPA_MAX)
        with np.errstate(divide="ignore"):
            logpi = np.log(np.bincount(labels, minlength=k) / T.shape[0])
    return labels


def methods(X, T, k, seed):
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["spkmeans"] = BregmanKMeans(k, divergence="cosine", random_state=seed).fit(T).labels_
        out["soft-moVMF"] = BregmanMixture(k, divergence="cosine",
                                           random_state=seed).fit_predict(T)
        out["hard-moVMF"] = hard_movmf(T, k, seed)
        out["sq k-means"] = BregmanKMeans(k, random_state=seed).fit(T).labels_
        out["multinomial"] = BregmanMixture(k, divergence="kl", random_state=seed).fit_predict(X)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--datasets", nargs="+", default=CLUTO + list(NG))
    ap.add_argument("--per-group", type=int, default=100)
    a = ap.parse_args()
    print(f"# {machine()}")
    print(f"# NMI over {a.runs} seeds (mean +- std); k = number of classes")
    names = ["spkmeans", "soft-moVMF", "hard-moVMF", "sq k-means", "multinomial"]
    rows = []
    for ds in a.datasets:
        t0 = time.perf_counter()
        X, T, y = load(ds, a.per_group)
        k = len(np.unique(y))
        scores = {m: [] for m in names}
        for seed in range(a.runs):
            for m, lab in methods(X, T, k, seed).items():
                scores[m].append(nmi(y, lab))
        rows.append([f"{ds} ({X.shape[0]}x{X.shape[1]}, k={k})"]
                    + [f"{np.mean(scores[m]):.3f} +- {np.std(scores[m]):.3f}" for m in names]
                    + [f"{time.perf_counter() - t0:.0f}"])
        print("| " + " | ".join(rows[-1]) + " |", flush=True)
    print("\n## NMI, as run")
    table(["data"] + names + ["seconds"], rows)
    best = sum(1 for r in rows if max(range(5), key=lambda i: float(r[1 + i].split()[0])) in (0, 1, 2))
    print(f"\ncosine methods (spkmeans / soft / hard moVMF) best on {best} of {len(rows)} data sets")


if __name__ == "__main__":
    main()
