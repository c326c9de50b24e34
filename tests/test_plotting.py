"""bregclust.plotting: figures rendered on Agg, checked through their artists."""

import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

from bregclust import (  # noqa: E402
    BregmanKMeans,
    ModelRelationClustering,
    MultitaskBregmanClustering,
    bregman_linkage,
    dendrogram_purity,
    get_divergence,
    plotting,  # noqa: E402
)
from bregclust.datasets import make_multitask_blobs  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def blobs():
    return make_multitask_blobs(n_tasks=2, n_samples=[60, 45], n_clusters=[3, 2], n_shared=2,
                                cluster_std=0.4, random_state=0)


@pytest.fixture(scope="module")
def mbc(blobs):
    return MultitaskBregmanClustering([3, 2], lam=0.5, random_state=0).fit(blobs.Xs)


def test_relations_image_is_the_transport_plan(mbc, blobs):
    ax = plotting.plot_relations(mbc, ys=blobs.ys, class_names=["a", "b", "c", "d", "e"],
                                 scale="raw")
    assert len(ax.images) == 1
    np.testing.assert_array_equal(ax.images[0].get_array(), mbc.relations_[(0, 1)])
    # margins: the bars are the cluster sizes of task 1 (top) and task 0 (right)
    bars = [a for a in ax.figure.axes if a is not ax and a.patches]
    heights = sorted(tuple(sorted(p.get_height() for p in a.patches)) for a in bars
                     if all(p.get_width() < 1 for p in a.patches))
    widths = [sorted(p.get_width() for p in a.patches) for a in bars
              if all(p.get_height() < 1 for p in a.patches)]
    assert heights == [tuple(sorted(np.bincount(mbc.labels_[1]).astype(float)))]
    assert widths == [sorted(np.bincount(mbc.labels_[0]).astype(float))]
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert len(ticks) == 3 and all("%" in t for t in ticks)
    assert {t.split(": ")[1].split(" ")[0] for t in ticks} <= {"a", "b", "c", "d", "e"}


def test_relations_other_pair_and_no_margins(mbc):
    ax = plotting.plot_relations(mbc, pair=(1, 0), margins=False, scale="raw")
    np.testing.assert_array_equal(ax.images[0].get_array(), mbc.relations_[(1, 0)])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2"]
    assert "task 1 to task 0" in ax.get_title()


def test_relations_of_model_relation_clustering(blobs):
    Xs = [np.abs(X) for X in blobs.Xs]
    est = ModelRelationClustering([3, 2], random_state=0, tol=1e-2).fit(Xs)
    ax = plotting.plot_relations(est, margins=False, scale="raw")
    np.testing.assert_array_equal(ax.images[0].get_array(), est.relations_[(0, 1)])


def test_relations_errors(mbc):
    with pytest.raises(NotFittedError, match="relations_.*call fit first"):
        plotting.plot_relations(MultitaskBregmanClustering(2))
    with pytest.raises(ValueError, match=r"pair=\(0, 5\) is not a stored relation"):
        plotting.plot_relations(mbc, pair=(0, 5))
    with pytest.raises(TypeError, match="pair must be two task indices"):
        plotting.plot_relations(mbc, pair=None)
    with pytest.raises(ValueError, match="ys must have one entry per task"):
        plotting.plot_relations(mbc, ys=[np.zeros(60, dtype=int)])
    with pytest.raises(ValueError, match="class_names has no entry for class"):
        plotting.plot_relations(mbc, ys=[np.full(60, 7), np.full(45, 7)], class_names=["x"])


def test_dendrogram_leaves_coloured_by_class():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.2, (12, 2)), rng.normal(3, 0.2, (9, 2)),
                   rng.normal((0, 4), 0.2, (7, 2))])
    y = np.repeat([0, 1, 2], [12, 9, 7])
    Z = bregman_linkage(X)
    ax = plotting.plot_dendrogram(Z, y, class_names=["first", "second", "third"])
    marks = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(marks) == 3  # one marker collection per class
    assert sum(len(m.get_offsets()) for m in marks) == X.shape[0]  # one marker per leaf
    colours = {tuple(np.round(m.get_facecolor()[0], 6)) for m in marks}
    assert len(colours) == 3
    assert [len(m.get_offsets()) for m in marks] == [12, 9, 7]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["first", "second", "third"]
    assert ax.get_title().startswith(f"dendrogram purity {dendrogram_purity(Z, y):.3f}")
    # the tree: n - 1 merges, each drawn as one U-shaped line
    tree = [c for c in ax.collections if not isinstance(c, PathCollection)]
    assert sum(len(c.get_paths()) for c in tree) == X.shape[0] - 1


