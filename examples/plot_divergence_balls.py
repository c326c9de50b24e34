"""
Bregman balls of the built-in divergences
=========================================

The level sets ``{x : d(x, c) = r}`` around one centre ``c``, for every built-in divergence
that needs no parameter, plus a Mahalanobis divergence with a chosen matrix. Squared Euclidean
balls are circles; kl and Itakura-Saito balls are lopsided (a relative error near zero costs
more) and live in their domains only; the l1 subgradient divergence only notices sign changes.
"""

import numpy as np

from bregclust import get_divergence
from bregclust.plotting import plot_divergence_balls

A = np.array([[2.0, 0.9], [0.9, 1.0]])
names = ["sqeuclidean", get_divergence("mahalanobis", A=A), "kl", "itakura_saito",
         "l1_subgradient"]
axes = plot_divergence_balls(names, center=(1.0, 1.0), levels=(0.05, 0.2, 0.5, 1.0))
axes[0].figure.suptitle("d(x, c) = r around c = (1, 1)")
