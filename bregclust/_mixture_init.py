"""Starts and smoothing of the multinomial mixture of documents (``BregmanMixture``, kl).

The mixture of multinomials has many local optima on text, and which one EM reaches is decided
by the start. Starting from a partition by spherical k-means on tf-idf rows (the usual recipe
for documents: idf damps the frequent words that dominate a multinomial likelihood, the L2
norm gives every document the same weight) reaches partitions close to the classes; a kl
k-means++ start on the term distributions lets a few long documents seed components, and EM
then keeps most documents in one or two of them. :func:`tfidf_partitions` gives the starts of
``init="auto"``; the mixture runs ``TEXT_SHORT_ITER`` EM iterations from each and continues
the one with the highest objective (measured in ``benchmarks/mixture_text.py``: the objective
after three EM iterations ranked 25 starts as their converged log-likelihoods did - Spearman
.99-1.0 on reviews and tr23 - so a short run is enough to choose among starts). From that start
the mixture runs deterministic-annealing EM (``TEXT_ANNEAL``, :func:`anneal_schedule`: the
responsibilities flattened to ``(pi_h p(x | h))^b``, ``b`` raised to 1), then plain EM to
convergence: annealing lets documents move between components while the components are still
forming, which reaches better optima than the start's own basin.

:func:`mixture_smoothing` sizes the pseudo-count of the multinomial mixture's means: one
tenth of a pseudo-word per vocabulary term, spread over the terms as the corpus uses them. It
keeps every probability positive (a new document with a word a component has never seen keeps
a finite likelihood) while a component of a few thousand words keeps its own distribution; the
k-means rule ``smoothing="auto"`` (three average cluster masses) is made for hard assignments
of L1-normalised rows and, applied to word counts, makes every component mostly the corpus
distribution.
"""


import numpy as np
import scipy.sparse as sp

from ._smoothing import resolve_smoothing

__all__ = ["TEXT_STARTS", "TEXT_SHORT_ITER", "TEXT_KEEP", "TEXT_MID_ITER", "TEXT_KMEANS_ITER",
           "MULTINOMIAL_PSEUDO_PER_TERM", "tfidf_rows", "spherical_kmeans", "tfidf_partitions",
           "best_runs", "one_hot", "mixture_smoothing", "TEXT_ANNEAL", "ANNEAL_NATS", "ANNEAL_RATE",
           "ANNEAL_ITER", "logit_gaps", "weighted_median", "anneal_schedule"]

#: ``init="auto"`` on counts draws at least this many tf-idf k-means partitions ...
TEXT_STARTS = 6
#: ... runs this many EM iterations from each, ...
TEXT_SHORT_ITER = 3
#: ... keeps this many of the best (by the EM objective) ...
TEXT_KEEP = 1
#: ... runs that many EM iterations more from each kept start when more than one, and
#: continues the best to convergence. Session 19 measured four schedules (``benchmarks/
#: mixture_text.py --part search``); ten starts of three passes, one EM iteration each, the best
#: three continued two more reached the plain-EM reference's likelihood on 14 of 18 CLUTO (set,
#: seed) pairs against 13 for these values, but lowered the NMI on five of the six sets (mean
#: -.03; the issue's likelihood-and-NMI count 9 against 10): these values stay the default.
TEXT_MID_ITER = 3
#: Lloyd iterations of each tf-idf k-means start (the start only needs the right basin).
TEXT_KMEANS_ITER = 10
#: Deterministic-annealing EM (Ueda & Nakano, 1998) after the start search: the chosen start's
#: parameters are refined by annealed EM (responsibilities proportional to
#: ``(pi_h p(x | h))^b``, ``b`` raised from ``b0`` to 1, :func:`anneal_schedule`) before plain EM
#: to convergence. Measured by ``benchmarks/mixture_text.py --part anneal`` (a rule fixed before
#: scoring): 15 nats, doubling, five iterations per temperature passed the issue's
#: likelihood-and-NMI target on 9 of 18 fresh CLUTO (set, seed) pairs against 7 without
#: annealing (10 and 10 on the seeds it was chosen on), no set's mean NMI more than .006 lower,
#: 20 Newsgroups NMI +.02, at most 1.52 times the CPU time. Stronger annealing (3 nats) reaches
#: a higher likelihood on every set but lowers the NMI on tr11 (-.08) and hitech (-.03).
TEXT_ANNEAL = True
#: ``b0 = ANNEAL_NATS / median gap``: at ``b0`` the median row's most probable component is
#: ``exp(ANNEAL_NATS)`` times as probable as its second (:func:`anneal_schedule`).
ANNEAL_NATS = 15.0
#: ``b`` is multiplied by this after each temperature ...
ANNEAL_RATE = 2.0
#: ... at which at most this many annealed EM iterations run.
ANNEAL_ITER = 5
#: The multinomial mixture's ``smoothing="auto"``: pseudo-words per vocabulary term.
MULTINOMIAL_PSEUDO_PER_TERM = 0.1


