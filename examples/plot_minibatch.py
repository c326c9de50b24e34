"""
Mini-batch Bregman k-means: objective against rows seen
=======================================================

:class:`~bregclust.MiniBatchBregmanKMeans` moves each centre to the mean of every row it has
received, one batch at a time; the mean is the Bregman centroid for every Bregman divergence,
so the update is exact for ``kl`` as for the squared Euclidean distance. This example clusters
40,000 rows of Poisson counts (ten overlapping clusters) with ``kl`` from the same initial
centres twice: by full-batch
Lloyd iterations (:class:`~bregclust.BregmanKMeans`, each one reads every row) and by
mini-batches of 1,024 rows fed through ``partial_fit``, as a stream would arrive. The
objective on the whole data set is plotted against the number of rows read.
"""

import matplotlib.pyplot as plt
import numpy as np

from bregclust import BregmanKMeans, MiniBatchBregmanKMeans, bregman_kmeans_plusplus

rng = np.random.default_rng(0)
rates = rng.gamma(6.0, 0.5, size=(10, 20))
X = rng.poisson(rates[rng.integers(0, 10, 40_000)]).astype(np.float64)
n = X.shape[0]
C0, _ = bregman_kmeans_plusplus(X[:5000], 10, "kl", random_state=0, smoothing="auto")

# full batch: objective_history_[i] is the objective after i + 1 reads of the data
full = BregmanKMeans(10, divergence="kl", init=C0, max_iter=40, tol=0.0).fit(X)
full_rows = n * np.arange(1, len(full.objective_history_) + 1)

# mini-batches: two passes over the rows in a random order, the objective every 4 batches
mbk = MiniBatchBregmanKMeans(10, divergence="kl", init=C0, batch_size=1024, random_state=0,
                             compute_labels=False)
rows, objective = [], []
for epoch in range(2):
    order = rng.permutation(n)
    for i, start in enumerate(range(0, n, 1024)):
        mbk.partial_fit(X[order[start:start + 1024]])
        if i % 4 == 0:
            rows.append(epoch * n + start + 1024)
            objective.append(-mbk.score(X))

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(full_rows, full.objective_history_, "o-", label="BregmanKMeans (full batch)")
ax.plot(rows, objective, ".-", label="MiniBatchBregmanKMeans, batches of 1,024")
ax.axhline(full.inertia_, color="grey", lw=0.8, ls=":")
ax.set_xscale("log")
ax.set_xlabel("rows read")
ax.set_ylabel("kl objective on all 40,000 rows")
ax.set_title("kl k-means on Poisson counts, same initial centres")
ax.legend()
fig.tight_layout()
print(f"full batch after {len(full_rows)} reads ({full_rows[-1]:,} rows): "
      f"{full.inertia_:.6g}")
print(f"mini-batch after {rows[-1]:,} rows: {objective[-1]:.6g} "
      f"({100 * (objective[-1] / full.inertia_ - 1):+.2f}%)")
