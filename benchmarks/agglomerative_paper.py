"""Telgarsky & Dasgupta (ICML 2012), Agglomerative Bregman Clustering: Table 1 and Sec. 7.2.

Table 1 - dendrogram purity (Sec. 7.1), the paper's numbers beside ours:
  * Euclidean data: c-link / s-link = scipy complete / single linkage with l2 distance; km = Ward
    (``bregman_linkage(X, "sqeuclidean")``); dg-nd = ``gaussian_diag`` with per-coordinate
    normal-reference smoothing; g-n = ``gaussian_full`` with one isotropic bandwidth.
  * Text: c-link / s-link with l1 distance between term-frequency vectors (rows of counts
    normalised to sum 1); multi = ``"multinomial"`` (kl on the same vectors) with its default
    smoothing; ``--multi-smoothing auto,multinomial`` adds the paper's confidence term (Example
    5.3) beside it.

Data (see ../shared/data/DATA.md):
  * glass: all 214 points, 9 raw features, 6 classes.
  * spam: the paper used 2,301 training points; a random half of spambase (2,301 of 4,601,
    seed 0), 57 raw features.
  * mnist35: the paper used 1,984 training 3s and 5s; the MNIST training images are not
    available here, so the 1,902 3s and 5s of the MNIST *test* set, 28x28 averaged to 7x7.
  * 20n-e (rec.sport.hockey + sci.crypt), 20n-h (alt.atheism + talk.religion.misc), 20n-b (all
    four): the bydate *training* documents (1,195 / 857 / 2,052; the paper: 1,192 / 856 / -),
    term counts (CountVectorizer fitted on those documents, the ``--max-terms`` most frequent
    terms; the paper used the full 61,188-word vocabulary), documents without terms dropped.
  * tr11, tr23, tr45 (not in the paper; ``--datasets tr11,tr23,tr45``): CLUTO term counts, all
    terms, empty documents dropped; text trees as for 20 Newsgroups.

Sec. 7.2 - tree features: a tree is built on training data; the features of a point ``x`` are
``Delta(C_i, {x})`` for the top ``k`` clusters (``AgglomerativeBregman.transform``); a
logistic regression (standardised features, C picked on a 25% validation split of the training
data, then refit) is trained on them and tested; SVD features (TruncatedSVD of the training
data, same classifier) are the baseline. mnist35: random half train / half test of the 1,902
images, tree g-n (the best Table 1 tree on it); 20n-e: bydate train / test, tree multi.

    python benchmarks/agglomerative_paper.py                      # everything (~10-20 min)
    python benchmarks/agglomerative_paper.py --datasets glass,20n-h --skip-features   # quick
"""

import argparse
import time

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist

from bregclust.agglomerative import AgglomerativeBregman, bregman_linkage, dendrogram_purity

PAPER = {
    "glass": {"c-link": 0.46, "s-link": 0.45, "km": 0.50, "dg-nd": 0.49, "g-n": 0.54},
    "spam": {"c-link": 0.59, "s-link": 0.58, "km": 0.59, "dg-nd": 0.65, "g-n": 0.60},
    "mnist35": {"c-link": 0.59, "s-link": 0.51, "km": 0.69, "dg-nd": 0.62, "g-n": 0.73},
    "20n-e": {"c-link": 0.60, "s-link": 0.50, "multi": 0.93},
    "20n-h": {"c-link": 0.54, "s-link": 0.52, "multi": 0.56},
    "20n-b": {"c-link": 0.31, "s-link": 0.29, "multi": 0.62},
}
EUCLID = ("c-link", "s-link", "km", "dg-nd", "g-n")
TEXT = ("c-link", "s-link", "multi")
NG = {
    "20n-e": ["rec.sport.hockey", "sci.crypt"],
    "20n-h": ["alt.atheism", "talk.religion.misc"],
    "20n-b": ["rec.sport.hockey", "sci.crypt", "alt.atheism", "talk.religion.misc"],
}


#: Text sets beyond the paper's (no paper numbers): CLUTO term counts, all terms.
CLUTO = ("tr11", "tr23", "tr45")


def _is_text(name):
    return name.startswith("20n") or name in CLUTO