def tfidf_rows(X, sample_weight=None):
    """Rows of counts as L2-normalised tf-idf vectors (scikit-learn's smooth idf).

    ``idf_l = log((1 + n) / (1 + df_l)) + 1`` with ``n`` and the document frequencies
    ``df_l`` counted with the sample weights; rows of zeros stay zero.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative counts (validated).
    sample_weight : ndarray of shape (n_samples,), optional

    Returns
    -------
    ndarray or CSR matrix of shape (n_samples, n_features)
        Sparse when ``X`` is.

    Examples
    --------
    >>> import numpy as np
    >>> T = tfidf_rows(np.array([[1.0, 0.0], [1.0, 1.0]]))
    >>> np.round(T, 3).tolist()
    [[1.0, 0.0], [0.58, 0.815]]
    """
    n = X.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    present = (X > 0).astype(np.float64)
    df = np.asarray(present.T @ w).ravel()
    idf = np.log((1.0 + w.sum()) / (1.0 + df)) + 1.0
    if sp.issparse(X):
        T = sp.csr_matrix(X, dtype=np.float64, copy=True)
        T.data *= idf[T.indices]
        norms = np.sqrt(np.asarray(T.multiply(T).sum(axis=1)).ravel())
        inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        return sp.csr_matrix(sp.diags(inv) @ T)
    T = np.asarray(X, dtype=np.float64) * idf
    norms = np.linalg.norm(T, axis=1)
    inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return T * inv[:, None]


def spherical_kmeans(T, k, random_state, *, max_iter=TEXT_KMEANS_ITER, sample_weight=None,
                     transposed=None):
    """Labels of spherical k-means (Dhillon & Modha, 2001) on unit rows, k-means++ seeds.

    Maximises ``sum_i w_i <t_i, c_{l(i)}>`` over unit centres: seeds drawn with probability
    proportional to ``w_i (1 - max_c <t_i, c>)`` (k-means++ for the cosine distance), then at
    most ``max_iter`` passes of "most similar centre, then the normalised weighted sum"; a
    centre left empty keeps its direction. Hand-written rather than scikit-learn's ``KMeans``
    because a start needs only two sparse products per pass (``T @ C`` and ``T.T @ R``);
    scikit-learn's Euclidean k-means on the same rows took 1.7 s for six starts on tr11 with
    its OpenMP pool on the shared 2-core machine (0.2 s with one thread) against 0.2 s here.

    Parameters
    ----------
    T : ndarray or CSR matrix of shape (n_samples, n_features)
        Rows of unit L2 norm (or zero).
    k : int
    random_state : RandomState
    max_iter : int, default=TEXT_KMEANS_ITER
    sample_weight : ndarray of shape (n_samples,), optional
    transposed : CSR matrix of shape (n_features, n_samples), optional
        ``T.T`` in CSR form when ``T`` is sparse (computed when not given; pass it to share
        it between starts).

    Returns
    -------
    ndarray of int64 of shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> T = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> T /= np.linalg.norm(T, axis=1, keepdims=True)
    >>> lab = spherical_kmeans(T, 2, np.random.RandomState(0))
    >>> bool(lab[0] == lab[1] and lab[2] == lab[3] and lab[0] != lab[2])
    True
    """
    n = T.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    sparse = sp.issparse(T)
    if sparse and T.format != "csr":
        T = sp.csr_matrix(T)
    if transposed is not None:
        Tt = transposed
    else:
        Tt = T.T.tocsr() if sparse else np.ascontiguousarray(T.T)

    def row(i):
        if not sparse:
            return T[i]
        out = np.zeros(T.shape[1])
        a, b = T.indptr[i], T.indptr[i + 1]
        np.add.at(out, T.indices[a:b], T.data[a:b])  # duplicates add, as in T @ v
        return out

    idx = [int(random_state.choice(n, p=w / w.sum()))]
    best = np.asarray(T @ row(idx[0])).ravel()
    for _ in range(1, k):
        dist = np.maximum(1.0 - best, 0.0) * w
        tot = dist.sum()
        i = int(random_state.choice(n, p=dist / tot)) if tot > 0 else int(random_state.randint(n))
        idx.append(i)
        best = np.maximum(best, np.asarray(T @ row(i)).ravel())
    C = np.ascontiguousarray(np.column_stack([row(i) for i in idx]))  # (d, k)
    labels = None
    R = np.zeros((n, k))
    for _ in range(max_iter):
        new = np.asarray(T @ C).argmax(axis=1)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        R[:] = 0.0
        R[np.arange(n), labels] = w
        S = np.asarray(Tt @ R)
        norm = np.linalg.norm(S, axis=0)
        live = norm > 0
        C[:, live] = S[:, live] / norm[live]
    return labels.astype(np.int64)


