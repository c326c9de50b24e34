"""Figures for fitted bregclust models (matplotlib is an optional dependency).

Install it with ``pip install bregclust[plot]``. matplotlib is imported when a function of this
module is called, never at ``import bregclust``. Every function draws into the axes it is given
(or a new figure when ``ax=None``), returns the axes or figure it drew on, and never calls
``show()``: saving or showing the figure is left to the caller.

See :doc:`/auto_examples/index` for every function in use.
"""

import numbers

import numpy as np

__all__ = [
    "plot_relations",
    "plot_dendrogram",
    "plot_task_pairs",
    "plot_divergence_balls",
    "plot_objective",
    "plot_demo",
    "check_figure_path",
]

_INSTALL_HINT = "pip install bregclust[plot]"


def _pyplot():
    """Import and return ``matplotlib.pyplot``, or raise an ImportError naming the extra."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised by monkeypatching sys.modules
        raise ImportError(
            f"bregclust.plotting needs matplotlib, which is not installed; install it with "
            f"`{_INSTALL_HINT}` (or `pip install matplotlib`)."
        ) from exc
    return plt


def _axes(ax, figsize=None):
    """``ax``, or the axes of a new figure whose constrained layout clips no label."""
    if ax is None:
        ax = _new_figure(figsize).add_subplot()
    return _check_ax(ax)


def _check_ax(ax, name="ax"):
    """``ax`` when it is None or a matplotlib Axes; a TypeError naming ``name`` otherwise
    (every plotting function takes its axes through here)."""
    if ax is None:
        return ax
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(f"{name} must be a matplotlib Axes (e.g. from plt.subplots()) or None, "
                        f"got {type(ax).__name__} {ax!r:.60}.")
    return ax


def _check_fitted(est, attr, what):
    from sklearn.exceptions import NotFittedError

    if not hasattr(est, attr):
        raise NotFittedError(
            f"{type(est).__name__} has no attribute {attr!r}: {what} needs a fitted estimator; "
            "call fit first."
        )
    return getattr(est, attr)


def _cluster_names(labels, y, k, names):
    """Tick labels of ``k`` clusters: the index, plus the majority class when ``y`` is given."""
    if y is None:
        return [str(z) for z in range(k)]
    y = np.asarray(y)
    if y.shape != labels.shape:
        raise ValueError(
            f"ys entries must have one label per point of their task: expected shape "
            f"{labels.shape}, got {y.shape}."
        )
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError("ys contains NaN or infinity; give a class label to every point (drop "
                         "the unlabelled points' tasks from ys, or label them).")
    out = []
    for z in range(k):
        members = y[labels == z]
        if members.size == 0:
            out.append(f"{z}: empty")
            continue
        vals, counts = np.unique(members, return_counts=True)
        top = vals[np.argmax(counts)]
        name = str(top)
        if names is not None:
            try:
                name = str(names[int(top)])
            except (IndexError, TypeError, ValueError):
                raise ValueError(
                    f"class_names has no entry for class {top!r}; give one name per class label "
                    "(labels index into class_names)."
                ) from None
        out.append(f"{z}: {name} ({counts.max() / members.size:.0%})")
    return out


def _per_task(value, n_tasks, name):
    """``None``, or a list with one entry per task (``class_names`` may also be shared)."""
    if value is None:
        return [None] * n_tasks
    if name == "class_names" and len(value) and all(isinstance(v, str) for v in value):
        return [value] * n_tasks
    value = list(value)
    if len(value) != n_tasks:
        raise ValueError(f"{name} must have one entry per task ({n_tasks}), got {len(value)}.")
    return value


def _relation_estimators():
    """The exported estimator classes that document a ``relations_`` attribute."""
    import inspect

    import bregclust

    found = {getattr(bregclust, n) for n in bregclust.__all__}
    return sorted((c for c in found if inspect.isclass(c)
                   and "\n    relations_ :" in (c.__doc__ or "")), key=lambda c: c.__name__)


def _new_figure(figsize):
    plt = _pyplot()
    fig = plt.figure(figsize=figsize, layout="constrained")
    fig.get_layout_engine().set(w_pad=0.08, h_pad=0.08)  # inches around the outermost labels
    return fig


def plot_relations(est, pair=(0, 1), *, ys=None, class_names=None, ax=None, cmap=None,
                   margins=True, scale="uniform", annotate="auto"):
    """Heat map of the relation between the clusters of two tasks of a fitted estimator.

    Draws ``est.relations_[pair]``: the transport plan ``W^ts`` of
    :class:`~bregclust.MultitaskBregmanClustering` or the learned ``G^(t,s)`` of
    :class:`~bregclust.ModelRelationClustering`. Rows are the clusters of task ``t``, columns
    those of task ``s``; bar charts on the margins show the tasks' cluster sizes.

    By default every cell shows its mass relative to a uniform relation,
    ``K_t K_s W_ij / sum(W)``, on a fixed diverging scale centred at 1: a relation with no
    preference between clusters is uniformly white, a one-to-one matching of the clusters
    shows red cells (up to ``min(K_t, K_s)``, the most a cell can hold under uniform
    marginals) on blue zeros. The values are written in the cells when there are at most 12
    clusters per task.

    Parameters
    ----------
    est : fitted multi-task estimator
        Any estimator with ``relations_`` (a dict ``{(t, s): ndarray of shape (K_t, K_s)}``)
        and ``labels_`` (one label array per task).
    pair : tuple of int, default=(0, 1)
        The ordered pair of tasks ``(t, s)`` to draw.
    ys : list of array-like, optional
        True class labels of every task. When given, each cluster is named by its majority
        class and that class's share of the cluster.
    class_names : sequence of str, or list of such sequences (one per task), optional
        Names of the class labels (labels index into it); used only with ``ys``.
    ax : matplotlib Axes, optional
        Axes to draw the heat map in; a new figure (constrained layout, so no label is
        clipped) is created when None.
    cmap : str, optional
        Colour map; default ``"RdBu_r"`` (diverging) for ``scale="uniform"``, ``"viridis"``
        for ``scale="raw"``.
    margins : bool, default=True
        Draw the cluster sizes of task ``t`` (right) and task ``s`` (top) as bar charts.
    scale : {"uniform", "raw"}, default="uniform"
        ``"uniform"``: mass relative to a uniform relation (1 = no preference), colours from 0
        to ``max(min(K_t, K_s), largest value)`` with white at 1. ``"raw"``: the matrix as
        stored, colours from 0 to its largest value.
    annotate : bool or "auto", default="auto"
        Write each cell's value in it; ``"auto"``: when both tasks have at most 12 clusters.

    Returns
    -------
    ax : matplotlib Axes
        The heat map axes; its first image holds the drawn matrix (relative to uniform, or
        raw) and the colour bar is labelled with its meaning.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        ``est`` is an estimator with relations that has not been fitted.
    TypeError
        ``est`` is an estimator that learns no relations (e.g. LNKMTC); the message names
        the estimators that do.
    ValueError
        ``pair`` names no stored relation, ``scale`` is unknown, or ``ys`` / ``class_names``
        do not fit the tasks.
    """
    have = _relation_estimators()
    if not hasattr(est, "relations_") and not isinstance(est, tuple(have)):
        raise TypeError(
            f"{type(est).__name__} learns no relations between the clusters of its tasks; "
            f"plot_relations draws those of {' and '.join(c.__name__ for c in have)}."
        )
    relations = _check_fitted(est, "relations_", "plot_relations")
    labels = _check_fitted(est, "labels_", "plot_relations")
    if scale not in ("uniform", "raw"):
        raise ValueError(f"scale must be 'uniform' or 'raw', got {scale!r}.")
    if not isinstance(relations, dict) or not relations:
        raise ValueError(
            f"{type(est).__name__}.relations_ is empty: the model learned no cross-task "
            "relation (a single task, or the relation term switched off); fit at least two "
            "tasks with a positive relation weight."
        )
    if (isinstance(pair, str) or len(np.shape(pair)) != 1 or len(pair) != 2
            or not all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
                       for v in pair)):
        raise TypeError(f"pair must be two task indices (t, s), e.g. (0, 1), got {pair!r}.")
    t, s = (int(v) for v in pair)
    if (t, s) not in relations:
        raise ValueError(
            f"pair={pair!r} is not a stored relation; available pairs are "
            f"{sorted(relations)}."
        )
    W = np.asarray(relations[(t, s)], dtype=np.float64)
    ys = _per_task(ys, len(labels), "ys")
    names = _per_task(class_names, len(labels), "class_names")
    lt, ls = np.asarray(labels[t]), np.asarray(labels[s])
    sizes_t = np.bincount(lt, minlength=W.shape[0])
    sizes_s = np.bincount(ls, minlength=W.shape[1])
    rows = _cluster_names(lt, ys[t], W.shape[0], names[t])
    cols = _cluster_names(ls, ys[s], W.shape[1], names[s])

    from matplotlib.colors import Normalize

    Kt, Ks = W.shape
    total = W.sum()
    if scale == "uniform":
        M = W * (Kt * Ks / total) if total > 0 else np.zeros_like(W)
        vmax = max(float(M.max()), float(min(Kt, Ks)), 2.0)
        # Linear and symmetric about 1 (white): 0 is a light blue, a full match deep red.
        norm = Normalize(vmin=2.0 - vmax, vmax=vmax)
        cmap = cmap or "RdBu_r"
        label = "mass relative to uniform (1 = no preference)"
    else:
        M = W
        norm = Normalize(vmin=0.0, vmax=max(float(M.max()), np.finfo(float).tiny))
        cmap = cmap or "viridis"
        label = "relation value (as stored)"
    if annotate == "auto":
        annotate = max(Kt, Ks) <= 12

    top = right = cax = None
    _check_ax(ax)
    if ax is None:
        fig = _new_figure((7.6, 6.4) if margins else (6.6, 5.6))
        spec = fig.add_gridspec(1, 1)[0]
    else:
        fig = ax.figure
        spec = ax.get_subplotspec() if margins else None
    if margins and spec is not None:
        # The heat map, its margins and the colour bar share one grid cell as ordinary
        # subplots, so a constrained layout makes room for all their labels.
        if ax is not None:
            ax.remove()
        gs = spec.subgridspec(2, 3, width_ratios=[1.0, 0.22, 0.05], height_ratios=[0.22, 1.0],
                              wspace=0.04, hspace=0.04)
        ax = fig.add_subplot(gs[1, 0])
        top = fig.add_subplot(gs[0, 0], sharex=ax)
        right = fig.add_subplot(gs[1, 1], sharey=ax)
        cax = fig.add_subplot(gs[1, 2])
    elif margins:  # axes placed by hand: margins as insets
        top = ax.inset_axes([0.0, 1.03, 1.0, 0.22], sharex=ax)
        right = ax.inset_axes([1.03, 0.0, 0.22, 1.0], sharey=ax)
        cax = ax.inset_axes([1.30, 0.0, 0.05, 1.0])
    elif ax is None:
        ax = fig.add_subplot(spec)
    im = ax.imshow(M, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    if annotate:
        colours = im.cmap(norm(M))
        for (i, j), v in np.ndenumerate(M):
            light = colours[i, j, :3] @ [0.299, 0.587, 0.114] > 0.5
            text = "0" if v < 5e-3 else f"{v:.2f}" if v < 10 else f"{v:.1f}"
            ax.text(j, i, text, ha="center", va="center",
                    fontsize="small", color="black" if light else "white")
    ax.set_yticks(np.arange(Kt), rows)
    ax.set_xticks(np.arange(Ks), cols, rotation=45 if ys[s] is not None else 0,
                  ha="right" if ys[s] is not None else "center",
                  rotation_mode="anchor" if ys[s] is not None else "default")
    ax.set_ylabel(f"clusters of task {t}")
    ax.set_xlabel(f"clusters of task {s}")
    title = f"relation of task {t} to task {s} ({type(est).__name__})"
    if margins:
        top.bar(np.arange(Ks), sizes_s, color="0.55")
        top.tick_params(labelbottom=False)
        top.set_ylabel("size")
        top.set_title(title)
        right.barh(np.arange(Kt), sizes_t, color="0.55")
        right.tick_params(labelleft=False)
        right.set_xlabel("size")
        cbar = fig.colorbar(im, cax=cax, label=label)
    else:
        ax.set_title(title)
        cbar = fig.colorbar(im, ax=ax, label=label)
    if scale == "uniform":
        cbar.ax.set_ylim(0.0, vmax)  # the norm extends below 0 only to centre white at 1
    return ax


def plot_dendrogram(Z, y=None, *, class_names=None, ax=None, cmap="tab10", labels=False):
    """scipy dendrogram of a linkage matrix, leaves coloured by class, purity in the title.

    Parameters
    ----------
    Z : ndarray of shape (n_samples - 1, 4), or fitted AgglomerativeBregman
        A scipy linkage matrix, e.g. from :func:`~bregclust.bregman_linkage`, or a fitted
        :class:`~bregclust.AgglomerativeBregman` (its ``linkage_matrix_`` is drawn).
    y : array-like of shape (n_samples,), optional
        Class of every point. Leaves are then marked with one colour per class and the title
        gives the dendrogram purity (:func:`~bregclust.dendrogram_purity`).
    class_names : sequence of str, optional
        Legend names of the classes (sorted class labels index into it).
    ax : matplotlib Axes, optional
        Axes to draw in; a new figure is created when None.
    cmap : str, default="tab10"
        Qualitative colour map of the classes.
    labels : bool, default=False
        Write the leaf indices under the leaves (readable only for small trees).

    Returns
    -------
    ax : matplotlib Axes
        With one line collection for the tree and, when ``y`` is given, one marker collection
        per class at the leaves.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        ``Z`` is an AgglomerativeBregman that has not been fitted.
    TypeError
        ``Z`` is another estimator or object that is not a matrix of numbers.
    ValueError
        ``Z`` is not a valid linkage matrix, or ``y`` has the wrong length.
    """
    from scipy.cluster.hierarchy import dendrogram, is_valid_linkage

    if hasattr(Z, "get_params"):  # an estimator
        if "linkage_matrix_" not in (type(Z).__doc__ or ""):
            raise TypeError(
                f"plot_dendrogram draws a linkage matrix or a fitted AgglomerativeBregman; "
                f"{type(Z).__name__} builds no tree."
            )
        Z = _check_fitted(Z, "linkage_matrix_", "plot_dendrogram")
    try:
        Z = np.asarray(Z, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"Z must be a linkage matrix (from bregman_linkage or scipy's linkage) or a fitted "
            f"AgglomerativeBregman, got {type(Z).__name__}."
        ) from None
    if Z.ndim == 2 and Z.shape[1] == 4 and not np.isfinite(Z).all():
        raise ValueError("Z contains NaN or infinity (merge heights must be finite numbers); "
                         "build it with bregman_linkage or scipy.cluster.hierarchy.linkage.")
    if Z.ndim != 2 or Z.shape[1] != 4 or Z.shape[0] < 1 or not is_valid_linkage(Z):
        raise ValueError(
            f"Z must be a valid scipy linkage matrix of shape (n_samples - 1, 4), got shape "
            f"{Z.shape}; build it with bregman_linkage or scipy.cluster.hierarchy.linkage."
        )
    n = Z.shape[0] + 1
    if y is not None:
        y = np.asarray(y)
        if y.shape != (n,):
            raise ValueError(
                f"y must have one class per leaf: expected shape ({n},), got {y.shape}."
            )
    ax = _axes(ax, figsize=(8.0, 4.0))
    R = dendrogram(Z, ax=ax, no_labels=not labels, link_color_func=lambda k: "0.35")
    ax.set_ylabel("merge height")
    if y is None:
        ax.set_title(f"dendrogram of {n} points")
        return ax
    from .metrics import dendrogram_purity

    plt = _pyplot()
    classes, yi = np.unique(y, return_inverse=True)
    if class_names is not None and len(class_names) < classes.size:
        raise ValueError(
            f"class_names must name all {classes.size} classes, got {len(class_names)} names."
        )
    colours = plt.get_cmap(cmap)
    order = np.asarray(R["leaves"])
    xs = 5.0 + 10.0 * np.arange(n)  # scipy puts leaf i of the plotted order at 10 i + 5
    leaf_cls = yi[order]
    for c in range(classes.size):
        sel = leaf_cls == c
        name = class_names[c] if class_names is not None else str(classes[c])
        ax.scatter(xs[sel], np.zeros(sel.sum()), marker="s", s=18, color=colours(c % colours.N),
                   label=name, zorder=3, clip_on=False)
    if classes.size <= 12:
        ax.legend(title="class", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    purity = dendrogram_purity(Z, y)
    ax.set_title(f"dendrogram purity {purity:.3f} ({n} points, {classes.size} classes)")
    return ax


def plot_task_pairs(scores_ind, scores_mtc, *, task_names=None, ax=None, metric="NMI",
                    baseline="IND"):
    """Per-task scores of independent clustering against multi-task methods (MBC Fig. 1).

    Each task is a point at (score of the independent baseline, score of the multi-task
    method); points above the diagonal are tasks the multi-task method improved.

    Parameters
    ----------
    scores_ind : array-like of shape (n_tasks,)
        Per-task score of the independent baseline (e.g. NMI of k-means per task).
    scores_mtc : array-like of shape (n_tasks,) or dict {name: array-like}
        Per-task score of one multi-task method, or of several methods keyed by name.
    task_names : sequence of str, optional
        Written next to the points.
    ax : matplotlib Axes, optional
        Axes to draw in; a new figure is created when None.
    metric : str, default="NMI"
        Name of the score, used in the axis labels.
    baseline : str, default="IND"
        Name of the baseline, used in the axis label.

    Returns
    -------
    ax : matplotlib Axes
        One scatter collection per method and the diagonal as the first line.

    Raises
    ------
    ValueError
        The score arrays are not 1-D, differ in length or contain NaN / infinity.
    """
    ind = _scores(scores_ind, "scores_ind")
    methods = dict(scores_mtc) if isinstance(scores_mtc, dict) else {"MTC": scores_mtc}
    if not methods:
        raise ValueError("scores_mtc must hold at least one method's scores.")
    methods = {k: _scores(v, f"scores_mtc[{k!r}]") for k, v in methods.items()}
    for k, v in methods.items():
        if v.shape != ind.shape:
            raise ValueError(
                f"scores_mtc[{k!r}] has {v.size} tasks but scores_ind has {ind.size}; give one "
                "score per task in the same order."
            )
    if task_names is not None and len(task_names) != ind.size:
        raise ValueError(f"task_names must have {ind.size} entries, got {len(task_names)}.")
    ax = _axes(ax, figsize=(4.8, 4.8))
    allv = np.concatenate([ind] + list(methods.values()))
    lo, hi = float(allv.min()), float(allv.max())
    pad = 0.05 * max(hi - lo, 1e-3)
    lo, hi = lo - pad, hi + pad
    ax.plot([lo, hi], [lo, hi], color="0.5", linestyle="--", linewidth=1, label="_diagonal")
    markers = "os^Dv<>p*h"
    for i, (name, v) in enumerate(methods.items()):
        ax.scatter(ind, v, marker=markers[i % len(markers)], label=name, zorder=3)
    if task_names is not None:
        first = next(iter(methods.values()))
        for x, yv, name in zip(ind, first, task_names):
            ax.annotate(str(name), (x, yv), textcoords="offset points", xytext=(4, 4),
                        fontsize="x-small")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_box_aspect(1)  # square; both axes share the limits
    ax.set_xlabel(f"{metric} of {baseline}")
    ax.set_ylabel(f"{metric} of the multi-task method")
    ax.set_title(f"per-task {metric}: above the diagonal = better than {baseline}")
    ax.legend(loc="best", fontsize="small")
    return ax


def _scores(v, name):
    a = np.asarray(v)
    if isinstance(v, str) or a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a sequence of per-task scores (numbers), got {v!r:.60}.")
    a = a.astype(np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of per-task scores, got "
                         f"shape {a.shape}.")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinity; give finite per-task scores.")
    return a


def _default_ball_divergences():
    from .divergences import get_divergence, list_divergences

    out = []
    for name in list_divergences():
        try:
            out.append(get_divergence(name))
        except (TypeError, ValueError):  # needs parameters (e.g. mahalanobis' A)
            continue
    return out


#: Largest ``resolution`` of :func:`plot_divergence_balls`: a 2,000 x 2,000 grid (4 million
#: divergence evaluations, about 100 MB of work arrays) is far finer than any figure shows.
MAX_RESOLUTION = 2000


def plot_divergence_balls(names=None, *, center=(1.0, 1.0), levels=(0.05, 0.2, 0.5, 1.0),
                          extent=2.0, resolution=201, axes=None):
    """Level sets ``{x : d(x, c) = r}`` in 2-D around one centre, one panel per divergence.

    The grid covers the divergence's domain only: ``R^2`` for ``sqeuclidean``, ``x >= 0``
    for ``kl``, ``x > 0`` for ``itakura_saito``; points outside it are never evaluated.

    Parameters
    ----------
    names : str, Divergence, or sequence of them, optional
        The divergence(s) to draw, one panel each. A parametrised divergence is passed as a
        built record, e.g. ``get_divergence("mahalanobis", A=A)``. Default: every registered
        divergence that needs no parameter.
    center : array-like of shape (2,), default=(1.0, 1.0)
        The centre ``c`` (second argument of ``d``); must lie in every divergence's domain of
        centres.
    levels : sequence of float, default=(0.05, 0.2, 0.5, 1.0)
        Increasing positive radii ``r``.
    extent : float, default=2.0
        Half-width of the window around ``center`` (clipped to the domain).
    resolution : int, default=201
        Grid points per axis, from 10 to :data:`MAX_RESOLUTION`.
    axes : sequence of matplotlib Axes, optional
        One axes per divergence; a new figure with one row of panels is created when None.

    Returns
    -------
    axes : list of matplotlib Axes
        Each with one contour set whose levels are ``levels``.

    Raises
    ------
    ValueError
        Bad ``levels`` / ``center`` / ``extent`` / ``resolution``, a centre outside a domain, or
        a wrong number of axes.
    """
    from .divergences import Divergence, get_divergence

    if isinstance(names, (str, Divergence)):
        names = [names]
    divs = _default_ball_divergences() if names is None else [
        n if isinstance(n, Divergence) else get_divergence(n) for n in names]
    if not divs:
        raise ValueError("names must name at least one divergence.")
    c = np.asarray(center, dtype=np.float64)
    if c.shape != (2,) or not np.isfinite(c).all():
        raise ValueError(f"center must be two finite numbers, got {center!r}.")
    lv = np.asarray(levels, dtype=np.float64)
    if lv.ndim != 1 or lv.size == 0 or not (lv > 0).all() or not (np.diff(lv) > 0).all():
        raise ValueError(f"levels must be increasing positive radii, got {levels!r}.")
    if not isinstance(extent, numbers.Real) or not extent > 0:
        raise ValueError(f"extent must be a positive number, got {extent!r}.")
    if not isinstance(resolution, numbers.Integral) or not 10 <= resolution <= MAX_RESOLUTION:
        raise ValueError(
            f"resolution must be an integer from 10 to {MAX_RESOLUTION} (grid points per axis; "
            f"the default 201 draws smooth contours), got {resolution!r}."
        )
    _pyplot()
    if axes is None:
        fig = _new_figure((3.4 * len(divs), 3.8))
        axes = list(fig.subplots(1, len(divs), squeeze=False)[0])
    else:
        axes = [_check_ax(a, "axes") for a in np.ravel(np.asarray(axes, dtype=object))]
        if len(axes) != len(divs):
            raise ValueError(f"axes must hold one Axes per divergence ({len(divs)}), got "
                             f"{len(axes)}.")
    for ax, div in zip(axes, divs):
        div.check_domain(c[None, :], name="center", side="right")
        lo = c - extent
        if div.domain == "nonnegative":
            lo = np.maximum(lo, 0.0)
        elif div.domain == "positive":
            lo = np.maximum(lo, 1e-3 * np.minimum(c, 1.0))
        g0 = np.linspace(lo[0], c[0] + extent, int(resolution))
        g1 = np.linspace(lo[1], c[1] + extent, int(resolution))
        G0, G1 = np.meshgrid(g0, g1)
        P = np.column_stack([G0.ravel(), G1.ravel()])
        if div.spherical:
            # cosine has no value at the origin (a zero row has no direction): leave it blank
            live = np.any(P != 0.0, axis=1)
            D = np.full(P.shape[0], np.nan)
            D[live] = np.asarray(div.pairwise(P[live], c[None, :]), dtype=np.float64)[:, 0]
            D = D.reshape(G0.shape)
        else:
            D = np.asarray(div.pairwise(P, c[None, :]), dtype=np.float64).reshape(G0.shape)
        cs = ax.contour(G0, G1, D, levels=lv, cmap="viridis")
        ax.clabel(cs, fontsize="x-small")
        ax.plot([c[0]], [c[1]], "k+", markersize=8)
        ax.set_aspect("equal")
        ax.set_title(div.name)
        ax.set_xlabel("$x_1$")
    axes[0].set_ylabel("$x_2$")
    return axes


#: ``plot_objective(log="auto")`` uses a logarithmic axis when the largest value of a positive
#: history is at least this many times its smallest (two decades).
LOG_RANGE = 100.0


def plot_objective(est, *, ax=None, log="auto"):
    """The objective after every iteration of a fitted estimator (``objective_history_``).

    Parameters
    ----------
    est : fitted estimator
        Any bregclust estimator with ``objective_history_`` (k-means, MBC, LSSMTC / LSSTTC,
        MTCMRL, SymmetricNMF).
    ax : matplotlib Axes, optional
        Axes to draw in; a new figure is created when None.
    log : bool or "auto", default="auto"
        Logarithmic y axis. ``"auto"``: when the history is positive and spans at least
        :data:`LOG_RANGE` (two decades), e.g. an NMF objective falling from 3e8 to 317, which
        a linear axis draws as one drop and a flat line.

    Returns
    -------
    ax : matplotlib Axes
        Its first line holds ``(range(len(h)), h)`` with ``h = est.objective_history_``.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        ``est`` has no ``objective_history_``.
    ValueError
        The history is empty, or ``log=True`` with a non-positive value.
    """
    h = np.asarray(_check_fitted(est, "objective_history_", "plot_objective"), dtype=np.float64)
    if h.ndim != 1 or h.size == 0:
        raise ValueError(f"{type(est).__name__}.objective_history_ is empty; nothing to plot.")
    if log not in (True, False, "auto"):
        raise ValueError(f"log must be True, False or 'auto', got {log!r}.")
    positive = bool((h > 0).all())
    if log is True and not positive:
        raise ValueError("log=True needs a positive objective; use log=False.")
    if log == "auto":
        log = positive and h.max() >= LOG_RANGE * h.min()
    ax = _axes(ax, figsize=(5.6, 4.0))
    ax.plot(np.arange(h.size), h, marker="o" if h.size <= 60 else None, markersize=3)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("iteration (0 = after initialisation)")
    ax.set_ylabel("objective (log scale)" if log else "objective")
    ax.set_title(f"{type(est).__name__}\nobjective {h[0]:.4g} -> {h[-1]:.4g}")
    return ax


def check_figure_path(path):
    """Refuse, before anything is drawn, a ``path`` that ``savefig`` cannot write a figure to.

    Parameters
    ----------
    path : str or path-like
        The file to write; its suffix gives the format.

    Returns
    -------
    path : pathlib.Path

    Raises
    ------
    ValueError
        ``path`` is a directory, its folder does not exist, or its suffix is not a figure
        format matplotlib writes.

    Examples
    --------
    >>> from bregclust.plotting import check_figure_path
    >>> check_figure_path("relations.png").name
    'relations.png'
    """
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        raise ValueError(f"path {p} is a directory; give a file name such as {p / 'demo.png'}.")
    if not p.parent.is_dir():
        raise ValueError(f"path {p}: the folder {p.parent} does not exist.")
    _pyplot()
    from matplotlib.backend_bases import FigureCanvasBase

    supported = FigureCanvasBase.get_supported_filetypes()
    if p.suffix.lower().lstrip(".") not in supported:
        raise ValueError(
            f"path {p}: {p.suffix or 'no suffix'} is not a figure format; use one of "
            f"{', '.join('.' + f for f in sorted(supported))}."
        )
    return p


def plot_demo(scores, mbc, *, baseline="IND", ys=None, class_names=None, path=None):
    """The two panels of ``bregclust demo --plot``: an MBC relation and the per-task NMI pairs.

    Parameters
    ----------
    scores : dict {method name: array-like of shape (n_tasks,)}
        Per-task NMI of every method, the independent baseline included under ``baseline``.
    mbc : fitted MultitaskBregmanClustering (or any estimator with ``relations_``)
        Its relation between tasks 0 and 1 is drawn on the left.
    baseline : str, default="IND"
        Key of ``scores`` holding the independent baseline.
    ys : list of array-like, optional
        True labels per task, to name the clusters (see :func:`plot_relations`).
    class_names : sequence of str or list of them, optional
        Class names for ``ys``.
    path : str or path-like, optional
        When given, the figure is saved there (format from the suffix).

    Returns
    -------
    fig : matplotlib Figure
        With the relation heat map (and its margins) and the task-pairs panel.

    Raises
    ------
    ValueError
        ``baseline`` is not a key of ``scores`` or no other method is given.
    """
    if not isinstance(scores, dict) or baseline not in scores:
        raise ValueError(f"scores must be a dict holding the baseline {baseline!r} and at least "
                         "one multi-task method.")
    others = {k: v for k, v in scores.items() if k != baseline}
    if not others:
        raise ValueError("scores holds only the baseline; add at least one multi-task method.")
    if path is not None:
        check_figure_path(path)
    plt = _pyplot()
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(13.0, 5.8), layout="constrained",
                                 width_ratios=[1.4, 1.0])
    fig.get_layout_engine().set(w_pad=0.08, h_pad=0.08)
    plot_relations(mbc, ys=ys, class_names=class_names, ax=a0)
    plot_task_pairs(scores[baseline], others, ax=a1, baseline=baseline)
    if path is not None:
        fig.savefig(path)
    return fig


def plot_criterion_path(est, *, ax=None):
    """The information criterion of every candidate number of clusters, the chosen one marked.

    Parameters
    ----------
    est : fitted BregmanMixture or ClusterCountSelection
        A :class:`~bregclust.BregmanMixture` fitted with candidates (``n_components_path_``,
        ``criterion_path_``), or the result of :func:`~bregclust.select_n_clusters`.
    ax : matplotlib Axes, optional
        Axes to draw in; a new figure is created when None.

    Returns
    -------
    ax : matplotlib Axes
        Its first line holds ``(candidates, criterion)``, its second the chosen point.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        ``est`` is an unfitted estimator.
    """
    if hasattr(est, "n_clusters_path"):
        ks, crit, chosen = est.n_clusters_path, est.criterion_path, est.n_clusters
        name, what = est.criterion, f"k-means ({est.family})"
    else:
        crit = _check_fitted(est, "criterion_path_", "plot_criterion_path")
        ks, chosen = est.n_components_path_, est.n_components_
        name = getattr(est, "criterion_", est.criterion)
        what = f"{type(est).__name__} ({est.family_})"
    ks = np.asarray(ks)
    crit = np.asarray(crit, dtype=np.float64)
    if ks.ndim != 1 or crit.shape != ks.shape or not np.any(ks == chosen):
        raise ValueError(
            f"the candidates ({ks.tolist()}), their criterion ({crit.tolist()}) and the chosen "
            f"number ({chosen!r}) do not match: pass the fitted estimator or the "
            "ClusterCountSelection returned by select_n_clusters, unmodified.")
    order = np.argsort(ks)
    ax = _axes(ax, figsize=(5.0, 3.6))
    ax.plot(ks[order], crit[order], marker="o", markersize=4)
    at = int(np.flatnonzero(ks == chosen)[0])
    ax.plot([ks[at]], [crit[at]], marker="*", markersize=14, linestyle="none", color="C3",
            label=f"chosen: {chosen}")
    ax.set_xlabel("number of clusters")
    ax.set_ylabel(f"{name.upper()} (lower is better)")
    ax.set_title(f"{what}: {name.upper()} by number of clusters")
    ax.legend()
    return ax


__all__ += ["plot_criterion_path"]