def test_dendrogram_without_classes_and_errors():
    Z = bregman_linkage(np.arange(10.0).reshape(5, 2))
    ax = plotting.plot_dendrogram(Z)
    assert ax.get_title() == "dendrogram of 5 points"
    assert not any(isinstance(c, PathCollection) for c in ax.collections)
    with pytest.raises(ValueError, match="Z must be a valid scipy linkage matrix"):
        plotting.plot_dendrogram(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"y must have one class per leaf: expected shape \(5,\)"):
        plotting.plot_dendrogram(Z, [0, 1])


def test_task_pairs_points_and_diagonal():
    ind = [0.40, 0.55, 0.70]
    ax = plotting.plot_task_pairs(ind, {"MBC": [0.45, 0.60, 0.69], "LSSMTC": [0.5, 0.5, 0.8]},
                                  task_names=["t0", "t1", "t2"])
    diag = ax.lines[0]
    np.testing.assert_allclose(diag.get_xdata(), diag.get_ydata())
    pts = [c.get_offsets() for c in ax.collections]
    assert len(pts) == 2
    np.testing.assert_allclose(pts[0], np.column_stack([ind, [0.45, 0.60, 0.69]]))
    np.testing.assert_allclose(pts[1], np.column_stack([ind, [0.5, 0.5, 0.8]]))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["MBC", "LSSMTC"]
    assert [t.get_text() for t in ax.texts] == ["t0", "t1", "t2"]
    assert ax.get_xlabel() == "NMI of IND"


def test_task_pairs_errors():
    with pytest.raises(ValueError, match=r"scores_mtc\['MTC'\] has 2 tasks but scores_ind has 3"):
        plotting.plot_task_pairs([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(ValueError, match="scores_ind contains NaN"):
        plotting.plot_task_pairs([0.1, np.nan], [0.1, 0.2])
    with pytest.raises(ValueError, match="scores_ind must be a non-empty 1-D"):
        plotting.plot_task_pairs([[0.1]], [0.1])
    with pytest.raises(ValueError, match="task_names must have 2 entries"):
        plotting.plot_task_pairs([0.1, 0.2], [0.1, 0.2], task_names=["a"])


def test_divergence_balls_levels_and_domains():
    A = np.array([[2.0, 0.5], [0.5, 1.0]])
    names = ["sqeuclidean", "kl", "itakura_saito", get_divergence("mahalanobis", A=A)]
    axes = plotting.plot_divergence_balls(names, center=(1.0, 2.0), levels=(0.1, 0.5),
                                          resolution=41)
    assert [a.get_title() for a in axes] == ["sqeuclidean", "kl", "itakura_saito",
                                             "mahalanobis"]
    for ax in axes:
        (cs,) = [c for c in ax.collections if hasattr(c, "levels")]
        np.testing.assert_allclose(cs.levels, [0.1, 0.5])
    # kl and Itakura-Saito grids stay inside their domains
    assert axes[1].get_xlim()[0] >= 0.0 and axes[2].get_xlim()[0] > 0.0
    assert axes[0].get_xlim()[0] < 0.0
    # the sqeuclidean ball of radius r is a circle of radius sqrt(r) around the centre
    (cs,) = [c for c in axes[0].collections if hasattr(c, "levels")]
    verts = np.vstack([p.vertices for p in cs.get_paths()[:1]])
    np.testing.assert_allclose(np.hypot(verts[:, 0] - 1, verts[:, 1] - 2), np.sqrt(0.1),
                               atol=0.02)


def test_divergence_balls_default_and_errors():
    axes = plotting.plot_divergence_balls(resolution=21)
    assert "sqeuclidean" in [a.get_title() for a in axes]
    assert "mahalanobis" not in [a.get_title() for a in axes]  # needs A
    assert "cosine" in [a.get_title() for a in axes]  # drawn without the origin's grid point
    with pytest.raises(ValueError, match="levels must be increasing positive radii"):
        plotting.plot_divergence_balls(["kl"], levels=(1.0, 0.5))
    with pytest.raises(ValueError, match="center must be two finite numbers"):
        plotting.plot_divergence_balls(["kl"], center=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="center"):
        plotting.plot_divergence_balls(["kl"], center=(-1.0, 1.0))
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match=r"axes must hold one Axes per divergence \(2\)"):
        plotting.plot_divergence_balls(["kl", "sqeuclidean"], axes=[ax])


def test_objective_line_is_the_history(mbc):
    ax = plotting.plot_objective(mbc)
    x, y = ax.lines[0].get_data()
    np.testing.assert_array_equal(y, mbc.objective_history_)
    np.testing.assert_array_equal(x, np.arange(len(mbc.objective_history_)))
    assert ax.get_title().startswith("MultitaskBregmanClustering\nobjective")
    km = BregmanKMeans(3, random_state=0).fit(np.random.default_rng(0).normal(size=(50, 2)))
    ax = plotting.plot_objective(km, log=True)
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), km.objective_history_)
    assert ax.get_yscale() == "log"


