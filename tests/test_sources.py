"""The data-source protocol: every pass on every source (in memory dense and sparse, dask dense
and sparse) gives the same numbers as the dense in-memory source, with the same signatures.
"""

import inspect

import numpy as np
import pytest
import scipy.sparse as sp

from bregclust.divergences import get_divergence

da = pytest.importorskip("dask.array")

KINDS = ["dense", "sparse", "dask", "dask-sparse"]


def _data(seed=0, n=60, d=5):
    rng = np.random.default_rng(seed)
    X = rng.poisson(2.0, size=(n, d)).astype(np.float64)
    X[:, 0] += 1.0  # no empty row (the reweighted view divides by the row totals)
    w = rng.uniform(0.5, 2.0, size=n)
    w[3] = 0.0  # one row of zero weight
    return X, w


def _source(kind, X, w, div, chunks=(20, -1)):
    from bregclust._sources import as_source

    if kind == "dense":
        return as_source(X, w, div)
    if kind == "sparse":
        return as_source(sp.csr_matrix(X), w, div)
    A = da.from_array(X, chunks=chunks)
    if kind == "dask-sparse":
        A = A.map_blocks(sp.csr_matrix, dtype=X.dtype, meta=sp.csr_matrix((0, 0)))
    return as_source(A, w, div)


def _same(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=1e-10, atol=1e-12)


def _part(p):
    return p.S, p.W, p.objective


def _np(x):
    """A dask result computed, an in-memory one as it is."""
    return np.asarray(x.compute() if hasattr(x, "compute") else x)


@pytest.fixture(params=["sqeuclidean", "kl"])
def div(request):
    return get_divergence(request.param)


def test_every_source_implements_the_protocol_with_its_signatures(div):
    """Every source is a :class:`DataSource` and every method of the protocol has the same
    parameters on every source (extra keyword parameters with defaults allowed)."""
    from bregclust._sources import DataSource

    X, w = _data()
    names = [m for m in dir(DataSource) if not m.startswith("_") and callable(
        getattr(DataSource, m))]
    assert len(names) >= 18
    for kind in KINDS:
        src = _source(kind, X, w, div)
        assert isinstance(src, DataSource)
        for m in names:
            want = list(inspect.signature(getattr(DataSource, m)).parameters)[1:]
            got = inspect.signature(getattr(src, m)).parameters
            assert list(got)[:len(want)] == want, (kind, m, list(got))
            extra = list(got)[len(want):]
            assert all(got[p].default is not inspect.Parameter.empty for p in extra), (kind, m)


@pytest.mark.parametrize("kind", KINDS[1:])
def test_every_pass_gives_the_numbers_of_the_dense_source(kind, div):
    from bregclust import _blocks as B
    from bregclust import _execution as E
    from bregclust._conditioning import decide
    from bregclust._sources import as_source
    from bregclust.mixture import _row_totals, _rows_l1

    X, w = _data()
    ref = _source("dense", X, w, div)
    src = _source(kind, X, w, div)
    assert (src.n, src.d, src.shape, src.dtype) == (ref.n, ref.d, ref.shape, ref.dtype)
    assert src.sparse == (kind in ("sparse", "dask-sparse"))
    assert src.chunked == kind.startswith("dask")
    U = X[[0, 10, 20]] + 0.5
    pc = E.prepare_centres(div, U)

    # statistics, and the first Lloyd pass fused with them
    s_ref, s = ref.stats(div), src.stats(div)
    assert (s.n, s.d, s.npos) == (s_ref.n, s_ref.d, s_ref.npos)
    _same([s.weight, s.maxabs, s.wmax], [s_ref.weight, s_ref.maxabs, s_ref.wmax])
    (s2, first), first_ref = src.stats(div, centres=pc), ref.lloyd(div, pc)
    assert s2.n == s_ref.n
    for a, b in zip(_part(first), _part(first_ref)):
        _same(a, b)

    # the Lloyd pass, label changes, the final labels and objective
    p_ref, p = ref.lloyd(div, pc), src.lloyd(div, pc)
    for a, b in zip(_part(p), _part(p_ref)):
        _same(a, b)
    assert not src.labels_changed(p, src.lloyd(div, pc))
    moved = E.prepare_centres(div, U[[1, 0, 2]])
    assert src.labels_changed(p, src.lloyd(div, moved))
    np.testing.assert_array_equal(_np(src.labels(div, pc, p)), p_ref.labels)
    _same(src.final_objective(div, p, U), ref.final_objective(div, p_ref, U))

    # any block pass through run (chunks validated on the way), and the k-means|| cost
    c_ref = ref.run(B.cost_block, div, pc, check=True)
    c = src.run(B.cost_block, div, pc, check=True)
    _same([c.cost, c.ninf], [c_ref.cost, c_ref.ninf])
    c2 = src.cost(div, pc)
    _same([c2.cost, c2.ninf], [c_ref.cost, c_ref.ninf])

    # rows: take, positive rows, the farthest rows
    ids = [7, 59, 0, 33]
    t_ref, t = ref.take(ids), src.take(ids)
    _same(t.rows, t_ref.rows)
    _same(t.w, t_ref.w)
    np.testing.assert_array_equal(src.positive_rows(), ref.positive_rows())
    far_ref = list(ref.farthest(div, p_ref, pc))[:5]
    far = list(src.farthest(div, p, pc))[:5]
    for a, b in zip(far, far_ref):
        _same(a[0], b[0])
        assert a[1:3] == b[1:3]
        _same(a[3], b[3])
    first_row = src.draw_first(np.random.RandomState(0))
    assert 0 <= first_row < src.n and w[first_row] > 0

    # a fold threads one state through every block, in the order given
    def add(block, div, state):
        return state + float(block.weights() @ np.asarray(block.X.sum(axis=1)).ravel())

    order = list(range(src.nblocks))[::-1]
    _same(src.fold(add, div, 0.0, order), float(w @ X.sum(axis=1)))

    # the views: conditioned (a power-of-two scale), reweighted (rows on the simplex)
    big_ref = as_source(X * 2.0 ** 600, w, div)
    cond = decide(div, big_ref.stats(div))
    assert not cond.identity
    kind_big = _source(kind, X * 2.0 ** 600, w, div)
    kind_big.stats(div)
    cu = E.prepare_centres(div, cond.apply_centres(U * 2.0 ** 600))
    for a, b in zip(_part(kind_big.conditioned(cond).lloyd(div, cu)),
                    _part(big_ref.conditioned(cond).lloyd(div, cu))):
        _same(a, b)
    v_ref = ref.reweighted(_rows_l1, _row_totals)
    v = src.reweighted(_rows_l1, _row_totals)
    P = E.prepare_centres(div, _rows_l1(U))
    for a, b in zip(_part(v.lloyd(div, P)), _part(v_ref.lloyd(div, P))):
        _same(a, b)

    # fitted models: per-row evaluations, labels, divergences, the score
    def row_sums(rows, div, scale):
        return scale * np.asarray(rows.sum(axis=1)).ravel()

    _same(_np(src.map_rows(row_sums, div, 2.0)), 2.0 * X.sum(axis=1))
    for name in ("predict", "transform"):
        _same(_np(getattr(src, name)(div, U)), getattr(ref, name)(div, U))
    _same(src.score(div, U), ref.score(div, U))


