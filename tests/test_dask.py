"""BregmanKMeans on dask arrays equals the in-memory fit (labels, centres, objective)."""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from bregclust import BregmanKMeans, DomainError, EmptyClusterWarning  # noqa: E402
from bregclust.divergences import register_divergence, unregister_divergence  # noqa: E402

BUILTINS = ["sqeuclidean", "mahalanobis", "kl", "itakura_saito", "l1_subgradient"]
CHUNKINGS = [97, 400, (50, 150, 7, 193)]


def _data(n=400, d=6, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.5, 6.0, size=(4, d))
    X = centres[rng.integers(0, 4, size=n)] * rng.gamma(20.0, 1 / 20.0, size=(n, d))
    return X


def _kw(name, d, C0):
    params = None
    if name == "mahalanobis":
        rng = np.random.default_rng(3)
        M = rng.normal(size=(d, d))
        params = {"A": M @ M.T + d * np.eye(d)}
    return dict(divergence=name, divergence_params=params, init=C0, max_iter=25, tol=0.0)


def _fit_both(kw, X, dX, k=4, **fit_kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = BregmanKMeans(k, **kw).fit(X, **fit_kw.get("mem", {}))
        b = BregmanKMeans(k, **kw).fit(dX, **fit_kw.get("dask", {}))
    return a, b


def _assert_same(a, b):
    assert isinstance(b.labels_, da.Array)
    np.testing.assert_array_equal(b.labels_.compute(), a.labels_)
    scale = np.abs(a.cluster_centers_).max()
    np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_, rtol=1e-10,
                               atol=1e-10 * scale)
    assert b.n_iter_ == a.n_iter_
    np.testing.assert_allclose(b.objective_history_, a.objective_history_, rtol=1e-12)
    # in memory, inertia_ is re-evaluated exactly from the returned labels; on dask it is the
    # sum of the last pass's minima (GEMM form): equal up to rounding of a near-zero total
    np.testing.assert_allclose(b.inertia_, a.inertia_, rtol=1e-12,
                               atol=1e-12 * max(1.0, float(np.sum(b.objective_history_[:1]))))


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("name", BUILTINS)
def test_dense_equals_in_memory(name, chunks):
    X = _data()
    C0 = X[[0, 100, 200, 300]] * 1.1
    a, b = _fit_both(_kw(name, X.shape[1], C0), X, da.from_array(X, chunks=(chunks, 6) if isinstance(chunks, tuple) else chunks).rechunk({1: -1}))
    _assert_same(a, b)


@pytest.mark.parametrize("name", ["sqeuclidean", "kl", "l1_subgradient"])
def test_sparse_chunks_equal_in_memory(name):
    rng = np.random.default_rng(1)
    Xs = sp.random(300, 40, density=0.15, random_state=2, format="csr",
                   data_rvs=lambda m: rng.uniform(0.5, 3.0, m))
    dX = da.from_array(Xs, chunks=(70, 40), asarray=False)
    C0 = Xs[[0, 50, 100]].toarray() + 0.05
    kw = dict(divergence=name, init=C0, max_iter=15, tol=0.0)
    a, b = _fit_both(kw, Xs, dX, k=3)
    _assert_same(a, b)