def load(name, max_terms, seed=0):
    from bregclust import datasets as ds

    if name == "glass":
        d = ds.load_glass()
        return d.X, d.y, d.description
    if name == "spam":
        d = ds.load_spambase()
        idx = np.sort(np.random.default_rng(seed).permutation(d.X.shape[0])[:2301])
        return d.X[idx], d.y[idx], d.description + f" Random half: 2301 points (seed {seed})."
    if name in CLUTO:
        d = ds.load_cluto(name)
        X = d.X.tocsr()
        keep = np.asarray(X.sum(axis=1)).ravel() > 0
        return X[keep], d.y[keep], d.description + f" {int((~keep).sum())} empty rows dropped."
    if name == "mnist35":
        d = ds.load_mnist35()
        return d.X, d.y, d.description
    d = ds.load_20newsgroups(categories=NG[name], subset="train", max_features=max_terms)
    return d.X, d.y, d.description


def euclid_trees(X):
    return {
        "c-link": lambda: linkage(X, "complete"),
        "s-link": lambda: linkage(X, "single"),
        "km": lambda: bregman_linkage(X, "sqeuclidean"),
        "dg-nd": lambda: bregman_linkage(X, "gaussian_diag", smoothing="nd"),
        "g-n": lambda: bregman_linkage(X, "gaussian_full", smoothing="n"),
    }


def text_trees(X, weighted, smoothings=("auto",)):
    """Trees of the text table; one multinomial tree (and weighted tree) per smoothing, the
    first labelled "multi", the others "multi [smoothing]"."""
    T = X.multiply(1.0 / X.sum(axis=1)).tocsr()
    trees = {
        "c-link": lambda: linkage(pdist(T.toarray(), "cityblock"), "complete"),
        "s-link": lambda: linkage(pdist(T.toarray(), "cityblock"), "single"),
    }
    lengths = np.asarray(X.sum(axis=1)).ravel()
    for i, sm in enumerate(smoothings):
        tag = "" if i == 0 else f" [{sm}]"
        trees["multi" + tag] = lambda sm=sm: bregman_linkage(X, "multinomial", smoothing=sm)
        if weighted:
            trees["multi (length-weighted)" + tag] = lambda sm=sm: bregman_linkage(
                X, "multinomial", smoothing=sm, sample_weight=lengths)
    return trees


def text_columns(weighted, smoothings):
    """Column names of the text table, in the order of :func:`text_trees`."""
    cols = list(TEXT[:2])
    for i, sm in enumerate(smoothings):
        tag = "" if i == 0 else f" [{sm}]"
        cols.append("multi" + tag)
        if weighted:
            cols.append("multi (length-weighted)" + tag)
    return tuple(cols)


def table1(names, max_terms, weighted, smoothings=("auto",)):
    rows = []
    for name in names:
        X, y, desc = load(name, max_terms)
        text = _is_text(name)
        trees = text_trees(X, weighted, smoothings) if text else euclid_trees(X)
        print(f"\n{name}: {X.shape[0]} x {X.shape[1]}, {np.unique(y).size} classes. {desc}",
              flush=True)
        for method, build in trees.items():
            t = time.perf_counter()
            Z = build()
            dt = time.perf_counter() - t
            p = dendrogram_purity(Z, y)
            ref = PAPER.get(name, {}).get(method)
            rows.append((name, method, p, ref, dt))
            print(f"  {method:24s} purity {p:.3f}   paper {ref if ref is not None else '-'}   "
                  f"({dt:.1f} s)", flush=True)
    print("\n### Table 1: dendrogram purity, ours (paper)\n")
    for group, methods in (("Euclidean", EUCLID), ("text", text_columns(weighted, smoothings))):
        sel = [r for r in rows if _is_text(r[0]) == (group == "text")]
        if not sel:
            continue
        print("| " + group + " | " + " | ".join(methods) + " |")
        print("|---" * (len(methods) + 1) + "|")
        for name in dict.fromkeys(r[0] for r in sel):
            cells = []
            for m in methods:
                r = [x for x in sel if x[0] == name and x[1] == m]
                if not r:
                    cells.append("-")
                else:
                    _, _, p, ref, _ = r[0]
                    cells.append(f"{p:.2f} ({ref:.2f})" if ref is not None else f"{p:.2f}")
            print(f"| {name} | " + " | ".join(cells) + " |")
        print()
    return rows