def test_objective_errors():
    with pytest.raises(NotFittedError, match="objective_history_.*call fit first"):
        plotting.plot_objective(BregmanKMeans(2))

    class Fake:
        objective_history_ = [1.0, -1.0]

    with pytest.raises(ValueError, match="log=True needs a positive objective"):
        plotting.plot_objective(Fake(), log=True)


def test_demo_figure_has_both_panels(mbc, tmp_path):
    path = tmp_path / "demo.png"
    fig = plotting.plot_demo({"IND": [0.5, 0.6], "MBC": [0.55, 0.7]}, mbc, path=path)
    assert path.stat().st_size > 0
    heat = [a for a in fig.axes if a.images]
    assert len(heat) == 1
    W = mbc.relations_[(0, 1)]
    np.testing.assert_allclose(heat[0].images[0].get_array(), W * W.size / W.sum())
    pairs = [a for a in fig.axes if a.get_xlabel() == "NMI of IND"]
    assert len(pairs) == 1 and len(pairs[0].collections) == 1
    with pytest.raises(ValueError, match="scores holds only the baseline"):
        plotting.plot_demo({"IND": [0.5, 0.6]}, mbc)


def test_no_show_and_missing_matplotlib(monkeypatch, mbc):
    calls = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: calls.append(1))
    plotting.plot_objective(mbc)
    plotting.plot_relations(mbc)
    assert calls == []
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install bregclust\[plot\]"):
        plotting.plot_objective(mbc)


