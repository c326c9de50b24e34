"""
Objective curves
================

Every iterative estimator records its objective after initialisation and after every
iteration in ``objective_history_``. For Bregman k-means, MBC, LSSMTC and MTCMRL each step is
an exact (or checked and damped) block minimisation, so the curves never go up.
"""

import matplotlib.pyplot as plt

from bregclust import (
    BregmanKMeans,
    ModelRelationClustering,
    MultitaskBregmanClustering,
    SharedSubspaceClustering,
)
from bregclust.datasets import make_digits_tasks
from bregclust.plotting import plot_objective

data = make_digits_tasks(tasks=((0, 1, 2), (1, 2, 7)), random_state=0)
Xs = [X / 16.0 for X in data.Xs]

models = [
    BregmanKMeans(3, divergence="kl", init="random", n_init=1, random_state=1).fit(Xs[0]),
    MultitaskBregmanClustering(3, divergence="kl", lam=0.5, random_state=1).fit(Xs),
    SharedSubspaceClustering(3, n_components=4, lam=0.5, max_iter=300, tol=1e-4,
                             random_state=1).fit(Xs),
    ModelRelationClustering(3, random_state=1, tol=1e-3).fit(Xs),
]
fig, axes = plt.subplots(2, 2, figsize=(9, 6.5))
for est, ax in zip(models, axes.ravel()):
    plot_objective(est, ax=ax)
    ax.title.set_fontsize("small")
fig.tight_layout()
