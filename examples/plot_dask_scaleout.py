"""
Scaling out with Dask
=====================

``BregmanKMeans.fit`` accepts a Dask array: each Lloyd iteration assigns the points chunk by
chunk and reduces the per-cluster sums, so the data never need to fit in one process's memory.
This example clusters a chunked array of 200,000 points with the ``kl`` divergence and compares
the result with the in-memory fit on the same data. It needs Dask (``pip install dask[array]``)
and is left out of the gallery when Dask is missing or the installed bregclust does not accept
Dask arrays.
"""

# needs: dask

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

from bregclust import BregmanKMeans

rng = np.random.default_rng(0)
centres = rng.gamma(2.0, 1.0, size=(5, 8))
labels = rng.integers(0, 5, 200_000)
X = rng.poisson(centres[labels] * 3).astype(np.float64)
Xd = da.from_array(X, chunks=(25_000, 8))

init = X[rng.choice(X.shape[0], 5, replace=False)] + 0.5
km_dask = BregmanKMeans(5, divergence="kl", init=init, n_init=1).fit(Xd)
km_mem = BregmanKMeans(5, divergence="kl", init=init, n_init=1).fit(X)
print("same labels:", np.array_equal(np.asarray(km_dask.labels_), km_mem.labels_))
print("centres agree to", np.abs(km_dask.cluster_centers_ - km_mem.cluster_centers_).max())

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(km_mem.objective_history_, "o-", label="in memory")
ax.plot(km_dask.objective_history_, "x--", label=f"Dask, {Xd.numblocks[0]} chunks")
ax.set_xlabel("iteration")
ax.set_ylabel("objective")
ax.legend()
fig.tight_layout()