def _fit_logreg(F, y, Ftest, seed):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    Ftr, Fva, ytr, yva = train_test_split(F, y, test_size=0.25, random_state=seed, stratify=y)
    best = None
    for C in (0.01, 0.1, 1.0, 10.0, 100.0):
        clf = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000))
        acc = clf.fit(Ftr, ytr).score(Fva, yva)
        if best is None or acc > best[0]:
            best = (acc, C)
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=best[1], max_iter=2000))
    return clf.fit(F, y), best[1]


def features(ks, max_terms, seed=0):
    from sklearn.decomposition import TruncatedSVD

    from bregclust import datasets as ds

    out = {}
    # mnist35: half / half split of the test-set 3s and 5s
    d = ds.load_mnist35()
    perm = np.random.default_rng(seed).permutation(d.X.shape[0])
    tr, te = perm[: perm.size // 2], perm[perm.size // 2:]
    sets = {"mnist35 (g-n tree)": (d.X[tr], d.y[tr], d.X[te], d.y[te], "gaussian_full", "n")}
    ng = ds.load_20newsgroups(categories=NG["20n-e"], subset="all", max_features=max_terms)
    trm, tem = ng.subset == "train", ng.subset == "test"
    sets["20n-e (multi tree)"] = (ng.X[trm], ng.y[trm], ng.X[tem], ng.y[tem], "multinomial", "auto")
    for name, (Xtr, ytr, Xte, yte, model, smoothing) in sets.items():
        t = time.perf_counter()
        kmax = max(ks)
        est = AgglomerativeBregman(2, model=model, smoothing=smoothing, n_features=kmax).fit(Xtr)
        Ftr, Fte = est.transform(Xtr), est.transform(Xte)
        tree_s = time.perf_counter() - t
        dense = not hasattr(Xtr, "toarray")
        Str = Xtr if dense else Xtr.multiply(1.0 / Xtr.sum(axis=1)).tocsr()
        Ste = Xte if dense else Xte.multiply(1.0 / Xte.sum(axis=1)).tocsr()
        rows = []
        for k in ks:
            clf, _ = _fit_logreg(Ftr[:, :k], ytr, None, seed)
            acc_tree = clf.score(Fte[:, :k], yte)
            acc_svd = None
            if k < min(Str.shape):
                svd = TruncatedSVD(k, random_state=seed).fit(Str)
                clf, _ = _fit_logreg(svd.transform(Str), ytr, None, seed)
                acc_svd = clf.score(svd.transform(Ste), yte)
            rows.append((k, acc_tree, acc_svd))
        out[name] = rows
        print(f"\n### Sec. 7.2 tree features: {name}; train {Xtr.shape[0]}, test {Xte.shape[0]} "
              f"(tree + features {tree_s:.1f} s)\n")
        print("| k features | tree features acc | SVD features acc |")
        print("|---|---|---|")
        for k, a, b in rows:
            print(f"| {k} | {a:.3f} | {'-' if b is None else f'{b:.3f}'} |")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="glass,spam,mnist35,20n-e,20n-h,20n-b")
    ap.add_argument("--max-terms", type=int, default=5000)
    ap.add_argument("--skip-table", action="store_true")
    ap.add_argument("--skip-features", action="store_true")
    ap.add_argument("--weighted", action="store_true",
                    help="also the multinomial tree with document-length weights")
    ap.add_argument("--multi-smoothing", default="auto",
                    help="comma-separated smoothings of the multinomial trees (the first is the "
                         "'multi' column; e.g. auto,multinomial adds the confidence term beside "
                         "the default)")
    ap.add_argument("--ks", default="2,4,8,16,32,64,128")
    args = ap.parse_args(argv)
    print(f"# agglomerative_paper ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    if not args.skip_table:
        table1([s.strip() for s in args.datasets.split(",") if s.strip()], args.max_terms,
               args.weighted, [s.strip() for s in args.multi_smoothing.split(",") if s.strip()])
    if not args.skip_features:
        features([int(k) for k in args.ks.split(",")], args.max_terms)


if __name__ == "__main__":
    main()
