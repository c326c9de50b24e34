"""
kl k-means on 20 Newsgroups
===========================

Term-frequency rows of four newsgroups, clustered with ``kl`` (KL divergence on the simplex)
and with squared Euclidean distance on tf-idf. This example reads the 20 Newsgroups tarball
from ``$BREGCLUST_DATA`` and is left out of the gallery when it is absent.
"""

# needs: shared-data 20newsgroups/20news-bydate.tar.gz

import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.preprocessing import normalize

from bregclust import BregmanKMeans, nmi
from bregclust.datasets import load_20newsgroups

cats = ["comp.graphics", "rec.sport.hockey", "sci.space", "talk.religion.misc"]
data = load_20newsgroups(categories=cats, subset="train", max_features=2000,
                         stop_words="english")
counts, y = data.X, data.y
keep = np.asarray(counts.sum(axis=1)).ravel() > 0
counts, y = counts[keep], y[keep]
tf = normalize(counts.astype(np.float64), norm="l1")
tfidf = normalize(TfidfTransformer().fit_transform(counts))

results = {}
for label, X, div, smoothing in [("sqeuclidean on tf-idf", tfidf, "sqeuclidean", 0.0),
                                 ("kl on tf, smoothing 1", tf, "kl", 1.0),
                                 ("kl on tf, smoothing 100", tf, "kl", 100.0)]:
    km = BregmanKMeans(4, divergence=div, smoothing=smoothing, n_init=3,
                       random_state=0).fit(X)
    results[label] = nmi(y, km.labels_)
    print(f"{label:26s} NMI {results[label]:.3f}")

fig, ax = plt.subplots(figsize=(6, 2.6))
ax.barh(list(results), list(results.values()))
ax.set_xlabel("NMI against the newsgroups")
ax.set_title(f"{counts.shape[0]} documents, {counts.shape[1]} terms")
fig.tight_layout()
