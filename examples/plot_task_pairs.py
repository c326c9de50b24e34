"""
Per-task NMI of independent and multi-task clustering
=====================================================

The MBC paper's Fig. 1 shows, for each task, the NMI of independent k-means (IND) against the
NMI of MBC: points above the diagonal are tasks where clustering the tasks together helped.
Here four pairs of digit tasks that share some digits, kl on pixel proportions, five seeds
each; IND and MBC start from the same seeds.
"""

import numpy as np

from bregclust import BregmanKMeans, MultitaskBregmanClustering, nmi
from bregclust.datasets import make_digits_tasks
from bregclust.plotting import plot_task_pairs

pairs = [((0, 1, 2, 3), (2, 3, 4, 5)), ((1, 4, 7), (4, 7, 9)), ((3, 5, 8), (5, 8, 9)),
         ((0, 6, 8, 9), (0, 6, 2))]
ind, mbc, names = [], [], []
for tasks in pairs:
    data = make_digits_tasks(tasks=tasks, random_state=0)
    Xs = [X / X.sum(axis=1, keepdims=True) for X in data.Xs]
    K = [len(t) for t in tasks]
    s_ind = np.zeros(2)
    s_mbc = np.zeros(2)
    for seed in range(5):
        m = MultitaskBregmanClustering(K, divergence="kl", smoothing=10.0, lam=0.1,
                                       random_state=seed).fit(Xs)
        for t in range(2):
            km = BregmanKMeans(K[t], divergence="kl", smoothing=10.0, random_state=seed)
            s_ind[t] += nmi(data.ys[t], km.fit(Xs[t]).labels_) / 5
            s_mbc[t] += nmi(data.ys[t], m.labels_[t]) / 5
    for t in range(2):
        ind.append(s_ind[t])
        mbc.append(s_mbc[t])
        names.append("".join(map(str, tasks[t])))

ax = plot_task_pairs(ind, {"MBC (kl, lam=0.1)": mbc}, task_names=names)
wins = int(np.sum(np.array(mbc) > np.array(ind)))
print(f"MBC above IND on {wins} of {len(ind)} tasks")