def test_import_bregclust_does_not_import_matplotlib():
    import subprocess

    code = ("import sys, bregclust, bregclust.plotting; "
            "print(any(m.startswith('matplotlib') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------- as a reader sees them
def _texts_outside(fig):
    """Labels of the axes of ``fig`` whose drawn decorations (titles, axis labels, tick labels)
    stick out of the figure."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    out = []
    for ax in fig.axes:
        bb = ax.get_tightbbox(renderer)
        if bb.x0 < box.x0 - 1 or bb.y0 < box.y0 - 1 or bb.x1 > box.x1 + 1 or bb.y1 > box.y1 + 1:
            out.append(ax.get_title() or ax.get_ylabel() or ax.get_xlabel() or repr(ax))
    return out


def test_relations_labels_stay_inside_the_figure(mbc, blobs):
    ax = plotting.plot_relations(mbc, ys=blobs.ys, class_names=["class a", "class b",
                                                                 "class c", "class d", "e"])
    assert _texts_outside(ax.figure) == []
    assert ax.get_xlabel() == "clusters of task 1" and ax.get_ylabel() == "clusters of task 0"
    ax = plotting.plot_relations(mbc, margins=False)
    assert _texts_outside(ax.figure) == []


def test_relations_colour_bar_is_labelled(mbc):
    for scale, words in (("uniform", "relative to uniform"), ("raw", "as stored")):
        ax = plotting.plot_relations(mbc, scale=scale)
        cbars = [a for a in ax.figure.axes if words in a.get_ylabel()]
        assert len(cbars) == 1, [a.get_ylabel() for a in ax.figure.axes]


class _FakeRelations:
    """A fitted multi-task estimator reduced to what plot_relations reads."""

    def __init__(self, W):
        rng = np.random.default_rng(0)
        self.relations_ = {(0, 1): np.asarray(W, dtype=float)}
        self.labels_ = [rng.integers(0, W.shape[0], 50), rng.integers(0, W.shape[1], 40)]


def test_a_uniform_relation_is_drawn_uniform():
    rng = np.random.default_rng(1)
    W = (1 + 0.004 * rng.standard_normal((3, 4))) / 12  # about 1/12 everywhere
    ax = plotting.plot_relations(_FakeRelations(W))
    im = ax.images[0]
    np.testing.assert_allclose(im.get_array(), W * 12 / W.sum())
    colours = im.cmap(im.norm(im.get_array()))[..., :3]
    white = im.cmap(im.norm(1.0))[:3]
    assert np.abs(colours - white).max() < 0.05  # every cell the colour of "uniform"
    assert im.norm.vmax >= 3.0  # the scale reaches a full match, min(K_t, K_s)
    # the values are written in the cells: a reader sees 1.00 rather than a pattern
    assert sorted({t.get_text() for t in ax.texts}) <= ["0.99", "1.00", "1.01"]


def test_a_matching_relation_spans_the_scale():
    W = np.eye(3) / 3
    ax = plotting.plot_relations(_FakeRelations(W), margins=False)
    im = ax.images[0]
    np.testing.assert_allclose(im.get_array(), 3 * np.eye(3))
    assert im.norm(3.0) == pytest.approx(1.0) and im.norm(1.0) == pytest.approx(0.5)
    assert [t.get_text() for t in ax.texts].count("3.00") == 3


def test_relations_of_an_estimator_without_relations_name_those_with_them():
    from bregclust import LNKMTC

    Xs = [np.random.default_rng(t).random((30, 3)) for t in range(2)]
    est = LNKMTC(2, C=1.0, random_state=0).fit(Xs)
    with pytest.raises(TypeError, match="NonparametricKernelMTC learns no relations.*"
                                        "ModelRelationClustering and "
                                        "MultitaskBregmanClustering"):
        plotting.plot_relations(est)
    with pytest.raises(ValueError, match="scale must be 'uniform' or 'raw'"):
        plotting.plot_relations(_FakeRelations(np.eye(2)), scale="log")


def test_objective_uses_a_log_axis_when_the_range_calls_for_it():
    class Fake:
        objective_history_ = np.geomspace(3e8, 317, 40)

    ax = plotting.plot_objective(Fake())
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
    Fake.objective_history_ = np.linspace(10.0, 9.0, 30)
    assert plotting.plot_objective(Fake()).get_yscale() == "linear"
    Fake.objective_history_ = np.array([5.0, -3e8, -317.0])  # not positive: linear
    assert plotting.plot_objective(Fake()).get_yscale() == "linear"
    assert plotting.plot_objective(Fake(), log=False).get_yscale() == "linear"
    with pytest.raises(ValueError, match="log must be True, False or 'auto'"):
        plotting.plot_objective(Fake(), log="yes")


def test_objective_title_and_labels_stay_inside_the_figure(mbc):
    ax = plotting.plot_objective(mbc)
    assert _texts_outside(ax.figure) == []


def test_dendrogram_accepts_a_fitted_agglomerative_estimator():
    from bregclust import AgglomerativeBregman

    X = np.random.default_rng(0).normal(size=(15, 2))
    agg = AgglomerativeBregman(3).fit(X)
    ax = plotting.plot_dendrogram(agg)
    tree = [c for c in ax.collections if not isinstance(c, PathCollection)]
    assert sum(len(c.get_paths()) for c in tree) == X.shape[0] - 1
    with pytest.raises(NotFittedError, match="linkage_matrix_.*call fit first"):
        plotting.plot_dendrogram(AgglomerativeBregman(3))
    with pytest.raises(TypeError, match="BregmanKMeans builds no tree"):
        plotting.plot_dendrogram(BregmanKMeans(3))
    with pytest.raises(TypeError, match="Z must be a linkage matrix.*got str"):
        plotting.plot_dendrogram("Z")


def test_divergence_balls_accepts_a_single_name():
    axes = plotting.plot_divergence_balls("kl", resolution=21)
    assert [a.get_title() for a in axes] == ["kl"]
    axes = plotting.plot_divergence_balls(get_divergence("itakura_saito"), resolution=21)
    assert [a.get_title() for a in axes] == ["itakura_saito"]


@pytest.mark.parametrize("resolution", [10**9, plotting.MAX_RESOLUTION + 1, 9, 20.5])
def test_divergence_balls_resolution_is_bounded(resolution):
    with pytest.raises(ValueError, match=f"resolution must be an integer from 10 to "
                                         f"{plotting.MAX_RESOLUTION}"):
        plotting.plot_divergence_balls("kl", resolution=resolution)


def test_demo_refuses_a_path_it_cannot_write_before_drawing(mbc, tmp_path):
    scores = {"IND": [0.5, 0.6], "MBC": [0.55, 0.7]}
    n_figures = len(plt.get_fignums())
    with pytest.raises(ValueError, match="is a directory; give a file name"):
        plotting.plot_demo(scores, mbc, path=tmp_path)
    assert not (tmp_path.parent / f"{tmp_path.name}.png").exists()
    with pytest.raises(ValueError, match="the folder .* does not exist"):
        plotting.plot_demo(scores, mbc, path=tmp_path / "missing" / "demo.png")
    with pytest.raises(ValueError, match=r"\.foo is not a figure format"):
        plotting.plot_demo(scores, mbc, path=tmp_path / "demo.foo")
    assert len(plt.get_fignums()) == n_figures  # refused before any figure was made


def test_demo_figure_labels_stay_inside(mbc, tmp_path):
    fig = plotting.plot_demo({"IND": [0.5, 0.6], "MBC": [0.55, 0.7]}, mbc)
    assert _texts_outside(fig) == []
def test_criterion_path_line_and_chosen_point():
    from bregclust import BregmanMixture, select_n_clusters

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.5, size=(40, 2)) for c in (0.0, 5.0, 10.0)])
    gm = BregmanMixture([4, 1, 2, 3], random_state=0).fit(X)
    ax = plotting.plot_criterion_path(gm)
    line, star = ax.lines[:2]
    np.testing.assert_array_equal(line.get_xdata(), [1, 2, 3, 4])
    order = np.argsort(gm.n_components_path_)
    np.testing.assert_array_equal(line.get_ydata(), gm.criterion_path_[order])
    assert star.get_xdata()[0] == gm.n_components_ == 3
    sel = select_n_clusters(X, range(1, 5), random_state=0)
    ax = plotting.plot_criterion_path(sel)
    assert ax.lines[1].get_xdata()[0] == sel.n_clusters == 3
    assert "BIC" in ax.get_ylabel()
    with pytest.raises(NotFittedError, match="plot_criterion_path needs a fitted estimator"):
        plotting.plot_criterion_path(BregmanMixture(2))


def test_hostile_arguments_get_a_sentence_naming_them(mbc, blobs):
    """Axes that are not Axes (every function), a pair that is a string, NaN class labels,
    NaN merge heights, scores that are not numbers, a ClusterCountSelection whose fields
    disagree: a TypeError/ValueError naming the argument, never matplotlib's or numpy's."""
    import dataclasses

    from bregclust import BregmanMixture, select_n_clusters

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.5, size=(20, 2)) for c in (0.0, 5.0)])
    gm = BregmanMixture([1, 2], random_state=0).fit(X)
    Z = bregman_linkage(X[:10])
    for call in (lambda: plotting.plot_criterion_path(gm, ax="left"),
                 lambda: plotting.plot_relations(mbc, ax="left"),
                 lambda: plotting.plot_objective(mbc, ax=1),
                 lambda: plotting.plot_dendrogram(Z, ax=[1]),
                 lambda: plotting.plot_task_pairs([0.1, 0.2], [0.3, 0.4], ax="x"),
                 lambda: plotting.plot_divergence_balls(["kl"], axes=["x"])):
        with pytest.raises(TypeError, match="ax(es)? must be a matplotlib Axes"):
            call()
    for pair in ("01", (0.0, 1.0), (True, 1), (0, 1, 2)):
        with pytest.raises(TypeError, match="pair must be two task indices"):
            plotting.plot_relations(mbc, pair=pair)
    ys = [np.asarray(y, dtype=float) for y in blobs.ys]
    ys[0][3] = np.nan
    with pytest.raises(ValueError, match="ys contains NaN"):
        plotting.plot_relations(mbc, ys=ys)
    Zn = Z.copy()
    Zn[2, 2] = np.nan
    with pytest.raises(ValueError, match="Z contains NaN"):
        plotting.plot_dendrogram(Zn)
    for bad in ("ab", ["a", "b"]):
        with pytest.raises(TypeError, match="scores_ind must be a sequence of per-task scores"):
            plotting.plot_task_pairs(bad, [0.3, 0.4])
    sel = select_n_clusters(X, [1, 2], random_state=0)
    for broken in (dataclasses.replace(sel, n_clusters=7),
                   dataclasses.replace(sel, criterion_path=sel.criterion_path[:1])):
        with pytest.raises(ValueError, match="do not match"):
            plotting.plot_criterion_path(broken)
