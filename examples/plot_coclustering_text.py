"""
Co-clustering words and documents of 20 Newsgroups
==================================================

Documents of four newsgroups and their 1,000 most frequent words are clustered at once with
:class:`~bregclust.BregmanCoclustering`: basis C5 with the I-divergence, which is
information-theoretic co-clustering. The word x document count matrix, reordered by the
clusters, shows the blocks; the right panel shows the block means ``E[Z | word cluster,
document cluster]`` that the approximation keeps. This example reads the 20 Newsgroups tarball
from ``$BREGCLUST_DATA`` and is left out of the gallery when it is absent.
"""

# needs: shared-data 20newsgroups/20news-bydate.tar.gz

import matplotlib.pyplot as plt
import numpy as np

from bregclust import BregmanCoclustering, nmi
from bregclust.datasets import load_20newsgroups

cats = ["comp.graphics", "rec.sport.hockey", "sci.space", "talk.religion.misc"]
data = load_20newsgroups(categories=cats, subset="train", max_features=1000,
                         stop_words="english", remove=("headers", "footers", "quotes"))
X, y, words = data.X, data.y, data.feature_names
print(f"{X.shape[0]} documents x {X.shape[1]} words, {X.nnz} non-zero counts")

cc = BregmanCoclustering(4, 6, divergence="kl", basis="C5", n_init=3, random_state=0).fit(X)
print(f"NMI of the document clusters against the newsgroups: {nmi(y, cc.row_labels_):.3f}")

# the most frequent words of each word cluster
freq = np.asarray(X.sum(axis=0)).ravel()
for h in range(6):
    idx = np.flatnonzero(cc.column_labels_ == h)
    top = idx[np.argsort(freq[idx])[::-1][:8]]
    print(f"word cluster {h} ({idx.size} words): {', '.join(words[top])}")

# %%
# The matrix reordered by word cluster (rows of the picture) and document cluster (columns).
# Each pixel averages the counts of 4 words x 8 documents, so the blocks show at this size;
# white lines separate the clusters.
rows = np.argsort(cc.row_labels_, kind="stable")
cols = np.argsort(cc.column_labels_, kind="stable")
D = X[rows][:, cols].toarray().T
M = np.add.reduceat(np.add.reduceat(D, np.arange(0, D.shape[0], 4), axis=0),
                    np.arange(0, D.shape[1], 8), axis=1) / 32.0
M = np.log10(M + 1e-2)

fig, (ax, bx) = plt.subplots(1, 2, figsize=(9, 4.2), width_ratios=[3, 1])
ax.imshow(M, aspect="auto", cmap="magma", interpolation="nearest",
          extent=(0, D.shape[1], D.shape[0], 0))
for cut in np.cumsum(np.bincount(cc.row_labels_))[:-1]:
    ax.axvline(cut, color="w", lw=0.8)
for cut in np.cumsum(np.bincount(cc.column_labels_))[:-1]:
    ax.axhline(cut, color="w", lw=0.8)
ax.set_xlabel("documents (by document cluster)")
ax.set_ylabel("words (by word cluster)")
ax.set_title("log10 mean count (4 words x 8 documents per pixel)")
im = bx.imshow(np.log10(cc.block_means_.T), cmap="magma")
bx.set_xlabel("document cluster")
bx.set_ylabel("word cluster")
bx.set_title("log10 block mean")
fig.colorbar(im, ax=bx, shrink=0.8)
fig.tight_layout()