def tfidf_partitions(X, k, n_starts, random_state, sample_weight=None,
                     max_iter=TEXT_KMEANS_ITER):
    """Partitions of the rows by spherical k-means on their tf-idf vectors, one per start.

    :func:`spherical_kmeans` on the unit tf-idf rows (:func:`tfidf_rows`), each from its own
    k-means++ seeds, at most ``max_iter`` passes.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative counts (validated).
    k : int
    n_starts : int
    random_state : RandomState
    sample_weight : ndarray of shape (n_samples,), optional
    max_iter : int, default=TEXT_KMEANS_ITER

    Returns
    -------
    list of ndarray of shape (n_samples,)
    """
    T = tfidf_rows(X, sample_weight)
    Tt = T.T.tocsr() if sp.issparse(T) else np.ascontiguousarray(T.T)  # shared by the starts
    return [spherical_kmeans(T, k, random_state, max_iter=max_iter, sample_weight=sample_weight,
                             transposed=Tt)
            for _ in range(n_starts)]


def best_runs(runs, keep):
    """The ``keep`` runs with the highest final objective (``lower_bound``), best first.

    Ties keep the order of the starts (a stable sort), so the choice is reproducible.

    Parameters
    ----------
    runs : list
        EM runs, each with a ``lower_bound``.
    keep : int

    Returns
    -------
    list

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> [r.lower_bound for r in best_runs([R(lower_bound=v) for v in (1, 3, 2, 3)], 2)]
    [3, 3]
    """
    order = sorted(range(len(runs)), key=lambda i: -runs[i].lower_bound)
    return [runs[i] for i in order[:max(int(keep), 1)]]


def logit_gaps(logits):
    """Per row, the largest logit minus the second largest (``inf`` when only one is finite or
    ``k = 1``, ``nan`` when none is).

    Parameters
    ----------
    logits : ndarray of shape (n_samples, k)
        ``log pi_h + log p(x_i | h)`` up to a per-row constant (``-inf`` allowed).

    Returns
    -------
    ndarray of shape (n_samples,)

    Examples
    --------
    >>> logit_gaps(np.array([[0.0, -3.0, -1.0], [-5.0, -np.inf, 2.0]])).tolist()
    [1.0, 7.0]
    """
    L = np.asarray(logits, dtype=np.float64)
    if L.shape[1] < 2:
        return np.full(L.shape[0], np.inf)
    top2 = -np.sort(-L, axis=1)[:, :2]
    with np.errstate(invalid="ignore"):
        return np.where(top2[:, 0] > -np.inf, top2[:, 0] - top2[:, 1], np.nan)