@pytest.mark.parametrize("kind", KINDS[1:])
def test_k_means_parallel_sampling_is_the_same_on_one_block(kind, div):
    """The k-means|| passes draw the same rows from one block whatever holds it, so the seeds
    of :func:`seed_centres` agree (a chunked source draws one stream per block)."""
    from bregclust._seeding import seed_centres

    X, w = _data(1)
    ref = _source("dense", X, w, div)
    src = _source(kind, X, w, div, chunks=(X.shape[0], -1))
    for s in (ref, src):
        s.stats(div)
    a = seed_centres(ref, div, 4, np.random.RandomState(3), "k-means||")
    b = seed_centres(src, div, 4, np.random.RandomState(3), "k-means||")
    if kind.startswith("dask"):  # the first row is drawn chunk first, then row
        assert a.shape == b.shape == (4, X.shape[1])
    else:
        _same(a, b)
    r = seed_centres(src, div, 4, np.random.RandomState(3), "random")
    np.testing.assert_array_equal(r, seed_centres(ref, div, 4, np.random.RandomState(3),
                                                  "random"))


def test_one_seeding_entry_point_picks_the_method_from_the_source():
    from bregclust._seeding import seed_centres, seeding_method
    from bregclust._sources import InMemorySource

    X, w = _data()
    div = get_divergence("sqeuclidean")
    mem = _source("dense", X, w, div)
    chunks = _source("dask", X, w, div)
    assert seeding_method(mem) == "k-means++"
    assert seeding_method(chunks) == "k-means||"
    assert seeding_method(chunks, "k-means++", fallback=True) == "k-means||"
    with pytest.raises(ValueError, match="k-means\\+\\+' reads the whole data set"):
        seeding_method(chunks, "k-means++")
    with pytest.raises(ValueError, match="init must be"):
        seeding_method(mem, "farthest")
    # k-means++ in memory: the rows of the public bregman_kmeans_plusplus
    from bregclust import bregman_kmeans_plusplus

    C = seed_centres(mem, div, 3, np.random.RandomState(0), "auto")
    C_pub, _ = bregman_kmeans_plusplus(X, 3, "sqeuclidean", random_state=np.random.RandomState(0),
                                       sample_weight=w)
    _same(C, C_pub)
    # a weighted random draw never picks a row of zero weight
    only = np.zeros(X.shape[0])
    only[[5, 9]] = 1.0
    R = seed_centres(InMemorySource(X, only), div, 2, np.random.RandomState(0), "random",
                     weighted=True)
    assert sorted(map(tuple, R)) == sorted(map(tuple, X[[5, 9]]))
    with pytest.raises(ValueError, match="positive weight"):
        seed_centres(InMemorySource(X, only), div, 3, np.random.RandomState(0), "random")


def test_the_estimators_seed_through_the_one_entry_point():
    """No estimator calls a seeding method directly: each goes through ``seed_centres``."""
    import bregclust.bisecting
    import bregclust.kmeans
    import bregclust.mbc
    import bregclust.minibatch
    import bregclust.mixture

    for module in (bregclust.kmeans, bregclust.mixture, bregclust.mbc, bregclust.minibatch,
                   bregclust.bisecting):
        src = inspect.getsource(module)
        assert "seed_centres(" in src, module.__name__
        for name in ("kmeans_parallel(", "random_centres(", "kmeans_plusplus(src",
                     "kmeans_plusplus(view", "kmeans_plusplus(block", "kmeans_plusplus(tk",
                     "kmeans_plusplus(B.Block"):
            assert name not in src, (module.__name__, name)
