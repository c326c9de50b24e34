"""
Agglomerative Bregman dendrograms
=================================

Bottom-up clustering of 120 digits (0, 1, 7 and 4) with three merge costs: Ward
(``sqeuclidean``), the multinomial model (kl on pixel proportions) and diagonal Gaussians with
the normal-reference bandwidth. Leaves are coloured by digit and the title gives the
dendrogram purity: the average, over pairs of same-digit images, of the purity of the smallest
cluster containing both.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from bregclust import bregman_linkage
from bregclust.plotting import plot_dendrogram

digits = load_digits()
rng = np.random.default_rng(0)
keep = np.concatenate([rng.choice(np.flatnonzero(digits.target == d), 30, replace=False)
                       for d in (0, 1, 7, 4)])
X, y = digits.data[keep], digits.target[keep]

fig, axes = plt.subplots(3, 1, figsize=(9, 9))
for ax, model in zip(axes, ["sqeuclidean", "multinomial", "gaussian_diag"]):
    Z = bregman_linkage(X, model, heights="cumulative")
    plot_dendrogram(Z, y, ax=ax)
    ax.set_title(f"{model}: {ax.get_title()}", fontsize="small")
    ax.set_ylabel("cumulative cost")
fig.tight_layout()