def weighted_median(values, weights=None):
    """The median of ``values`` with each counted ``weights`` times (``numpy.median`` of the
    values repeated when the weights are integers: the mean of the two middle values when the
    cumulative weight reaches exactly half).

    Parameters
    ----------
    values : ndarray of shape (n,)
        Not empty.
    weights : ndarray of shape (n,), optional
        Non-negative, with a positive sum; ones when not given.

    Returns
    -------
    float

    Examples
    --------
    >>> weighted_median(np.array([1.0, 2.0, 10.0]), np.array([1.0, 2.0, 1.0]))
    2.0
    >>> weighted_median(np.array([1.0, 2.0, 10.0, 20.0]))
    6.0
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.ones(v.size) if weights is None else np.asarray(weights, dtype=np.float64)
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    keep = w > 0
    v, w = v[keep], w[keep]
    c = np.cumsum(w)
    half = 0.5 * c[-1]
    j = int(np.searchsorted(c, half))  # first cumulative weight >= half
    if c[j] == half and j + 1 < v.size:
        return 0.5 * float(v[j] + v[j + 1])
    return float(v[j])


def anneal_schedule(gaps, nats=None, rate=None, weights=None):
    """The inverse temperatures of annealed EM below 1: ``b0, b0 r, b0 r^2, ...`` (< 1).

    ``b0 = nats / median(gaps)`` over the rows with a finite positive gap (weighted by
    ``weights``, :func:`weighted_median`): at ``b0`` the median row's most probable component
    is ``exp(nats)`` times as probable as its second under the start's parameters (multinomial
    documents have gaps of hundreds of nats, so ``b0`` is small); empty when ``b0 >= 1`` (the
    rows are already that uncertain).

    Parameters
    ----------
    gaps : ndarray
        :func:`logit_gaps` of the start.
    nats : float, default=ANNEAL_NATS
    rate : float, default=ANNEAL_RATE
        Greater than 1.
    weights : ndarray, optional
        The rows' sample weights.

    Returns
    -------
    list of float

    Examples
    --------
    >>> anneal_schedule(np.array([40.0, 10.0, np.inf, 20.0]), nats=2.0, rate=2.0)
    [0.1, 0.2, 0.4, 0.8]
    """
    nats = ANNEAL_NATS if nats is None else float(nats)
    rate = ANNEAL_RATE if rate is None else float(rate)
    if not 0.0 < nats < np.inf:
        raise ValueError(f"nats must be a positive finite number (the starting contrast), got {nats!r}.")
    if not 1.0 < rate < np.inf:
        raise ValueError(f"rate must be a finite number above 1 (the factor between temperatures), got {rate!r}.")
    g = np.asarray(gaps, dtype=np.float64)
    w = np.ones(g.size) if weights is None else np.asarray(weights, dtype=np.float64)
    ok = np.isfinite(g) & (g > 0) & (w > 0)
    if not ok.any():
        return []
    b = nats / weighted_median(g[ok], w[ok])
    out = []
    while b < 1.0:
        out.append(b)
        b *= rate
    return out


def one_hot(labels, k, eps=1e-6):
    """Responsibilities of a hard partition, every component given ``eps`` of every row.

    The floor keeps a component that k-means left empty alive for the first M-step (it then
    holds ``eps`` of every row, the corpus mean, and EM decides what it becomes).

    Parameters
    ----------
    labels : ndarray of int of shape (n_samples,)
    k : int
    eps : float, default=1e-6

    Returns
    -------
    ndarray of shape (n_samples, k)
        Rows sum to 1.
    """
    n = labels.shape[0]
    R = np.full((n, k), eps / k)
    R[np.arange(n), labels] += 1.0 - eps
    return R


def mixture_smoothing(smoothing, div, fam, counts, k):
    """``smoothing_`` of a mixture: the parameter checked, ``"auto"`` resolved per family.

    For the multinomial family ``"auto"`` is ``MULTINOMIAL_PSEUDO_PER_TERM * d`` pseudo-words
    per component (``d`` the vocabulary size), spread as the corpus' term distribution; the
    other families use the centroid estimators' rule
    (:func:`bregclust._smoothing.resolve_smoothing`).

    Parameters
    ----------
    smoothing : float or "auto"
    div : Divergence
    fam : object
        The mixture's family (its ``name``).
    counts : tuple
        ``(n, d, nnz, total weight)`` of the data.
    k : int

    Returns
    -------
    float
    """
    if isinstance(smoothing, str) and smoothing == "auto" and fam.name == "multinomial":
        resolve_smoothing(smoothing, div, counts, k)  # the same parameter check
        return MULTINOMIAL_PSEUDO_PER_TERM * float(counts[1])
    return resolve_smoothing(smoothing, div, counts, k)
