"""
kl k-means on count data
========================

Count data (word counts, pixel intensities) are non-negative and their clusters are better
described by proportions than by positions. The generalised KL divergence (``kl``) compares
rows as distributions. Here the 8x8 digits (pixel values 0-16) are normalised to proportions
and clustered with ``kl`` and with squared Euclidean distance; for text the same code applies
to term-frequency rows (see the 20 Newsgroups example when the data are available).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from bregclust import BregmanKMeans, nmi

digits = load_digits()
X = digits.data / digits.data.sum(axis=1, keepdims=True)  # each image sums to 1
y = digits.target

scores = {}
for name, smoothing in [("sqeuclidean", 0.0), ("kl", 1.0), ("kl", 10.0)]:
    km = BregmanKMeans(10, divergence=name, smoothing=smoothing, n_init=3,
                       random_state=0).fit(X)
    scores[f"{name}, smoothing={smoothing:g}"] = nmi(y, km.labels_)
    print(f"{name:12s} smoothing={smoothing:5g}  NMI {scores[f'{name}, smoothing={smoothing:g}']:.3f}")

# %%
# The centres of kl k-means (smoothing 10) are average digit shapes.
km = BregmanKMeans(10, divergence="kl", smoothing=10.0, n_init=3, random_state=0).fit(X)
fig, axes = plt.subplots(1, 10, figsize=(10, 1.6))
for z, ax in enumerate(axes):
    ax.imshow(km.cluster_centers_[z].reshape(8, 8), cmap="gray_r")
    ax.set_axis_off()
    ax.set_title(f"{np.bincount(km.labels_, minlength=10)[z]} pts", fontsize="small")

# %%
# NMI against the digit labels.
fig, ax = plt.subplots(figsize=(6, 2.4))
ax.barh(list(scores), list(scores.values()))
ax.set_xlabel("NMI")
fig.tight_layout()
