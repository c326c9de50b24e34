"""
Soft clustering of text: a mixture of multinomials
==================================================

:class:`~bregclust.BregmanMixture` with ``divergence="kl"`` is the classic mixture of
multinomials on raw term counts: every document gets a posterior probability for every
component (``predict_proba``), not only a label. Most documents of four newsgroups are
assigned with near certainty; the few the model hesitates over are worth reading. The left
panel shows the criterion of 2 to 8 components (``criterion="auto"``: BIC; the lower the better;
``criterion="cv"`` would draw minus the 3-fold held-out log-likelihood per document), the right
one the posterior probability of the most likely of four
components for every document. This example reads the 20
Newsgroups tarball from ``$BREGCLUST_DATA`` and is left out of the gallery when it is absent.
"""

# needs: shared-data 20newsgroups/20news-bydate.tar.gz

import matplotlib.pyplot as plt
import numpy as np

from bregclust import BregmanMixture, nmi
from bregclust.datasets import load_20newsgroups
from bregclust.plotting import plot_criterion_path

cats = ["comp.graphics", "rec.sport.hockey", "sci.space", "talk.religion.misc"]
data = load_20newsgroups(categories=cats, subset="train", max_features=2000,
                         stop_words="english", remove=("headers", "footers", "quotes"),
                         return_text=True)
X, y = data.X, data.y
terms = np.asarray(data.feature_names)
print(f"{X.shape[0]} documents, {X.shape[1]} terms")

# BIC over 2 to 8 components (the curve is drawn below)
path = BregmanMixture(range(2, 9), divergence="kl", random_state=0).fit(X)
print(f"{path.criterion_} chooses {path.n_components_} components")

# four components, one per newsgroup, and the posterior of every document
gm = BregmanMixture(4, divergence="kl", n_init=3, random_state=0).fit(X)
print(f"NMI with the newsgroups {nmi(y, gm.predict(X)):.3f}")
corpus = np.asarray(X.sum(axis=0)).ravel() / X.sum()
for h in np.argsort(-gm.weights_):
    p = gm.means_[h]
    top = terms[np.argsort(-p * np.log(p / corpus))[:8]]  # their part of KL(p || corpus)
    print(f"  component {h} ({gm.weights_[h]:.0%} of documents): {' '.join(top)}")

P = gm.predict_proba(X)
best = P.max(axis=1)
print(f"{np.mean(best > 0.99):.0%} of documents have a posterior above 0.99")
print("\nThe documents the model hesitates over most:")
for i in np.argsort(best)[:5]:
    two = np.argsort(-P[i])[:2]
    words = " ".join(data.data[i].split())[:110]
    print(f"  [{cats[y[i]]}] components {two[0]} ({P[i, two[0]]:.2f}) / {two[1]} "
          f"({P[i, two[1]]:.2f}): {words}...")

fig, (a0, a1) = plt.subplots(1, 2, figsize=(10, 3.6))
plot_criterion_path(path, ax=a0)
a1.hist(best, bins=40)
a1.set_yscale("log")
a1.set_xlabel("posterior of the most likely component")
a1.set_ylabel("documents")
a1.set_title("how sure the mixture is, per document")
fig.tight_layout()
