"""
Cosine clustering of 20 Newsgroups: spherical k-means and von Mises-Fisher mixtures
=====================================================================================

Documents compared by the angle between their tf-idf vectors - cosine similarity - is what
text users usually ask for. ``divergence="cosine"`` scales every row to unit length and
clusters directions: :class:`~bregclust.BregmanKMeans` becomes spherical k-means (the centre
of a cluster is its normalised mean) and :class:`~bregclust.BregmanMixture` a mixture of von
Mises-Fisher (vMF) distributions, whose concentration ``kappa`` per component lets a tight
topic and a diffuse one coexist; ``assignment="hard"`` fits the same model by classification
EM (hard-moVMF).

Two representations of the same documents:

* **tf-idf rows** (sparse, one column per term);
* **LSA unit rows**: the tf-idf rows projected on their 100 leading singular directions
  (:class:`sklearn.decomposition.TruncatedSVD`) and scaled back to unit length - short dense
  rows, as sentence embeddings are.

Beside them, squared Euclidean k-means on the same rows and the multinomial mixture on the raw
term counts. **Subsample**: to keep the docs build short, 100 messages are drawn from each of
the 20 groups (2,000 documents, the "small-news20" set of Banerjee, Dhillon, Ghosh & Sra,
JMLR 2005), message headers removed; ``benchmarks/cosine_quality.py`` runs ten seeds on this
and other subsets. This example reads the 20 Newsgroups tarball from ``$BREGCLUST_DATA`` and
is left out of the gallery when it is absent.
"""

# needs: shared-data 20newsgroups/20news-bydate.tar.gz

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.preprocessing import normalize

from bregclust import BregmanKMeans, BregmanMixture, nmi
from bregclust.datasets import load_20newsgroups

data = load_20newsgroups(remove=("headers",), stop_words="english", min_df=2)
rng = np.random.default_rng(0)
keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(data.y == g), 100, replace=False)
                               for g in range(20)]))
counts, y = data.X[keep], data.y[keep]
counts = counts[:, np.flatnonzero(np.asarray((counts > 0).sum(axis=0)).ravel() >= 2)]
nonempty = np.asarray(counts.sum(axis=1)).ravel() > 0
counts, y = counts[nonempty], y[nonempty]
tfidf = normalize(TfidfTransformer().fit_transform(counts))
lsa = normalize(TruncatedSVD(100, random_state=0).fit_transform(tfidf))
print(f"{counts.shape[0]} documents, {counts.shape[1]} terms; LSA rows {lsa.shape}")

# %%
# Every method with k = 20 (the number of newsgroups), three restarts, one seed.
k = 20
fits = {
    "tf-idf": [
        ("squared Euclidean k-means", lambda: BregmanKMeans(k, n_init=3, random_state=0)),
        ("spherical k-means", lambda: BregmanKMeans(k, divergence="cosine", n_init=3,
                                                    random_state=0)),
        ("vMF mixture (soft)", lambda: BregmanMixture(k, divergence="cosine", n_init=3,
                                                      random_state=0)),
        ("vMF mixture (hard)", lambda: BregmanMixture(k, divergence="cosine", n_init=3,
                                                      assignment="hard", random_state=0)),
    ],
    "LSA unit rows": [
        ("squared Euclidean k-means", lambda: BregmanKMeans(k, n_init=3, random_state=0)),
        ("spherical k-means", lambda: BregmanKMeans(k, divergence="cosine", n_init=3,
                                                    random_state=0)),
        ("vMF mixture (soft)", lambda: BregmanMixture(k, divergence="cosine", n_init=3,
                                                      random_state=0)),
    ],
    "term counts": [
        ("multinomial mixture", lambda: BregmanMixture(k, divergence="kl", random_state=0)),
    ],
}
rows = {"tf-idf": tfidf, "LSA unit rows": lsa, "term counts": counts}
scores, models = [], {}
for rep, methods in fits.items():
    for name, make in methods:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning of a short run
            model = make()
            labels = model.fit_predict(rows[rep])
        models[rep, name] = model
        scores.append((f"{name}\non {rep}", nmi(y, labels)))
        print(f"{rep:14s} {name:27s} NMI {scores[-1][1]:.3f}  "
              f"({time.perf_counter() - t0:.1f} s)")

# %%
# The vMF mixture's concentrations: one ``kappa`` per component (``1 / dispersion_``); on
# unit rows in ``d`` dimensions a component whose rows have mean resultant length ``r`` gets
# ``kappa`` near ``r (d - r^2) / (1 - r^2)``.
kappa = np.sort(1.0 / models["LSA unit rows", "vMF mixture (soft)"].dispersion_)
print(f"kappa on the LSA rows: min {kappa[0]:.0f}, median {np.median(kappa):.0f}, "
      f"max {kappa[-1]:.0f}")

fig, ax = plt.subplots(figsize=(6.5, 4.2))
ax.barh([s[0] for s in scores][::-1], [s[1] for s in scores][::-1])
ax.set_xlabel("NMI against the 20 newsgroups")
ax.set_title(f"{counts.shape[0]} messages (100 per group), k = 20")
ax.tick_params(axis="y", labelsize=8)
fig.tight_layout()
plt.show()
