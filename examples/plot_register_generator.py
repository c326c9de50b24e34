"""
Registering your own generator
==============================

A separable Bregman divergence is defined by a scalar, strictly convex function ``f`` and its
derivative. Here ``f(x) = exp(x)`` gives the *exponential loss* divergence
``d(x, y) = sum exp(x) - exp(y) - (x - y) exp(y)``, which is harsher on points above the centre
than below it. Once registered, every estimator accepts the new name.
"""

import math

import matplotlib.pyplot as plt
import numpy as np

from bregclust import (
    BregmanKMeans,
    get_divergence,
    register_divergence,
    unregister_divergence,
)
from bregclust.plotting import plot_divergence_balls

register_divergence(
    "exp_loss",
    phi=lambda x: math.exp(x),
    dphi=lambda x: math.exp(x),
    dphi_inv=lambda t: math.log(t),
    domain="real",
    overwrite=True,
    formula="sum exp(x) - exp(y) - (x - y) exp(y)",
)
div = get_divergence("exp_loss")
print(div)
print("d([0, 0], [1, 1]) =", div.divergence(np.zeros(2), np.ones(2)))
print("d([1, 1], [0, 0]) =", div.divergence(np.ones(2), np.zeros(2)))

# %%
# Cluster three blobs with the new divergence and with squared Euclidean distance.
rng = np.random.default_rng(0)
X = np.vstack([rng.normal(c, 0.35, (60, 2)) for c in ([0, 0], [1.5, 0], [0.7, 1.4])])
fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
for ax, name in zip(axes[:2], ["sqeuclidean", "exp_loss"]):
    km = BregmanKMeans(3, divergence=name, random_state=0).fit(X)
    ax.scatter(X[:, 0], X[:, 1], c=km.labels_, s=10, cmap="tab10")
    ax.scatter(*km.cluster_centers_.T, marker="x", c="k", s=60)
    ax.set_title(f"{name}: objective {km.objective_history_[-1]:.2f}")
    ax.set_aspect("equal")
plot_divergence_balls(["exp_loss"], center=(0.5, 0.5), levels=(0.1, 0.3, 0.6), extent=1.5,
                      axes=[axes[2]])
axes[2].set_title("exp_loss balls around (0.5, 0.5)")
fig.tight_layout()

# %%
# Registered names are global to the process; remove it when done.
unregister_divergence("exp_loss")
