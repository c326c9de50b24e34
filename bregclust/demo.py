"""The rows of ``bregclust demo``: every method on the same related tasks, one scores helper.

Each ``demo_*`` function takes the tasks ``Xs``, their true labels ``ys`` and a seed and returns
rows ``(method name, [(nmi, ari, accuracy) per task])``. :data:`DEMOS` lists them in the order
the command prints them. The estimators themselves hold no evaluation code.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .agglomerative import AgglomerativeBregman
from .divergences import get_divergence
from .kernel_mtc import NonparametricKernelMTC, SpectralKernelMTC
from .kmeans import BregmanKMeans, bregman_kmeans_plusplus
from .mbc import MultitaskBregmanClustering
from .metrics import clustering_scores
from .model_relation import ModelRelationClustering
from .shared_subspace import SharedSubspaceClustering

__all__ = ["DEMOS", "scores", "verdicts", "demo_ind", "demo_mbc", "demo_agglomerative",
           "demo_kernel_mtc", "demo_shared_subspace", "demo_model_relation"]


def scores(ys, labels):
    """NMI, ARI and clustering accuracy of every task.

    Parameters
    ----------
    ys : list of ndarray
        True labels per task.
    labels : list of ndarray
        Predicted labels per task.

    Returns
    -------
    per_task : list of (float, float, float)
        ``(nmi, ari, accuracy)`` for each task.
    """
    out = []
    for y, lab in zip(ys, labels):
        s = clustering_scores(y, lab)
        out.append((float(s["nmi"]), float(s["ari"]), float(s["accuracy"])))
    return out


def _n_classes(ys):
    return [int(np.unique(y).size) for y in ys]


def demo_ind(Xs, ys, random_state=0):
    """IND baseline: :class:`~bregclust.BregmanKMeans` per task, best of 5, sqeuclidean and kl.

    Parameters
    ----------
    Xs : list of {ndarray, sparse matrix}
        The tasks.
    ys : list of ndarray
        True labels per task; ``K_t`` is their number of classes.
    random_state : int, default=0

    Returns
    -------
    rows : list of (str, list of (nmi, ari, accuracy))
    """
    rows = []
    for div in ("sqeuclidean", "kl"):
        labels = [BregmanKMeans(k, divergence=div, n_init=5, random_state=random_state)
                  .fit(X).labels_ for X, k in zip(Xs, _n_classes(ys))]
        rows.append((f"IND k-means ({div}), best of 5", scores(ys, labels)))
    return rows


def _mbc_pair(Xs, ys, random_state, lam, divergence):
    div = get_divergence(divergence)
    Ks = _n_classes(ys)
    beta = 0.0 if div.domain == "real" else 1.0
    rng = check_random_state(random_state)
    init = [bregman_kmeans_plusplus(X, k, div, random_state=rng, smoothing=beta)[0]
            for X, k in zip(Xs, Ks)]
    rows = []
    for name, lam_ in ((f"IND ({div.name} k-means)", 0.0), (f"MBC ({div.name}, lam={lam})", lam)):
        est = MultitaskBregmanClustering(Ks, divergence=div, lam=lam_, init=init,
                                         random_state=random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(Xs)
        if lam_ == "auto":
            name = f"MBC ({div.name}, lam=auto: {est.lam_:g})"
        rows.append((name, scores(ys, est.labels_)))
    return rows


def demo_mbc(Xs, ys, random_state=0, *, lam="auto", divergences=("sqeuclidean", "kl")):
    """IND (``lam=0``) and MBC from the same k-means++ centres, for each divergence.

    Parameters
    ----------
    Xs : list of {ndarray, sparse matrix}
    ys : list of ndarray
    random_state : int, default=0
    lam : float or "auto", default="auto"
        MBC's task-coupling weight (``"auto"``: the estimator's label-free rule).
    divergences : tuple of str, default=("sqeuclidean", "kl")

    Returns
    -------
    rows : list of (str, list of (nmi, ari, accuracy))
        Two rows (IND then MBC) per divergence.
    """
    rows = []
    for divergence in divergences:
        rows += _mbc_pair(Xs, ys, random_state, lam, divergence)
    return rows


def demo_agglomerative(Xs, ys, random_state=0):
    """Agglomerative Bregman clustering per task (Ward and kl), cut at the number of classes.

    The trees are deterministic, so ``random_state`` is unused (kept for the common
    signature).

    Parameters
    ----------
    Xs : list of {ndarray, sparse matrix}
    ys : list of ndarray
    random_state : int, default=0

    Returns
    -------
    rows : list of (str, list of (nmi, ari, accuracy))
    """
    rows = []
    for name, model in (("AGG (Ward = sqeuclidean)", "sqeuclidean"), ("AGG (kl)", "kl")):
        labels = [AgglomerativeBregman(k, model=model).fit(X).labels_
                  for X, k in zip(Xs, _n_classes(ys))]
        rows.append((name, scores(ys, labels)))
    return rows


def demo_kernel_mtc(Xs, ys, random_state=0):
    """LNKMTC (b=30, ``C="auto"``) and LSKMTC (b=1, r=30, C=1000) in their documented best setting.

    The paper's graph (cosine, k=10) and the estimators' defaults for the kernel k-means start
    and the factor normalisation; ``joint`` when every task has the same number of classes,
    otherwise each task is clustered on its own rows of the factor. The ``C=0`` variants are
    not shown: with the spectral kernel ``C=0`` is degenerate by construction (the weights sit
    on the graph's null space).

    Parameters
    ----------
    Xs : list of {ndarray, sparse matrix}
    ys : list of ndarray
    random_state : int, default=0

    Returns
    -------
    rows : list of (str, list of (nmi, ari, accuracy))
        ``LNKMTC (C=auto: c)`` (``c`` the value ``C="auto"`` kept, chosen without labels)
        then ``LSKMTC (C=1000)``.
    """
    ks = _n_classes(ys)
    joint = len(set(ks)) == 1
    n_clusters = ks[0] if joint else ks
    n = sum(np.asarray(y).shape[0] for y in ys)
    b_ln = min(30, n - 2)
    r = min(30, n - 2)
    lnk = NonparametricKernelMTC(n_clusters, C="auto", b=b_ln, joint=joint,
                                 random_state=random_state).fit(Xs)
    lsk = SpectralKernelMTC(n_clusters, C=1000.0, b=1, n_eigenvectors=r, joint=joint,
                            random_state=random_state).fit(Xs)
    return [(f"LNKMTC (C=auto: {lnk.C_:g})", scores(ys, lnk.labels_)),
            ("LSKMTC (C=1000)", scores(ys, lsk.labels_))]


def demo_shared_subspace(Xs, ys, random_state=0):
    """LSSMTC from a random start (l=2, lambda=0.75), its lambda=1 control, its k-means start.

    The random start is LSSMTC's best setting on raw term counts. The control row drops the
    cross-task term (``lam=1``: relaxed k-means per task from the same random start), so the
    first two rows show how much of LSSMTC's score comes from the shared subspace; the third
    row starts from k-means (``init="k-means++"``), the better start on other data. One number
    of clusters for every task: the largest number of classes.

    Parameters
    ----------
    Xs : list of {ndarray, sparse matrix}
    ys : list of ndarray
    random_state : int, default=0

    Returns
    -------
    rows : list of (str, list of (nmi, ari, accuracy))
    """
    c = max(_n_classes(ys))
    l = int(min(2, Xs[0].shape[1]))
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, lam, init in (("LSSMTC (random start, lam=0.75)", 0.75, "random"),
                                ("LSSMTC lam=1 control (no task coupling)", 1.0, "random"),
                                ("LSSMTC (k-means start, lam=0.75)", 0.75, "k-means++")):
            est = SharedSubspaceClustering(c, n_components=l, lam=lam, init=init,
                                           random_state=random_state).fit(Xs)
            rows.append((name, scores(ys, est.labels_)))
    return rows


def demo_model_relation(Xs, ys, random_state=0, *, tol=1e-3):
    """MTCMRL with the estimator's defaults (cosine similarity, lam=alpha=4), ``tol=1e-3``.

    ``tol=1e-3`` (the default is ``1e-7``) lets the sweeps stop at convergence within the
    demo's time; the labels are read off the same way.

    Parameters
    ----------
    Xs : list of {ndarray, sparse matrix}
    ys : list of ndarray
    random_state : int, default=0
    tol : float, default=1e-3
        Relative decrease of the objective at which the sweeps stop.

    Returns
    -------
    rows : list of (str, list of (nmi, ari, accuracy))
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = ModelRelationClustering(_n_classes(ys), tol=tol, random_state=random_state).fit(Xs)
    return [("MTCMRL (lam=alpha=4)", scores(ys, est.labels_))]


#: A difference of mean NMI within this is reported as a tie by :func:`verdicts`.
TIE = 0.01


def verdicts(rows, tie=TIE):
    """One line per non-IND row: its NMI minus the best IND row's, per task, and a verdict.

    The reference of task ``t`` is the highest NMI on ``t`` among the rows whose name starts
    with ``"IND"``. The verdict says "gains on every task" when every difference exceeds
    ``tie``, "level with IND" when every difference is within ``tie``, "below IND on every
    task" when every difference is below ``-tie`` and "no clear gain on these tasks" otherwise.

    Parameters
    ----------
    rows : list of (str, list of (nmi, ari, accuracy))
        Rows as returned by the ``demo_*`` functions, including at least one IND row.
    tie : float, default=0.01
        Differences within ``tie`` count as ties.

    Returns
    -------
    lines : list of str
        ``"<name>: +0.020 / -0.010 NMI vs IND: <verdict>"``, in the order of ``rows``.

    Raises
    ------
    ValueError
        If no row name starts with ``"IND"``.
    """
    ind = [per for name, per in rows if name.startswith("IND")]
    if not ind:
        raise ValueError("rows: verdicts need at least one row whose name starts with 'IND'.")
    ref = np.max([[s[0] for s in per] for per in ind], axis=0)
    lines = []
    for name, per in rows:
        if name.startswith("IND"):
            continue
        d = np.array([s[0] for s in per]) - ref
        if np.all(d > tie):
            verdict = "gains on every task"
        elif np.all(np.abs(d) <= tie):
            verdict = "level with IND"
        elif np.all(d < -tie):
            verdict = "below IND on every task"
        else:
            verdict = "no clear gain on these tasks"
        diffs = " / ".join(f"{v:+.3f}" for v in d)
        lines.append(f"{name}: {diffs} NMI vs IND: {verdict}")
    return lines


#: ``(group name, function)`` in the order ``bregclust demo`` prints them.
DEMOS = [("IND", demo_ind), ("MBC", demo_mbc), ("Agglomerative", demo_agglomerative),
         ("KernelMTC", demo_kernel_mtc), ("LSSMTC", demo_shared_subspace),
         ("MTCMRL", demo_model_relation)]