def test_sample_weight_numpy_and_dask():
    X = _data(seed=4)
    w = np.random.default_rng(5).uniform(0.0, 3.0, X.shape[0])
    C0 = X[[1, 2, 3, 4]].copy()
    kw = dict(divergence="kl", init=C0, max_iter=20, tol=1e-8)
    dX = da.from_array(X, chunks=(64, 6))
    a, b = _fit_both(kw, X, dX, mem={"sample_weight": w},
                     dask={"sample_weight": da.from_array(w, chunks=50)})
    _assert_same(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = BregmanKMeans(4, **kw).fit(dX, sample_weight=w)
    _assert_same(a, c)
    np.testing.assert_allclose(c.score(dX, sample_weight=w), a.score(X, sample_weight=w),
                               rtol=1e-12)


def test_empty_cluster_reseeding_matches():
    X = _data(seed=6)
    C0 = np.vstack([X[:3], np.full((1, 6), 500.0)])
    kw = dict(init=C0, max_iter=20, tol=0.0)
    with pytest.warns(EmptyClusterWarning, match="re-seeded"):
        b = BregmanKMeans(4, **kw).fit(da.from_array(X, chunks=(37, 6)))
    with pytest.warns(EmptyClusterWarning, match="re-seeded"):
        a = BregmanKMeans(4, **kw).fit(X)
    _assert_same(a, b)


def _exp_phi(x):
    return math.exp(x)


def _exp_dphi(x):
    return math.exp(x)


@pytest.fixture
def custom():
    name = "dask_test_exp"
    register_divergence(name, phi=_exp_phi, dphi=_exp_dphi, domain="real", overwrite=True)
    yield name
    unregister_divergence(name)


def test_custom_generator(custom):
    X = _data(seed=7) / 3.0
    C0 = X[[0, 1, 2, 3]].copy()
    a, b = _fit_both(dict(divergence=custom, init=C0, max_iter=20, tol=0.0), X,
                     da.from_array(X, chunks=(120, 6)))
    _assert_same(a, b)


def test_predict_transform_are_lazy():
    X = _data(seed=8)
    dX = da.from_array(X, chunks=(90, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        km = BregmanKMeans(4, divergence="itakura_saito", init=X[:4].copy(), max_iter=5).fit(X)
    p = km.predict(dX)
    t = km.transform(dX)
    assert isinstance(p, da.Array) and isinstance(t, da.Array)
    assert t.shape == (X.shape[0], 4) and t.chunks[0] == dX.chunks[0]
    np.testing.assert_array_equal(p.compute(), km.predict(X))
    np.testing.assert_allclose(t.compute(), km.transform(X), rtol=1e-13)


def test_random_init_draws_like_in_memory():
    X = _data(seed=9)
    kw = dict(divergence="kl", init="random", n_init=2, random_state=3, max_iter=30)
    a, b = _fit_both(kw, X, da.from_array(X, chunks=(80, 6)))
    _assert_same(a, b)


@pytest.mark.parametrize("name", ["sqeuclidean", "kl"])
def test_kmeans_parallel_default_init(name):
    X = _data(n=600, seed=10)
    dX = da.from_array(X, chunks=(100, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b1 = BregmanKMeans(4, divergence=name, random_state=0).fit(dX)
        b2 = BregmanKMeans(4, divergence=name, random_state=0).fit(dX)
        a = BregmanKMeans(4, divergence=name, random_state=0, n_init=5).fit(X)
    np.testing.assert_array_equal(b1.cluster_centers_, b2.cluster_centers_)
    assert b1.cluster_centers_.shape == (4, 6)
    # Four well separated groups: k-means|| + Lloyd reaches the k-means++ optimum.
    assert b1.inertia_ <= 1.02 * a.inertia_


def test_bad_layouts_and_inits():
    X = _data()
    with pytest.raises(ValueError, match="chunked along features"):
        BregmanKMeans(3).fit(da.from_array(X, chunks=(100, 3)))
    # k-means|| runs on every data source, in memory too
    km = BregmanKMeans(3, init="k-means||", random_state=0).fit(X)
    assert np.bincount(km.labels_, minlength=3).min() > 0
    with pytest.raises(ValueError, match="for a dask array use"):
        BregmanKMeans(3, init="k-means++").fit(da.from_array(X, chunks=100))
    with pytest.raises(ValueError, match="oversampling_factor must be > 0"):
        BregmanKMeans(3, oversampling_factor=0.0).fit(da.from_array(X, chunks=100))
    with pytest.raises(ValueError, match="sample_weight must be 1-D of length"):
        BregmanKMeans(3).fit(da.from_array(X, chunks=100), sample_weight=np.ones(3))


def test_nan_and_domain_errors_name_chunk_and_row():
    X = _data()
    Xn = X.copy()
    Xn[257, 2] = np.nan
    with pytest.raises(ValueError, match=r"chunk 2 \(global rows 200\.\.299\) contains NaN at "
                                         r"global row 257 \(row 57 of the chunk\), column 2"):
        BregmanKMeans(3).fit(da.from_array(Xn, chunks=(100, 6)))
    Xk = X.copy()
    Xk[333, 4] = -1.0
    with pytest.raises(DomainError, match=r"chunk 3 \(global rows 300\.\.399\) leaves the "
                                          r"domain of kl: -1 at global row 333"):
        BregmanKMeans(3, divergence="kl").fit(da.from_array(Xk, chunks=(100, 6)))
    Xi = X.copy()
    Xi[150, 0] = 0.0
    with pytest.raises(DomainError, match=r"chunk 1 .* itakura_saito: 0 at global row 150"):
        BregmanKMeans(3, divergence="is", init="random").fit(da.from_array(Xi, chunks=(100, 6)))
    km = BregmanKMeans(3, init=X[:3].copy(), max_iter=2).fit(X)
    with pytest.raises(ValueError, match=r"chunk 2 .* global row 257"):
        km.predict(da.from_array(Xn, chunks=(100, 6))).compute()


def test_local_cluster_two_processes():
    from distributed import Client, LocalCluster

    X = _data(seed=11)
    C0 = X[[0, 100, 200, 300]] * 1.1
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        dX = da.from_array(X, chunks=(60, 6)).persist()
        for name in ["kl", "itakura_saito"]:
            a, b = _fit_both(dict(divergence=name, init=C0, max_iter=20, tol=0.0), X, dX)
            _assert_same(a, b)
        # persisted chunks run as one task per worker; chunks read by the graph (not
        # persisted) one task each: the same tree of sums, so bit-for-bit the same fit
        c = BregmanKMeans(4, divergence="itakura_saito", init=C0, max_iter=20, tol=0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c.fit(da.from_array(X, chunks=(60, 6)))
        np.testing.assert_array_equal(c.cluster_centers_, b.cluster_centers_)
        assert c.objective_history_ == b.objective_history_
        # every chunk on one worker (as after X.compute()): the pass still uses both
        from bregclust._dask import DaskSource
        from bregclust._dask_local import local_groups

        w0 = sorted(client.scheduler_info()["workers"])[0]
        dX1 = client.persist(da.from_array(X, chunks=(40, 6)), workers=[w0])
        distributed.wait(dX1)
        _, _, _, owner = local_groups(DaskSource(dX1, None))
        assert sorted(np.unique(owner, return_counts=True)[1].tolist()) == [5, 5]
        a, b1 = _fit_both(dict(divergence="kl", init=C0, max_iter=20, tol=0.0), X, dX1)
        _assert_same(a, b1)
        del dX1, b1
        Xn = X.copy()
        Xn[130, 1] = np.inf
        with pytest.raises(ValueError, match=r"chunk 2 .* infinity at global row 130"):
            BregmanKMeans(4).fit(da.from_array(Xn, chunks=(60, 6)))
        # The failed pass leaves nothing behind but the persisted array.
        del dX, b
        client.run_on_scheduler(lambda dask_scheduler: None)
        left = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
        for _ in range(50):
            if left == 0:
                break
            import time

            time.sleep(0.1)
            left = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
        assert left == 0


def testbalanced_owners():
    from bregclust._dask_local import balanced_owners

    rows = [10] * 6
    # all on one worker: half move to the other (the first chunks stay)
    assert balanced_owners([["a"]] * 6, rows, ["a", "b"]) == ["a"] * 3 + ["b"] * 3
    # single copies stay where they are even if unbalanced by less than a chunk
    assert balanced_owners([["a"], ["b"], ["a"]], [10, 10, 10], ["a", "b"]) == ["a", "b", "a"]
    # replicated chunks fill the lighter worker, single copies first
    owner = balanced_owners([["a", "b"], ["a", "b"], ["a"], ["a"]], [10] * 4, ["a", "b"])
    assert owner == ["b", "b", "a", "a"]
    # uneven chunk sizes: balance by rows, and a worker holding nothing gets work
    owner = balanced_owners([["a"]] * 4, [30, 10, 10, 10], ["a", "b"])
    assert owner == ["a", "b", "b", "b"]


def test_fit_from_centres_reads_the_data_once_per_iteration(monkeypatch):
    from bregclust import _dask as D

    X = _data()
    calls = []
    run = D.DaskSource.run

    def counting(self, fn, *args, **kwargs):
        calls.append(fn.__name__)
        return run(self, fn, *args, **kwargs)

    monkeypatch.setattr(D.DaskSource, "run", counting)
    kw = dict(init=X[[0, 100, 200, 300]].copy(), max_iter=3, tol=0.0)
    for name in ("sqeuclidean", "kl"):
        calls.clear()
        a, b = _fit_both(dict(kw, divergence=name), X, da.from_array(X, chunks=(100, 6)))
        _assert_same(a, b)
        # the first pass validates, counts and assigns: max_iter + 1 passes in all
        assert calls == ["_stats_and_lloyd"] + ["lloyd_block"] * 3
    Xn = X.copy()
    Xn[257, 2] = np.nan
    with pytest.raises(ValueError, match=r"chunk 2 \(global rows 200\.\.299\) contains NaN at "
                                         r"global row 257"):
        BregmanKMeans(4, **kw).fit(da.from_array(Xn, chunks=(100, 6)))
    with pytest.raises(ValueError, match="sample_weight sums to zero"):
        BregmanKMeans(4, **kw).fit(da.from_array(X, chunks=(100, 6)), sample_weight=np.zeros(400))


# ----------------------------------------------------------------------------- MBC on dask tasks
def _mbc_tasks(seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.5, 6.0, size=(3, 5))
    out = []
    for n in (240, 180):
        out.append(centres[rng.integers(0, 3, size=n)] * rng.gamma(20.0, 1 / 20.0, size=(n, 5)))
        centres = centres * rng.uniform(0.9, 1.1, size=centres.shape)
    return out


def _mbc_both(Xs, dXs, **kw):
    from bregclust import MultitaskBregmanClustering

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = MultitaskBregmanClustering(3, max_iter=8, tol=0.0, **kw).fit(Xs)
        b = MultitaskBregmanClustering(3, max_iter=8, tol=0.0, **kw).fit(dXs)
    return a, b


def _assert_same_mbc(a, b):
    assert b.n_iter_ == a.n_iter_
    for t in range(len(a.labels_)):
        assert isinstance(b.labels_[t], da.Array)
        np.testing.assert_array_equal(b.labels_[t].compute(), a.labels_[t])
        U = a.cluster_centers_[t]
        np.testing.assert_allclose(b.cluster_centers_[t], U, rtol=1e-10,
                                   atol=1e-10 * np.abs(U).max())
    np.testing.assert_allclose(b.objective_history_, a.objective_history_, rtol=1e-12)
    np.testing.assert_allclose(b.inertia_, a.inertia_, rtol=1e-10)
    for key in a.relations_:
        np.testing.assert_allclose(b.relations_[key], a.relations_[key], atol=1e-12)
    np.testing.assert_allclose(b.task_divergences_, a.task_divergences_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("lam", [0.5, 0.0])
@pytest.mark.parametrize("name", ["sqeuclidean", "kl"])
def test_mbc_dense_equals_in_memory(name, lam):
    Xs = _mbc_tasks()
    U0 = [X[[0, 1, 2]] * 1.05 for X in Xs]
    a, b = _mbc_both(Xs, [da.from_array(Xs[0], chunks=(70, 5)), da.from_array(Xs[1], chunks=(50, 5))],
                     divergence=name, lam=lam, init=U0)
    _assert_same_mbc(a, b)
    np.testing.assert_array_equal(b.predict(da.from_array(Xs[1], chunks=60), task=0).compute(),
                                  a.predict(Xs[1], task=0))
    np.testing.assert_allclose(b.transform(da.from_array(Xs[0], chunks=60), task=1).compute(),
                               a.transform(Xs[0], task=1), rtol=1e-12)


def test_mbc_sparse_and_l1_equal_in_memory():
    rng = np.random.default_rng(1)
    Xs = [sp.random(n, 30, density=0.2, random_state=s, format="csr",
                    data_rvs=lambda m: rng.uniform(0.5, 3.0, m)) for n, s in ((200, 2), (150, 3))]
    U0 = [X[[0, 1, 2]].toarray() + 0.05 for X in Xs]
    dXs = [da.from_array(X, chunks=(60, 30), asarray=False) for X in Xs]
    a, b = _mbc_both(Xs, dXs, divergence="kl", lam=0.5, init=U0)
    _assert_same_mbc(a, b)
    Xd = [X.toarray() - 1.0 for X in Xs]  # signs on both sides for the sign-mass statistics
    a, b = _mbc_both(Xd, [da.from_array(X, chunks=(45, 30)) for X in Xd],
                     divergence="l1_subgradient", lam=0.5, init=[X[[0, 1, 2]] for X in Xd])
    _assert_same_mbc(a, b)


def test_mbc_dask_init_and_errors():
    from bregclust import MultitaskBregmanClustering

    Xs = _mbc_tasks(seed=2)
    dXs = [da.from_array(X, chunks=(60, 5)) for X in Xs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m1 = MultitaskBregmanClustering(3, divergence="kl", random_state=0).fit(dXs)
        m2 = MultitaskBregmanClustering(3, divergence="kl", random_state=0,
                                        init="k-means||").fit(dXs)
        mem = MultitaskBregmanClustering(3, divergence="kl", random_state=0, n_init=5).fit(Xs)
    for t in range(2):
        np.testing.assert_array_equal(m1.cluster_centers_[t], m2.cluster_centers_[t])
    # three well separated groups per task: k-means|| reaches the k-means++ optimum
    assert m1.objective_ <= 1.02 * mem.objective_
    with pytest.raises(ValueError, match="marginals='empirical' needs in-memory tasks"):
        MultitaskBregmanClustering(3, marginals="empirical").fit(dXs)
    with pytest.raises(ValueError, match="init labels for task 0 need in-memory tasks"):
        MultitaskBregmanClustering(3, init=[np.zeros(240, dtype=int), "random"]).fit(dXs)
    Xn = Xs[1].copy()
    Xn[70, 3] = np.nan
    with pytest.raises(ValueError, match=r"chunk 1 \(global rows 60\.\.119\) contains NaN at "
                                         r"global row 70"):
        MultitaskBregmanClustering(3).fit([dXs[0], da.from_array(Xn, chunks=(60, 5))])


def test_custom_generator_on_fresh_process_workers(tmp_path, custom):
    """Workers that never ran register_divergence get the generator with the task; a record
    they cannot restore fails the fit with a clear error instead of hanging."""
    import sys

    from distributed import Client, LocalCluster

    X = _data(seed=12) / 3.0
    C0 = X[[0, 1, 2, 3]].copy()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        dX = da.from_array(X, chunks=(100, 6))
        a, b = _fit_both(dict(divergence=custom, init=C0, max_iter=10, tol=0.0), X, dX)
        _assert_same(a, b)
        Xs = _mbc_tasks(seed=3)
        a, b = _mbc_both(Xs, [da.from_array(X, chunks=(80, 5)) for X in Xs], divergence="kl",
                         lam=0.5, init=[X[[0, 1, 2]] * 1.05 for X in Xs])
        _assert_same_mbc(a, b)
        # a generator whose module imports a helper module that only the client can import
        (tmp_path / "bc_aux_mod.py").write_text("SCALE = 2.0\n")
        (tmp_path / "bc_gen_mod.py").write_text(
            "import math\n\nimport bc_aux_mod\n\n\ndef phi(x):\n    return math.exp(x)\n\n\n"
            "def dphi(x):\n    return math.exp(x) * bc_aux_mod.SCALE / 2.0\n")
        sys.path.insert(0, str(tmp_path))
        try:
            import bc_gen_mod

            register_divergence("dask_test_unreachable", phi=bc_gen_mod.phi, dphi=bc_gen_mod.dphi)
            with pytest.raises(RuntimeError, match="'dask_test_unreachable' could not be "
                                                   "restored on a dask worker"):
                BregmanKMeans(4, divergence="dask_test_unreachable", init=C0,
                              max_iter=3).fit(dX)
        finally:
            sys.path.remove(str(tmp_path))
            unregister_divergence("dask_test_unreachable")


@pytest.mark.parametrize("name", ["sqeuclidean", "kl"])
def test_mbc_lam_auto_equals_in_memory(name):
    # lam="auto" (the default) picks the same coupling on dask tasks: the same candidate runs
    # from the same starts, the same d_M ratios, the same chosen run
    Xs = _mbc_tasks(seed=3)
    U0 = [X[[0, 1, 2]] * 1.05 for X in Xs]
    a, b = _mbc_both(Xs, [da.from_array(Xs[0], chunks=(70, 5)), da.from_array(Xs[1], chunks=(50, 5))],
                     divergence=name, init=U0)
    assert a.lam_ == b.lam_
    assert a.lam_ratios_.keys() == b.lam_ratios_.keys()
    for v in a.lam_ratios_:
        assert b.lam_ratios_[v] == pytest.approx(a.lam_ratios_[v], rel=1e-9)
    assert a.lam_objectives_.keys() == b.lam_objectives_.keys()
    for v in a.lam_objectives_:
        assert b.lam_objectives_[v] == pytest.approx(a.lam_objectives_[v], rel=1e-9)
    _assert_same_mbc(a, b)


# ----------------------------------------------------------------------------- the chunk pass
def test_serial_pass_equals_threaded_pass():
    """Inside a dask task the kernels run serially: the same labels and minima bit for bit;
    the centre sums add the same rows in one block instead of one per thread (rounding)."""
    from bregclust import _execution as E
    from bregclust import get_divergence

    rng = np.random.default_rng(5)
    X = rng.normal(size=(6000, 50))  # above the size where the kernels go parallel
    U = X[:7] + 0.1
    w = rng.uniform(0.5, 2.0, size=X.shape[0])
    for name, Xi, Ui in [("sqeuclidean", X, U), ("kl", np.abs(X) + 0.1, np.abs(U) + 0.1)]:
        div = get_divergence(name)
        pc = E.prepare_centres(div, Ui)
        threaded = E.assign_and_sum(div, Xi, w, pc)
        with E.serial():
            assert E.n_workers() == 1 and not E.parallel(Xi.size)
            alone = E.assign_and_sum(div, Xi, w, pc)
        _same_pass(threaded, alone)
    Xs = sp.random(3000, 200, density=0.05, random_state=1, format="csr")
    div = get_divergence("sqeuclidean")
    pc = E.prepare_centres(div, Xs[:5].toarray() + 0.01)
    threaded = E.assign_and_sum(div, Xs, np.ones(3000), pc)
    with E.serial():
        alone = E.assign_and_sum(div, Xs, np.ones(3000), pc)
    _same_pass(threaded, alone)


def _same_pass(a, b):
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.mins, b.mins)
    np.testing.assert_allclose(a.S, b.S, rtol=1e-12, atol=1e-12 * np.abs(a.S).max())
    np.testing.assert_allclose(a.W, b.W, rtol=1e-12)


def test_squared_euclidean_row_sums_equal_the_generic_loop():
    """The written-out squared Euclidean loop adds the same terms in the same order."""
    from bregclust import _kernels as K
    from bregclust._kernels import generators as KG

    X = np.random.default_rng(2).normal(size=(300, 37)) * 1e3
    fast, generic = np.empty(300), np.empty(300)
    K.rowsum(KG.SQ, KG.placeholder(), X, fast)
    K.rowsum(KG.CUSTOM, KG.function_pointer(KG.sq_phi), X, generic)
    np.testing.assert_array_equal(fast, generic)


def test_phi_of_a_kept_chunk_is_reused_and_released():
    import gc

    from bregclust import _blocks as B
    from bregclust import _conditioning as C
    from bregclust import _dask as D
    from bregclust import _execution as E
    from bregclust import get_divergence

    div = get_divergence("sqeuclidean")
    X = _data(n=500)
    pc = E.prepare_centres(div, X[:4] + 0.1)

    def one_pass(X):
        block = D._block(X, None, (0, 0, X.shape[0]), div, C.IDENTITY)
        return B.lloyd_block(block, div, pc, keep=True)

    first = one_pass(X)
    assert id(X) in D._PHI_CACHE
    phi = D._PHI_CACHE[id(X)][2]
    again = one_pass(X)
    assert D._PHI_CACHE[id(X)][2] is phi  # reused, not recomputed
    for key in ("labels", "mins", "S", "W"):
        np.testing.assert_array_equal(getattr(first, key), getattr(again, key))
    key = id(X)
    del X
    gc.collect()
    assert key not in D._PHI_CACHE  # the entry lives as long as its chunk


def test_empty_chunks_and_complex_chunks():
    """A chunk with no rows is a block like any other (every divergence, fused or not); complex
    input is refused as in memory, not cast to its real part."""
    X = _data(n=120)
    dX = da.from_array(X, chunks=((50, 0, 70), (6,)))
    for name in ("sqeuclidean", "l1_subgradient"):
        C0 = X[[0, 40, 80, 110]]
        a, b = _fit_both(dict(divergence=name, init=C0, max_iter=5), X, dX)
        _assert_same(a, b)
    with pytest.raises(ValueError, match="complex"):
        BregmanKMeans(3).fit(da.from_array(X + 1j, chunks=(60, 6)))
    with pytest.raises(ValueError, match="complex"):
        BregmanKMeans(3).fit(X + 1j)


def test_float32_chunked_inertia_is_the_definition_in_float64():
    """float32 chunks: the reported objective of a chunked fit is the definition summed in
    float64, not the float32 GEMM minima (2.2e-5 relative on three tight blobs)."""
    from sklearn.datasets import make_blobs
    for seed, std in ((0, 0.1), (1, 0.1), (1, 0.3)):
        X = make_blobs(60, 2, centers=3, random_state=seed, cluster_std=std)[0]
        X = X.astype(np.float32)
        C0 = BregmanKMeans(3, random_state=0).fit(X).cluster_centers_
        for chunks in ((7, 13, 40), (0, 60), (60, 0)):
            a, b = _fit_both(dict(init=C0, max_iter=25), X, da.from_array(X, chunks=(chunks, 2)),
                             k=3)
            np.testing.assert_array_equal(b.labels_.compute(), a.labels_)
            np.testing.assert_allclose(b.inertia_, a.inertia_, rtol=1e-12)


def test_empty_first_chunk_and_zero_features_in_every_dask_estimator():
    """An empty first chunk (its bincounts are int64) and a dask array with no column, in
    every estimator that takes dask arrays."""
    from bregclust import BregmanMixture, MultitaskBregmanClustering
    X = _data(n=120)
    C0 = X[[0, 40, 80, 110]]
    for chunks in ((0, 50, 70), (50, 0, 70), (0, 0, 120)):
        dX = da.from_array(X, chunks=(chunks, (6,)))
        a, b = _fit_both(dict(init=C0, max_iter=5), X, dX)
        _assert_same(a, b)
        mem = MultitaskBregmanClustering(4, init=[C0, C0], max_iter=5, random_state=0)
        got = MultitaskBregmanClustering(4, init=[C0, C0], max_iter=5, random_state=0)
        mem.fit([X, X[::-1].copy()])
        got.fit([dX, da.from_array(X[::-1].copy(), chunks=(chunks, (6,)))])
        for u, v in zip(mem.labels_, got.labels_):
            np.testing.assert_array_equal(np.asarray(v), u)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gm = BregmanMixture(4, init=C0, max_iter=5).fit(X)
            gd = BregmanMixture(4, init=C0, max_iter=5).fit(dX)
        np.testing.assert_allclose(gd.means_, gm.means_, rtol=1e-8)
        np.testing.assert_allclose(gd.lower_bound_, gm.lower_bound_, rtol=1e-10)
    Z = da.zeros((10, 0), chunks=5)
    for est in (BregmanKMeans(2), BregmanMixture(2), MultitaskBregmanClustering(2)):
        with pytest.raises(ValueError, match="(X|task 0) has 0 features"):
            est.fit([Z, Z] if isinstance(est, MultitaskBregmanClustering) else Z)
