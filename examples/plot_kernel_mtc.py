"""
Kernel multi-task clustering (LNKMTC / LSKMTC): where it works and where it does not
====================================================================================

LNKMTC and LSKMTC learn one kernel over all tasks from the tasks' cosine kNN graphs and a
penalty (weight ``C``) on the distance between the task means in feature space; kernel k-means
on that kernel gives the labels. Each point of the left panels compares a method's per-task
NMI with k-means on the task alone (tf-idf rows for the text, pixels for the digits); NCut
(scikit-learn's spectral clustering on the same kind of 10-NN graph) is the single-task method
of the same family.

* **Where it works: a large text corpus with many classes.** The 20 Newsgroups test split
  (headers, footers and quotes removed, 5,000 tf-idf terms) cut at random into two tasks of
  about 3,700 documents, 20 groups each. LNKMTC (``C="auto"``) is well above k-means (NMI about
  0.40 against 0.31-0.32) and slightly above NCut: it works as a graph (kernel) method.
* **Where it does not: the bundled digits tasks.** NCut on each task's own 10-NN graph is far
  better (NMI about 0.88 against 0.69-0.77); the learned kernels are at the level of plain
  k-means, above it on one task and below on the other.

The right panel shows LSKMTC's learned weights ``mu`` on the graph Laplacian's smoothest
eigenvectors, with their eigenvalues. The vertices of its linear programme (``1 >= mu_1 >= ...
>= mu_r >= 0``, ``sum mu = b``) are flat: ``b / j`` on the first ``j`` eigenvectors, so the
solution spreads ``b = 1`` evenly over the ``j`` smoothest ones whose mean cost
``lambda + C s`` is lowest, and the kernel is a plain spectral embedding of the graph of
dimension ``j``. ``benchmarks/mtc_compare.py`` measures every method against the best
single-task baseline on 13 data sets (README, "Which method when").

This example reads the 20 Newsgroups tarball from ``$BREGCLUST_DATA`` and is left out of the
gallery when it is absent.
"""

# needs: shared-data 20newsgroups/20news-bydate.tar.gz

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import SpectralClustering
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.preprocessing import normalize

from bregclust import BregmanKMeans, NonparametricKernelMTC, SpectralKernelMTC, nmi
from bregclust.datasets import load_20newsgroups, make_digits_tasks
from bregclust.plotting import plot_task_pairs


def newsgroups_halves():
    """20 Newsgroups (test split), tf-idf rows, cut at random into two tasks."""
    d = load_20newsgroups(subset="test", max_features=5000, stop_words="english",
                          remove=("headers", "footers", "quotes"))
    X = normalize(TfidfTransformer().fit_transform(d.X))
    keep = np.asarray(X.sum(axis=1)).ravel() > 0
    X, y = X[keep], d.y[keep]
    perm = np.random.RandomState(0).permutation(X.shape[0])
    halves = np.array_split(perm, 2)
    return [X[h] for h in halves], [y[h] for h in halves]


def compare(Xs, ys, ks):
    km = [nmi(y, BregmanKMeans(k, n_init=3, random_state=0).fit(X).labels_)
          for X, y, k in zip(Xs, ys, ks)]
    ncut = [nmi(y, SpectralClustering(k, affinity="nearest_neighbors", n_neighbors=10,
                                      random_state=0).fit(X).labels_)
            for X, y, k in zip(Xs, ys, ks)]
    ln = NonparametricKernelMTC(ks, random_state=0).fit(Xs)
    ls = SpectralKernelMTC(ks, C=1000.0, random_state=0).fit(Xs)
    scores = {f"LNKMTC (C={ln.C_:g})": [nmi(y, lab) for y, lab in zip(ys, ln.labels_)],
              "LSKMTC (C=1000)": [nmi(y, lab) for y, lab in zip(ys, ls.labels_)],
              "NCut (single task)": ncut}
    return km, scores, ls


text_Xs, text_ys = newsgroups_halves()
digits = make_digits_tasks()
panels = [("20 Newsgroups, two random halves", text_Xs, text_ys),
          ("digits 0-5 and 3-9", digits.Xs, digits.ys)]

fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), width_ratios=[1, 1, 1.2])
for ax, (title, Xs, ys) in zip(axes[:2], panels):
    ks = [int(np.unique(y).size) for y in ys]
    km, scores, ls = compare(Xs, ys, ks)
    print(title)
    print(f"  k-means (single task)  NMI {np.round(km, 3)}")
    for name, s in scores.items():
        print(f"  {name:22s} NMI {np.round(s, 3)}")
    plot_task_pairs(km, scores, task_names=["task 0", "task 1"], ax=ax, baseline="k-means")
    ax.set_title(title, fontsize="medium")
    if Xs is text_Xs:
        text_ls = ls

ax = axes[2]
r = np.arange(text_ls.mu_.size)
ax.bar(r, text_ls.mu_, color="tab:blue", label="learned weight mu")
ax.set_xlabel("eigenvector of the Laplacian (smoothest first)")
ax.set_ylabel("weight")
ax2 = ax.twinx()
ax2.plot(r, text_ls.eigenvalues_, "k.-", label="eigenvalue of L")
ax2.set_ylabel("eigenvalue of L")
ax.set_title(f"LSKMTC on the newsgroups: b = 1 spread over the\n"
             f"{int(np.count_nonzero(text_ls.mu_ > 1e-9))} smoothest eigenvectors",
             fontsize="medium")
fig.tight_layout()
