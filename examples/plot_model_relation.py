"""
MTCMRL: learned relations between clusters of tasks
====================================================

Model relation learning (MTCMRL) clusters each task by symmetric NMF of a cosine similarity
matrix, ties each cluster to a linear regression model, and learns a relation matrix
``G^(t,s)`` between the clusters of every pair of tasks that pulls the models of related
clusters together. The tasks may have different numbers of clusters: here three digits in task
0 and four in task 1, two of them shared. The heat map shows ``G^(0,1)``.
"""

import matplotlib.pyplot as plt

from bregclust import ModelRelationClustering, nmi
from bregclust.datasets import make_digits_tasks
from bregclust.plotting import plot_objective, plot_relations

data = make_digits_tasks(tasks=((1, 4, 7), (4, 7, 0, 6)), random_state=0)
est = ModelRelationClustering([3, 4], lam=1.0, alpha=4.0, random_state=0).fit(data.Xs)
base = ModelRelationClustering([3, 4], lam=1.0, alpha=0.0, beta=0.0,
                               random_state=0).fit(data.Xs)
for t, y in enumerate(data.ys):
    print(f"task {t}: NMI SNMF+LR {nmi(y, base.labels_[t]):.3f}  "
          f"MTCMRL {nmi(y, est.labels_[t]):.3f}")

fig, (a0, a1) = plt.subplots(1, 2, figsize=(12, 4.8), width_ratios=[1.4, 1])
plot_relations(est, ys=data.ys, class_names=data.target_names, ax=a0)
plot_objective(est, ax=a1)
a1.title.set_fontsize("small")
fig.tight_layout()
