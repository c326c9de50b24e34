"""MiniBatchBregmanKMeans and BisectingBregmanKMeans: scikit-learn oracles, the slow reference
for every divergence, dask and streams, the centroid invariant, contract, bad input."""

import math
import pickle

import naive
import naive_minibatch as NM
import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.cluster import BisectingKMeans, MiniBatchKMeans
from sklearn.datasets import load_digits

from bregclust import (
    BisectingBregmanKMeans,
    BregmanKMeans,
    DomainError,
    MiniBatchBregmanKMeans,
    get_divergence,
    register_divergence,
    unregister_divergence,
)

da = pytest.importorskip("dask.array")

CUSTOM = "test_minibatch_exp"
SPD = np.array([[2.0, 0.4, 0.0], [0.4, 1.0, 0.1], [0.0, 0.1, 0.5]])
# fit() draws its mini-batches as scikit-learn >= 1.9 does (rows drawn with probabilities
# proportional to sample_weight by RandomState.choice, unit weights in the step); older
# scikit-learn drew them by randint and weighted the step, so its trajectory is another one
SKLEARN_DRAWS = pytest.mark.skipif(
    tuple(int(v) for v in sklearn.__version__.split(".")[:2]) < (1, 9),
    reason="the oracle is scikit-learn >= 1.9's mini-batch draws (by sample weight)")
DIVERGENCES = ["sqeuclidean", "mahalanobis", "kl", "itakura_saito", "l1_subgradient", CUSTOM]


@pytest.fixture(scope="module", autouse=True)
def custom_generator():
    """A test generator phi(x) = exp(x), registered for this module's tests, removed after."""
    register_divergence(CUSTOM, phi=lambda x: math.exp(x), dphi=lambda x: math.exp(x),
                        overwrite=True)
    yield
    unregister_divergence(CUSTOM)


def blobs(name, n=240, seed=0):
    """Three blobs inside the divergence's domain (positive for kl and Itakura-Saito, of both
    signs for l1_subgradient), 3 features."""
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 3, n)
    if name in ("kl", "itakura_saito"):
        scale = np.array([[1.0, 5.0, 0.2], [6.0, 0.5, 2.0], [0.3, 0.3, 8.0]])
        return rng.gamma(6.0, scale[lab] / 6.0)
    means = np.array([[2.0, -2.0, 1.0], [-2.0, 2.0, 0.0], [1.0, 1.0, -3.0]])
    X = means[lab] + 0.6 * rng.normal(size=(n, 3))
    return X / 3.0 if name == CUSTOM else X


def params(name):
    return {"A": SPD} if name == "mahalanobis" else None


def A_of(name):
    return SPD if name == "mahalanobis" else None


def dist(name):
    """The divergence of two points by its definition (tests/naive.py)."""
    if name == CUSTOM:
        return lambda x, u: naive.separable_divergence(math.exp, math.exp, x, u)
    return lambda x, u: naive.divergence(name, x, u, A_of(name))


def digits():
    return load_digits().data


# ----------------------------------------------------------------------------- oracle: sklearn
@SKLEARN_DRAWS
@pytest.mark.parametrize("init", ["array", "k-means++", "random"])
@pytest.mark.parametrize("weighted", [False, True])
def test_sqeuclidean_equals_sklearn_minibatch(init, weighted):
    """Same seed, same batches (scikit-learn's own draws), same centres to 1e-10."""
    X = digits()
    w = np.random.default_rng(1).uniform(0.2, 2.0, len(X)) if weighted else None
    kw = dict(batch_size=100, max_iter=4, random_state=0, max_no_improvement=None)
    C0 = X[:10].copy() if init == "array" else init
    sk = MiniBatchKMeans(10, init=C0, **kw).fit(X, sample_weight=w)
    ours = MiniBatchBregmanKMeans(10, init=C0, **kw).fit(X, sample_weight=w)
    assert ours.n_steps_ == sk.n_steps_ and ours.n_iter_ == sk.n_iter_
    np.testing.assert_allclose(ours.cluster_centers_, sk.cluster_centers_, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(ours.labels_, sk.labels_)
    assert ours.inertia_ == pytest.approx(sk.inertia_, rel=1e-12)


@SKLEARN_DRAWS
def test_reassignment_equals_sklearn():
    """All centres seeded on one row: most are re-seeded from batches, as in scikit-learn."""
    X = digits()
    C0 = np.repeat(X[:1], 10, axis=0) + np.arange(10)[:, None] * 1e-3
    kw = dict(init=C0, batch_size=64, max_iter=2, random_state=3, reassignment_ratio=0.3,
              max_no_improvement=None)
    sk = MiniBatchKMeans(10, **kw).fit(X)
    ours = MiniBatchBregmanKMeans(10, **kw).fit(X)
    assert ours._run.reassigned > 10
    np.testing.assert_allclose(ours.cluster_centers_, sk.cluster_centers_, rtol=0, atol=1e-10)


@SKLEARN_DRAWS
@pytest.mark.parametrize("rule", ["tol", "max_no_improvement"])
def test_stopping_rules_equal_sklearn(rule):
    X = digits()
    kw = (dict(tol=1e-3, max_no_improvement=None) if rule == "tol"
          else dict(max_no_improvement=3))
    sk = MiniBatchKMeans(10, batch_size=100, max_iter=50, random_state=0, **kw).fit(X)
    ours = MiniBatchBregmanKMeans(10, batch_size=100, max_iter=50, random_state=0, **kw).fit(X)
    assert ours.n_steps_ == sk.n_steps_ < 50 * len(X) // 100
    np.testing.assert_allclose(ours.cluster_centers_, sk.cluster_centers_, rtol=0, atol=1e-10)


@SKLEARN_DRAWS
def test_sparse_equals_sklearn_and_dense():
    X = sp.random(300, 40, density=0.2, random_state=0, format="csr") * 5.0
    kw = dict(batch_size=50, max_iter=3, random_state=0, max_no_improvement=None)
    sk = MiniBatchKMeans(6, **kw).fit(X)
    ours = MiniBatchBregmanKMeans(6, **kw).fit(X)
    dense = MiniBatchBregmanKMeans(6, **kw).fit(X.toarray())
    np.testing.assert_allclose(ours.cluster_centers_, sk.cluster_centers_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.cluster_centers_, dense.cluster_centers_, rtol=0, atol=1e-12)


def test_partial_fit_equals_sklearn_partial_fit():
    X = digits()
    sk = MiniBatchKMeans(10, random_state=0, batch_size=100)
    ours = MiniBatchBregmanKMeans(10, random_state=0, batch_size=100)
    for chunk in np.array_split(X, 12):
        sk.partial_fit(chunk)
        ours.partial_fit(chunk)
        np.testing.assert_allclose(ours.cluster_centers_, sk.cluster_centers_, rtol=0,
                                   atol=1e-10)
        np.testing.assert_array_equal(ours.labels_, sk.labels_)
        assert ours.inertia_ == pytest.approx(sk.inertia_, rel=1e-12)
    assert ours.n_steps_ == sk.n_steps_ == 12


@pytest.mark.parametrize("kind", ["equal", "random", "zero tail", "spiky"])
def test_row_draws_are_numpy_choice(kind):
    """The batch sampler draws the rows RandomState.choice(n, b, p=p) draws."""
    from bregclust._kernels import minibatch as KM

    rng = np.random.default_rng(0)
    n = 5000
    p = {"equal": np.ones(n), "random": rng.random(n), "zero tail": np.r_[np.ones(n - 700),
                                                                           np.zeros(700)],
         "spiky": np.where(rng.random(n) < 0.01, 1000.0, 0.001)}[kind]
    p = p / p.sum()
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    out = np.empty(2000, dtype=np.int64)
    KM.draw_rows(cdf, np.random.RandomState(3).random_sample(2000), out)
    np.testing.assert_array_equal(out, np.random.RandomState(3).choice(n, 2000, p=p))


# ----------------------------------------------------------------------------- the slow reference
@pytest.mark.parametrize("name", DIVERGENCES)
def test_every_divergence_equals_the_slow_reference(name):
    X = blobs(name)
    # a centre far from every row receives none: it is re-seeded from a batch
    far = {"kl": X[2] * 1000.0, "itakura_saito": X[2] * 1000.0,
           "l1_subgradient": np.zeros(3)}.get(name, X[2] + 20.0)
    C0 = np.vstack([X[0], X[1], far])
    ours = MiniBatchBregmanKMeans(3, divergence=name, divergence_params=params(name), init=C0,
                                  smoothing=0.0, batch_size=32, max_iter=2, random_state=0,
                                  max_no_improvement=None, reassignment_ratio=0.5).fit(X)
    ref = NM.fit_sampled(dist(name), X, C0, batch_size=32, n_steps=ours.n_steps_,
                         random_state=0, init_size=96, reassignment_ratio=0.5)
    assert ours._run.reassigned > 0
    np.testing.assert_allclose(ours.cluster_centers_, ref.U, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.batch_objectives_, ref.objectives, rtol=1e-9)


@pytest.mark.parametrize("name", ["kl", "itakura_saito", "sqeuclidean"])
def test_smoothing_pseudo_point_equals_the_slow_reference(name):
    """With smoothing, every batch adds ``smoothing * W_B / W`` at z to every centre."""
    X = blobs(name)
    C0 = X[[0, 1, 2]].copy()
    ours = MiniBatchBregmanKMeans(3, divergence=name, init=C0, smoothing=5.0, batch_size=32,
                                  max_iter=2, random_state=0, max_no_improvement=None,
                                  reassignment_ratio=0.2).fit(X)
    z = X.mean(axis=0)  # the blobs lie inside the domain: the mean needs no lift
    assert get_divergence(name).right_domain != "positive" or (z > 0).all()
    ref = NM.fit_sampled(dist(name), X, C0, batch_size=32, n_steps=ours.n_steps_,
                         random_state=0, init_size=96, rho=5.0 / len(X), z=z, beta_seed=5.0,
                         reassignment_ratio=0.2)
    np.testing.assert_allclose(ours.cluster_centers_, ref.U, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.batch_objectives_, ref.objectives, rtol=1e-9)


def test_each_centre_is_the_mean_of_every_row_it_received():
    """The invariant behind the update (the Bregman centroid of everything a centre has
    received, the pseudo-point included, is their mean): accumulated from predict before
    each partial_fit, and the sum of divergences to the centre is minimal there."""
    X = blobs("kl", n=400)
    div = get_divergence("kl")
    C0 = X[[0, 1, 2]].copy()
    mbk = MiniBatchBregmanKMeans(3, divergence="kl", init=C0, reassignment_ratio=0.0,
                                 smoothing=0.0, random_state=0)
    S = np.zeros((3, 3))
    W = np.zeros(3)
    received = [[] for _ in range(3)]
    for batch in np.array_split(X, 10):
        if hasattr(mbk, "cluster_centers_"):
            lab = mbk.predict(batch)
        else:
            lab = div.assign(batch, C0)[0]
        mbk.partial_fit(batch)
        for j in range(3):
            S[j] += batch[lab == j].sum(axis=0)
            W[j] += (lab == j).sum()
            received[j].append(batch[lab == j])
    np.testing.assert_allclose(mbk.cluster_centers_, S / W[:, None], rtol=1e-12)
    rng = np.random.default_rng(0)
    for j in range(3):
        R = np.vstack(received[j])
        u = mbk.cluster_centers_[j]
        best = div.pairwise(R, u[None, :]).sum()
        for _ in range(5):
            moved = u * np.exp(0.01 * rng.normal(size=3))
            assert div.pairwise(R, moved[None, :]).sum() > best


# ----------------------------------------------------------------------------- closed-form parts
CLOSED_FORM = ["sqeuclidean", "kl", "itakura_saito"]


@pytest.mark.parametrize("name", CLOSED_FORM)
def test_builtin_centre_parts_equal_the_scalar_generator(name):
    """The GEMM parts of centres (one path: the record's form, whole arrays for these three
    built-ins) are the scalar generator functions' ``dphi(u)`` and ``sum u dphi(u) - phi(u)``,
    and a centre on the domain boundary (a zero coordinate) gets parts that are not finite."""
    div = get_divergence(name)
    assert div.has_closed_form_parts
    g = div.generator
    rng = np.random.default_rng(0)
    U = rng.gamma(2.0, 1.0, size=(4, 37))
    if name == "sqeuclidean":
        U -= 2.0
    G, c = div.gemm_parts(U)
    G_ref = np.array([[g.dphi(float(v)) for v in row] for row in U])
    c_ref = np.array([sum(float(v) * g.dphi(float(v)) - g.phi(float(v)) for v in row)
                      for row in U])
    np.testing.assert_allclose(G, G_ref, rtol=1e-13)
    np.testing.assert_allclose(c, c_ref, rtol=1e-12, atol=1e-12)
    if name != "sqeuclidean":
        U[2, 5] = 0.0
        G, c = div.gemm_parts(U)
        assert not (np.isfinite(G[2]).all() and np.isfinite(c[2]))
        assert np.isfinite(G[[0, 1, 3]]).all() and np.isfinite(c[[0, 1, 3]]).all()
    assert not get_divergence(CUSTOM).has_closed_form_parts


@pytest.mark.parametrize("name", ["kl", "itakura_saito"])
def test_closed_form_phi_equals_the_scalar_generator(name):
    """The record's vectorised ``phi_rule`` gives the scalar generator's values, at the
    domain's edge too (kl: 0 at 0; Itakura-Saito: +inf at 0; NaN below the domain)."""
    div = get_divergence(name)
    assert div.has_closed_form_phi
    g = div.generator
    x = np.array([0.0, 1e-300, 1e-12, 0.3, 1.0, 2.5, 1e6, 1e150, -0.5])
    ref = np.array([g.phi(float(v)) for v in x])
    got = div.phi_rule(x)
    assert got.dtype == np.float64 and got.shape == x.shape
    np.testing.assert_allclose(got, ref, rtol=1e-14, atol=0)  # inf == inf, NaN == NaN
    got32 = div.phi_rule(x[2:7].astype(np.float32))
    assert got32.dtype == np.float64
    np.testing.assert_allclose(got32, [g.phi(float(v)) for v in x[2:7].astype(np.float32)],
                               rtol=1e-14)
    for other in (CUSTOM, "sqeuclidean"):  # sqeuclidean's kernels evaluate x^2 inline
        assert not get_divergence(other).has_closed_form_phi
    assert not get_divergence("mahalanobis", A=SPD).has_closed_form_phi


def test_closed_form_kl_phi_is_scipy_xlogy():
    """kl's closed form is ``xlogy(x, x) - x`` (scipy) on non-negative values."""
    from scipy.special import xlogy

    x = np.random.default_rng(1).gamma(0.5, 1.0, size=500)
    x[::7] = 0.0
    np.testing.assert_allclose(get_divergence("kl").phi_rule(x), xlogy(x, x) - x,
                               rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("name", CLOSED_FORM + ["mahalanobis", CUSTOM])
def test_phi_rows_closed_form_equals_the_scalar_kernels(name):
    """``phi_rows(closed_form=True)`` gives the scalar kernels' row sums of phi on dense,
    float32 and CSR rows (empty rows and explicit zeros included); divergences without a
    closed form take the scalar kernels unchanged."""
    from bregclust import _execution as E

    div = get_divergence(name, **({"A": SPD} if name == "mahalanobis" else {}))
    rng = np.random.default_rng(2)
    d = 3 if name == "mahalanobis" else 40
    X = rng.gamma(2.0, 1.0, size=(60, d))
    if name in ("sqeuclidean", "mahalanobis"):
        X -= 2.0
    for data in (X, X.astype(np.float32)):
        np.testing.assert_allclose(E.phi_rows(div, data, closed_form=True),
                                   E.phi_rows(div, data), rtol=1e-13)
    S = sp.random(60, d, density=0.3, random_state=3, format="csr")
    S.data = rng.gamma(2.0, 1.0, size=S.nnz)
    S = S.tolil()
    S[5, :] = 0.0  # an empty row
    S = S.tocsr()
    S.data[:3] = 0.0  # explicit zeros
    if name == "itakura_saito":  # positive domain: dense rows stored as CSR
        S = sp.csr_matrix(X)
    np.testing.assert_allclose(E.phi_rows(div, S, closed_form=True), E.phi_rows(div, S),
                               rtol=1e-13, atol=1e-300)
    Xg, phi = E.prepare(div, S, closed_form=True)
    assert Xg is S or name in ("mahalanobis",)
    np.testing.assert_allclose(phi, E.phi_rows(div, S), rtol=1e-13, atol=1e-300)


def test_segment_sums_add_each_row_left_to_right():
    """The CSR row-sum kernel: each row's stored values added in order; empty rows give 0."""
    from bregclust._kernels import lloyd as KL

    vals = np.array([1.0, 1e16, -1e16, 2.0, 3.0])
    indptr = np.array([0, 3, 3, 5, 5])
    out = np.full(4, np.nan)
    KL.segment_sums(vals, indptr, out)
    assert out.tolist() == [(1.0 + 1e16) - 1e16, 0.0, 5.0, 0.0]


@pytest.mark.parametrize("threads", [1, 2])
def test_labels_only_csr_pass_equals_the_fused_lloyd_kernel(threads):
    """The CSR labels pass (no per-cluster sums) gives the fused Lloyd kernel's labels and
    minima bit for bit, serial and split over threads."""
    from bregclust._kernels import lloyd as KL

    rng = np.random.default_rng(4)
    X = sp.random(500, 60, density=0.1, random_state=4, format="csr")
    X.data = rng.gamma(2.0, 1.0, size=X.nnz)
    U = rng.gamma(2.0, 1.0, size=(7, 60))
    GT = np.ascontiguousarray(np.log(U).T)
    c = U.sum(axis=1)
    phi = get_divergence("kl").phi_rows(X)
    labels, mins = np.empty(500, dtype=np.int64), np.empty(500)
    KL.lloyd_step_csr_serial(X.data, X.indices, X.indptr, phi, GT, c, np.ones(500), labels,
                             mins, np.zeros((1, 7, 60)), np.zeros((1, 7)), np.zeros(1))
    lab2, min2 = np.empty(500, dtype=np.int64), np.empty(500)
    if threads == 1:
        KL.nearest_csr_serial(X.data, X.indices, X.indptr, phi, GT, c, lab2, min2)
    else:
        KL.nearest_csr(X.data, X.indices, X.indptr, phi, GT, c, threads, lab2, min2)
    assert np.array_equal(labels, lab2)
    assert np.array_equal(mins, min2)


@pytest.mark.parametrize("sparse", [False, True])
def test_labels_pass_without_sums_equals_the_lloyd_pass(sparse):
    """A block's Lloyd pass with ``sums=False`` (the final labels pass of a fit) gives the
    labels and minima of the full pass bit for bit, its objective to rounding (the full pass
    adds ``w_i mins_i`` inside its kernel, block by block; the labels pass takes one dot
    product), and no sums; a centre on the domain boundary (not finite GEMM parts) takes the
    definition in both."""
    from bregclust import _blocks as B
    from bregclust import _execution as E

    div = get_divergence("kl")
    rng = np.random.default_rng(5)
    X = rng.gamma(2.0, 1.0, size=(300, 20))
    X[X < 1.0] = 0.0
    X = sp.csr_matrix(X) if sparse else X
    U = rng.gamma(2.0, 1.0, size=(4, 20))
    for centres in (U, np.where(np.arange(20) == 3, 0.0, U)):
        pc = E.prepare_centres(div, centres)
        full = B.lloyd_block(B.Block(X), div, pc, keep=True)
        part = B.lloyd_block(B.Block(X), div, pc, keep=True, sums=False)
        assert part.S is None and part.W is None
        assert np.array_equal(part.labels, full.labels)
        assert np.array_equal(part.mins, full.mins)
        assert part.objective == pytest.approx(full.objective, rel=1e-13)
        ref = div.pairwise(X, centres)
        assert np.array_equal(part.labels, ref.argmin(axis=1))


def _sparse_counts(n=300, d=80, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.08, random_state=seed, format="csr",
                  data_rvs=lambda m: rng.integers(1, 6, m).astype(float))
    return X[np.asarray(X.sum(axis=1)).ravel() > 0]


@pytest.mark.parametrize("name, fmt, smoothing", [
    ("kl", "sparse", "auto"), ("kl", "dense", 0.0), ("itakura_saito", "dense", "auto"),
    ("sqeuclidean", "dense", 0.0)])
def test_closed_form_count_update_equals_a_full_re_prepare_at_every_step(
        name, fmt, smoothing, monkeypatch):
    """The count update with the closed-form parts keeps, after every step, the GEMM parts
    that preparing the centres from scratch gives, bit for bit (one path); the fit is the fused kernel's to
    rounding (centres, labels, batch objectives, inertia). Without smoothing only the
    centres that received rows move (and re-seeded centres are re-prepared)."""
    from bregclust import _execution as E
    from bregclust import minibatch as MB

    div = get_divergence(name)
    X = _sparse_counts() if fmt == "sparse" else np.abs(blobs("kl", n=300)) + 0.05
    # a centre far from every row receives none: it is re-seeded from a batch
    C0 = (X[:4].toarray() + 0.1) if fmt == "sparse" else X[:4].copy()
    C0[3] = C0[3] + 20.0 if name == "sqeuclidean" else C0[3] * 1000.0
    kw = dict(divergence=name, init=C0, batch_size=48, max_iter=3, random_state=0,
              smoothing=smoothing, max_no_improvement=None, reassignment_ratio=0.5)
    monkeypatch.setattr(MB, "VECTOR_PARTS", 1 << 62)
    fused = MiniBatchBregmanKMeans(4, **kw).fit(X)
    assert not fused._run.vector_parts(div)
    monkeypatch.setattr(MB, "VECTOR_PARTS", 0)
    closed = MiniBatchBregmanKMeans(4, **kw).fit(X)
    assert closed._run.vector_parts(div) and closed._run.reassigned > 0
    np.testing.assert_allclose(closed.cluster_centers_, fused.cluster_centers_, rtol=1e-10)
    np.testing.assert_array_equal(closed.labels_, fused.labels_)
    np.testing.assert_allclose(closed.batch_objectives_, fused.batch_objectives_, rtol=1e-10)
    assert closed.inertia_ == pytest.approx(fused.inertia_, rel=1e-10)

    # step by step: the kept parts against a full re-prepare of the current centres
    est = MiniBatchBregmanKMeans(4, **dict(kw, max_iter=1)).fit(X)
    run = est._run
    Xc = sp.csr_matrix(X) if fmt == "sparse" else X
    rng = np.random.RandomState(1)
    for _ in range(8):
        idx = rng.randint(0, Xc.shape[0], 48)
        Xb = Xc[idx]
        MB.step(run, div, Xb, div.prepare(Xb), np.ones(48), rng)
        GT, c, zg, fin = run.parts(div)
        assert fin.all()
        ref = E.prepare_centres(div, run.U.copy())  # the same path: the same numbers
        np.testing.assert_array_equal(GT, ref.GT)
        np.testing.assert_array_equal(c, ref.c)
        np.testing.assert_allclose(zg, ref.GT.T @ run._zvec(), rtol=1e-10,
                                   atol=1e-12 * np.abs(ref.GT).max())


def test_closed_form_count_update_equals_the_slow_reference(monkeypatch):
    """kl with smoothing through the closed-form parts against the slow reference."""
    from bregclust import minibatch as MB

    monkeypatch.setattr(MB, "VECTOR_PARTS", 0)
    X = blobs("kl")
    C0 = X[[0, 1, 2]].copy()
    ours = MiniBatchBregmanKMeans(3, divergence="kl", init=C0, smoothing=5.0, batch_size=32,
                                  max_iter=2, random_state=0, max_no_improvement=None,
                                  reassignment_ratio=0.2).fit(X)
    assert ours._run.vector_parts(get_divergence("kl"))
    z = X.mean(axis=0)  # positive blobs: the mean needs no lift into the domain
    assert (z > 0).all()
    ref = NM.fit_sampled(dist("kl"), X, C0, batch_size=32, n_steps=ours.n_steps_,
                         random_state=0, init_size=96, rho=5.0 / len(X), z=z, beta_seed=5.0,
                         reassignment_ratio=0.2)
    np.testing.assert_allclose(ours.cluster_centers_, ref.U, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.batch_objectives_, ref.objectives, rtol=1e-9)


# ----------------------------------------------------------------------------- dask and streams
@pytest.mark.parametrize("name", ["sqeuclidean", "kl", "l1_subgradient", "mahalanobis"])
def test_dask_equals_the_slow_reference_of_its_chunk_plan(name):
    """The dask fold (state passed from chunk task to chunk task) equals the same batches
    stepped in memory by the slow reference: chunk order, batches, reassignment draws."""
    X = blobs(name, n=300)
    chunks = (70, 100, 57, 73)
    dX = da.from_array(X, chunks=(chunks, -1))
    w = np.random.default_rng(2).uniform(0.5, 2.0, len(X))
    C0 = X[[0, 1, 2]].copy()
    kw = dict(divergence=name, divergence_params=params(name), init=C0, batch_size=32,
              max_iter=2, random_state=5, max_no_improvement=None, reassignment_ratio=0.2)
    smoothing = 4.0 if name == "kl" else 0.0
    est = MiniBatchBregmanKMeans(3, smoothing=smoothing, **kw).fit(dX, sample_weight=w)
    z = np.average(X, axis=0, weights=w)  # inside every domain here: no lift
    assert get_divergence(name, **(params(name) or {})).right_domain != "positive" or (
        z > 0).all()
    ref = NM.fit_chunks(dist(name), X, C0, chunks, batch_size=32, epochs=2, random_state=5,
                        init_size=96, w=w, rho=smoothing / w.sum(), z=z,
                        beta_seed=smoothing, reassignment_ratio=0.2)
    np.testing.assert_allclose(est.cluster_centers_, ref.U, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.batch_objectives_, ref.objectives, rtol=1e-9)
    assert est.n_steps_ == len(ref.objectives) == 2 * sum(-(-c // 32) for c in chunks)
    assert isinstance(est.labels_, da.Array)
    np.testing.assert_array_equal(est.labels_.compute(), est.predict(X))
    assert est.inertia_ == pytest.approx(-est.score(X, sample_weight=w), rel=1e-9)
    lazy, labels = est.labels_, est.labels_.compute()
    est.partial_fit(X[:50], sample_weight=w[:50])  # the lazy labels keep the fitted centres
    np.testing.assert_array_equal(lazy.compute(), labels)


def _visit(block, div, state, tag):
    """A fold function: record the block visited and its first row."""
    return state + [(tag, block.start, float(block.X[0, 0]))]


@pytest.mark.parametrize("scheduler", ["local", "distributed"])
def test_fold_threads_its_state_through_the_blocks_in_order(scheduler):
    from distributed import Client, LocalCluster

    from bregclust._sources import as_source

    X = np.arange(40.0).reshape(20, 2)
    div = get_divergence("sqeuclidean")
    order = [3, 0, 2, 1]
    expected = [(10 * i, 5 * i, float(X[5 * i, 0])) for i in order]
    src = as_source(da.from_array(X, chunks=(5, -1)), None, div)
    if scheduler == "local":
        seen = []
        got = src.fold(_visit, div, [], order, extra=lambda i: (10 * i,),
                       callback=lambda st: seen.append(len(st)) or len(st) == 3)
        assert got == expected[:3] and seen == [1, 2, 3]
        assert src.fold(_visit, div, [], order, extra=lambda i: (10 * i,)) == expected
        return
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster):
        seen = []
        got = src.fold(_visit, div, [], order, extra=lambda i: (10 * i,),
                       callback=lambda st: seen.append(len(st)) or len(st) == 2)
        assert got == expected[:2] and seen == [1, 2]
        assert src.fold(_visit, div, [], order, extra=lambda i: (10 * i,)) == expected


def test_dask_sparse_chunks_equal_dense_chunks():
    X = blobs("kl", n=200)
    X[X < 0.5] = 0.0
    kw = dict(divergence="kl", batch_size=30, max_iter=2, random_state=0)
    a = MiniBatchBregmanKMeans(3, **kw).fit(da.from_array(X, chunks=(60, -1)))
    b = MiniBatchBregmanKMeans(3, **kw).fit(
        da.from_array(sp.csr_matrix(X), chunks=(60, -1), asarray=False))
    np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_, rtol=1e-10)
    assert a.n_steps_ == b.n_steps_


def test_partial_fit_over_chunks_equals_the_fit_that_steps_those_chunks():
    """Chunks no larger than batch_size are single batches of a dask epoch: partial_fit over
    them, in the epoch's order, gives the same centres."""
    X = blobs("itakura_saito", n=200)
    chunks = (50, 40, 60, 50)
    C0 = X[[0, 1, 2]].copy()
    kw = dict(divergence="itakura_saito", init=C0, batch_size=64, reassignment_ratio=0.0,
              smoothing=0.0)
    fit = MiniBatchBregmanKMeans(3, max_iter=1, random_state=0, max_no_improvement=None,
                                 **kw).fit(da.from_array(X, chunks=(chunks, -1)))
    rng = np.random.RandomState(0)  # the fit's draws: validation sample, then the order
    rng.randint(0, len(X), 192)
    order = rng.permutation(len(chunks))
    starts = np.concatenate([[0], np.cumsum(chunks)])
    stream = MiniBatchBregmanKMeans(3, **kw)
    for i in order:
        stream.partial_fit(X[starts[i]:starts[i + 1]])
    np.testing.assert_allclose(stream.cluster_centers_, fit.cluster_centers_, rtol=1e-12)
    assert stream.n_steps_ == fit.n_steps_ == 4


def test_dask_distributed_equals_local_scheduler():
    from distributed import Client, LocalCluster

    X = blobs("sqeuclidean", n=300)
    dX = da.from_array(X, chunks=(60, -1))
    kw = dict(batch_size=25, max_iter=3, random_state=1)
    local = MiniBatchBregmanKMeans(3, **kw).fit(dX)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster):
        dist = MiniBatchBregmanKMeans(3, **kw).fit(dX)
        persisted = MiniBatchBregmanKMeans(3, **kw).fit(dX.persist())
    np.testing.assert_array_equal(dist.cluster_centers_, local.cluster_centers_)
    np.testing.assert_array_equal(persisted.cluster_centers_, local.cluster_centers_)
    assert dist.n_steps_ == local.n_steps_


def test_partial_fit_resumes_after_pickling_and_after_fit():
    X = blobs("kl", n=300)
    batches = np.array_split(X, 6)
    a = MiniBatchBregmanKMeans(3, divergence="kl", random_state=0)
    for b in batches:
        a.partial_fit(b)
    c = MiniBatchBregmanKMeans(3, divergence="kl", random_state=0)
    for b in batches[:3]:
        c.partial_fit(b)
    c = pickle.loads(pickle.dumps(c))
    for b in batches[3:]:
        c.partial_fit(b)
    np.testing.assert_array_equal(c.cluster_centers_, a.cluster_centers_)
    fitted = MiniBatchBregmanKMeans(3, divergence="kl", random_state=0, max_iter=2).fit(X)
    steps, centres = fitted.n_steps_, fitted.cluster_centers_
    kept = centres.copy()
    fitted.partial_fit(batches[0])
    assert fitted.n_steps_ == steps + 1
    assert not np.array_equal(fitted.cluster_centers_, kept)
    np.testing.assert_array_equal(centres, kept)  # the fitted array is not updated in place


def test_stream_conditioning_is_fixed_by_the_first_batch():
    """A stream at 2^-600 is clustered as the stream at scale 1 (the first batch decides the
    power of two); a later batch beyond what that scale represents is refused."""
    X = blobs("kl", n=300)
    batches = np.array_split(X, 5)
    ref = MiniBatchBregmanKMeans(3, divergence="kl", random_state=0)
    tiny = MiniBatchBregmanKMeans(3, divergence="kl", random_state=0)
    for b in batches:
        ref.partial_fit(b)
        tiny.partial_fit(np.ldexp(b, -600))
    np.testing.assert_allclose(np.ldexp(tiny.cluster_centers_, 600), ref.cluster_centers_,
                               rtol=1e-12)
    assert tiny.inertia_ == pytest.approx(np.ldexp(ref.inertia_, -600), rel=1e-10)
    with pytest.raises(ValueError, match="partial_fit batch 5: its largest .x. is .*beyond "
                                         "what the conditioning fixed by the first batch"):
        tiny.partial_fit(batches[0])
    with pytest.raises(ValueError, match="largest sample weight is .* beyond"):
        ref.partial_fit(batches[0], sample_weight=np.full(len(batches[0]), 2.0**300))
    with pytest.raises(ValueError, match="has 2 features, but MiniBatchBregmanKMeans is "
                                         "expecting 3"):
        ref.partial_fit(batches[0][:, :2])


@pytest.mark.parametrize("name", ["sqeuclidean", "kl", "itakura_saito", "mahalanobis"])
@pytest.mark.parametrize("fmt", ["dense", "dask"])
def test_fit_of_scaled_data_is_the_rescaled_fit(name, fmt):
    X = blobs(name) / 16.0
    C0 = X[[0, 1, 2]].copy()
    p = get_divergence(name, **(params(name) or {})).homogeneity
    fits = []
    for s in (0, -1000, 1000):
        Xs = np.ldexp(X, s)
        Xs = da.from_array(Xs, chunks=(70, -1)) if fmt == "dask" else Xs
        fits.append(MiniBatchBregmanKMeans(
            3, divergence=name, divergence_params=params(name), init=np.ldexp(C0, s),
            batch_size=40, max_iter=2, random_state=0).fit(Xs))
    for f, s in zip(fits[1:], (-1000, 1000)):
        np.testing.assert_allclose(np.ldexp(f.cluster_centers_, -s), fits[0].cluster_centers_,
                                   rtol=1e-10)
        scale = 0 if name == "itakura_saito" else p * s
        with np.errstate(over="ignore"):  # 2^2000 times the inertia is inf, as inertia_ is
            expected = np.ldexp(fits[0].inertia_, scale)
        assert f.inertia_ == pytest.approx(expected, rel=1e-8)


# ----------------------------------------------------------------------------- every divergence
@pytest.mark.parametrize("name", DIVERGENCES)
@pytest.mark.parametrize("fmt", ["dense", "sparse", "dask"])
def test_every_divergence_and_format_fits_and_predicts(name, fmt):
    if fmt == "sparse" and name in ("itakura_saito", "mahalanobis", CUSTOM):
        pytest.skip("sparse rows hold implicit zeros (outside IS) / dense-only generators")
    X = blobs(name)
    Xin = {"dense": X, "sparse": sp.csr_matrix(X),
           "dask": da.from_array(X, chunks=(55, -1))}[fmt]
    mbk = MiniBatchBregmanKMeans(3, divergence=name, divergence_params=params(name),
                                 batch_size=40, max_iter=5, random_state=0).fit(Xin)
    labels = mbk.labels_.compute() if fmt == "dask" else mbk.labels_
    np.testing.assert_array_equal(labels, mbk.predict(X))
    assert mbk.inertia_ == pytest.approx(-mbk.score(X), rel=1e-8)
    assert np.isfinite(mbk.cluster_centers_).all()
    km = BregmanKMeans(3, divergence=name, divergence_params=params(name), random_state=0,
                       init=mbk.cluster_centers_).fit(X)
    # a few epochs of mini-batches land near a Lloyd fixed point on these blobs
    assert mbk.inertia_ <= 1.1 * km.inertia_


def test_kl_on_sparse_counts_stays_finite_with_auto_smoothing():
    rng = np.random.default_rng(0)
    X = sp.random(400, 300, density=0.02, random_state=1, format="csr",
                  data_rvs=lambda m: rng.integers(1, 5, m).astype(float))
    X = X[np.asarray(X.sum(axis=1)).ravel() > 0]
    mbk = MiniBatchBregmanKMeans(5, divergence="kl", batch_size=64, max_iter=3,
                                 random_state=0).fit(X)
    assert mbk.smoothing_ > 0
    assert np.isfinite(mbk.inertia_) and (mbk.cluster_centers_ > 0).all()
    assert np.isfinite(mbk.transform(X)).all()


def test_float32_is_kept_for_centres_and_transform():
    X = blobs("kl").astype(np.float32)
    mbk = MiniBatchBregmanKMeans(3, divergence="kl", batch_size=40, random_state=0).fit(X)
    assert mbk.cluster_centers_.dtype == np.float32
    assert mbk.transform(X).dtype == np.float32
    ref = MiniBatchBregmanKMeans(3, divergence="kl", batch_size=40, random_state=0).fit(
        X.astype(np.float64))
    np.testing.assert_allclose(mbk.cluster_centers_, ref.cluster_centers_, rtol=1e-6)
    bk = BisectingBregmanKMeans(3, divergence="kl", random_state=0).fit(X)
    assert bk.cluster_centers_.dtype == np.float32


@pytest.mark.parametrize("fmt", ["dense", "dask"])
def test_progress_reports_the_running_objective_every_step(capsys, fmt):
    X = blobs("sqeuclidean")
    Xin = da.from_array(X, chunks=(60, -1)) if fmt == "dask" else X
    est = MiniBatchBregmanKMeans(3, batch_size=20, max_iter=2, verbose=2,
                                 random_state=0).fit(Xin)
    err = capsys.readouterr().err
    assert "MiniBatchBregmanKMeans" in err and f"/{est.n_steps_}" in err  # the bar
    lines = [ln for ln in err.splitlines() if ": objective " in ln]
    assert len(lines) == est.n_steps_ if fmt == "dense" else len(lines) == 2 * 4


def test_compute_labels_false_estimates_the_inertia():
    X = blobs("sqeuclidean", n=600)
    a = MiniBatchBregmanKMeans(3, batch_size=50, random_state=0).fit(X)
    a.set_params(compute_labels=False).fit(X)
    assert not hasattr(a, "labels_")  # not those of the earlier fit
    assert a.inertia_ == pytest.approx(-a.score(X), rel=0.3)


# ----------------------------------------------------------------------------- bisecting
@pytest.mark.parametrize("init", ["random", "k-means++"])
@pytest.mark.parametrize("strategy", ["biggest_inertia", "largest_cluster"])
@pytest.mark.parametrize("seed", [0, 1])
def test_bisecting_equals_sklearn(init, strategy, seed):
    X = digits()
    kw = dict(init=init, random_state=seed, bisecting_strategy=strategy, tol=0.0)
    sk = BisectingKMeans(8, **kw).fit(X)
    ours = BisectingBregmanKMeans(8, **kw).fit(X)
    np.testing.assert_array_equal(ours.labels_, sk.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, sk.cluster_centers_, rtol=0, atol=1e-10)
    assert ours.inertia_ == pytest.approx(sk.inertia_, rel=1e-12)
    Xn = X + np.random.default_rng(0).normal(size=X.shape)
    np.testing.assert_array_equal(ours.predict(Xn), sk.predict(Xn))


def test_bisecting_sparse_equals_sklearn():
    X = sp.random(300, 40, density=0.2, random_state=0, format="csr")
    sk = BisectingKMeans(5, random_state=0, tol=0.0).fit(X)
    ours = BisectingBregmanKMeans(5, random_state=0, tol=0.0).fit(X)
    np.testing.assert_array_equal(ours.labels_, sk.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, sk.cluster_centers_, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", DIVERGENCES)
def test_bisecting_inertia_never_grows_with_a_split(name):
    """With one seed the first k-1 splits of a fit with k+1 clusters are those of the fit with
    k; a split replaces a cluster by two whose divergence inertias add up to at most its own
    (each part's mean is its best centre), so inertia_ never grows with n_clusters."""
    X = blobs(name, n=150)
    inertias = [BisectingBregmanKMeans(k, divergence=name, divergence_params=params(name),
                                       smoothing=0.0, random_state=0).fit(X).inertia_
                for k in range(1, 7)]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(inertias, inertias[1:])), inertias


@pytest.mark.parametrize("name", ["kl", "itakura_saito", "l1_subgradient"])
def test_bisecting_labels_are_the_tree_and_predict_walks_it(name):
    X = blobs(name)
    bk = BisectingBregmanKMeans(4, divergence=name, random_state=0).fit(X)
    np.testing.assert_array_equal(bk.predict(X), bk.labels_)
    div = get_divergence(name)
    d = div.pairwise(X, bk.cluster_centers_)[np.arange(len(X)), bk.labels_]
    assert bk.inertia_ == pytest.approx(d.sum(), rel=1e-10)
    assert bk.transform(X).shape == (len(X), 4)


def test_bisecting_kl_on_sparse_text_like_counts():
    rng = np.random.default_rng(0)
    X = sp.random(300, 200, density=0.03, random_state=2, format="csr",
                  data_rvs=lambda m: rng.integers(1, 4, m).astype(float))
    X = X[np.asarray(X.sum(axis=1)).ravel() > 0]
    bk = BisectingBregmanKMeans(6, divergence="kl", random_state=0).fit(X)
    assert np.isfinite(bk.inertia_) and (bk.cluster_centers_ > 0).all()
    assert len(np.unique(bk.labels_)) == 6


# ----------------------------------------------------------------------------- contract
def test_pickle_and_reproducible():
    X = blobs("mahalanobis")
    for est in (MiniBatchBregmanKMeans(3, divergence="mahalanobis", divergence_params={"A": SPD},
                                       batch_size=30, random_state=7),
                BisectingBregmanKMeans(3, divergence="mahalanobis",
                                       divergence_params={"A": SPD}, random_state=7)):
        a = est.fit(X)
        again = pickle.loads(pickle.dumps(a))
        np.testing.assert_array_equal(again.predict(X), a.predict(X))
        np.testing.assert_array_equal(again.transform(X), a.transform(X))
        b = type(est)(**est.get_params()).fit(X)
        np.testing.assert_array_equal(b.cluster_centers_, a.cluster_centers_)


def test_inputs_not_modified():
    X = blobs("kl")
    Xs = sp.csr_matrix(X)
    X0, Xs0 = X.copy(), Xs.copy()
    w = np.ones(len(X))
    C0 = X[:3] + 1.0
    C00 = C0.copy()
    MiniBatchBregmanKMeans(3, divergence="kl", init=C0, batch_size=30).fit(X, sample_weight=w)
    MiniBatchBregmanKMeans(3, divergence="kl", random_state=0).partial_fit(Xs)
    MiniBatchBregmanKMeans(3, divergence="kl", init=C0).partial_fit(X)
    BisectingBregmanKMeans(3, divergence="kl", random_state=0).fit(Xs, sample_weight=w)
    assert np.array_equal(X, X0) and np.array_equal(C0, C00) and (w == 1).all()
    assert (Xs != Xs0).nnz == 0


# ----------------------------------------------------------------------------- bad input
def test_bad_input_messages():
    X = blobs("sqeuclidean")
    bad = X.copy()
    bad[4, 1] = np.nan
    with pytest.raises(ValueError, match="NaN at row 4, column 1"):
        MiniBatchBregmanKMeans(3).fit(bad)
    with pytest.raises(DomainError, match="kl needs non-negative data"):
        MiniBatchBregmanKMeans(3, divergence="kl").fit(X)
    with pytest.raises(DomainError, match="kl needs non-negative data"):
        MiniBatchBregmanKMeans(3, divergence="kl").partial_fit(X)
    with pytest.raises(ValueError, match="n_clusters=300 is larger than n_samples=240"):
        MiniBatchBregmanKMeans(300).fit(X)
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        MiniBatchBregmanKMeans(3, batch_size=0).fit(X)
    with pytest.raises(TypeError, match="max_iter must be an integer"):
        MiniBatchBregmanKMeans(3, max_iter=2.5).fit(X)
    with pytest.raises(ValueError, match="reassignment_ratio must be >= 0.0"):
        MiniBatchBregmanKMeans(3, reassignment_ratio=-1).fit(X)
    with pytest.raises(ValueError, match="max_no_improvement must be >= 0"):
        MiniBatchBregmanKMeans(3, max_no_improvement=-1).fit(X)
    with pytest.raises(ValueError, match="init must be 'k-means\\+\\+', 'random' or an array"):
        MiniBatchBregmanKMeans(3, init="k-means||").fit(X)
    with pytest.raises(ValueError, match="init array must have shape"):
        MiniBatchBregmanKMeans(3, init=np.zeros((2, 3))).fit(X)
    with pytest.raises(DomainError, match="needs positive centres"):
        MiniBatchBregmanKMeans(3, divergence="kl", init=np.zeros((3, 3))).fit(np.abs(X))
    with pytest.raises(TypeError, match="compute_labels must be True or False"):
        MiniBatchBregmanKMeans(3, compute_labels="yes").fit(X)
    with pytest.raises(ValueError, match="smoothing must be"):
        MiniBatchBregmanKMeans(3, smoothing="lots").fit(X)
    with pytest.raises(TypeError, match="partial_fit takes one batch in memory"):
        MiniBatchBregmanKMeans(3).partial_fit(da.from_array(X, chunks=50))
    with pytest.raises(ValueError, match="sample_weight is zero on every row of the seeding"):
        MiniBatchBregmanKMeans(3, init_size=3, random_state=0).fit(
            X, sample_weight=np.r_[np.zeros(len(X) - 1), 1.0])
    with pytest.warns(RuntimeWarning, match="init_size=2 should be larger than n_clusters=3"):
        MiniBatchBregmanKMeans(3, init_size=2, random_state=0).fit(X)
    with pytest.warns(RuntimeWarning, match="n_init=3 is ignored"):
        MiniBatchBregmanKMeans(3, init=X[:3], n_init=3).fit(X)
    bad_chunk = X.copy()
    bad_chunk[130, 2] = np.inf
    with pytest.raises(ValueError, match="chunk 2 \\(global rows 120..179\\) contains infinity "
                                         "at global row 130"):
        MiniBatchBregmanKMeans(3).fit(da.from_array(bad_chunk, chunks=(60, -1)))
    mbk = MiniBatchBregmanKMeans(3, random_state=0).fit(X)
    with pytest.raises(ValueError, match="has 2 features, but MiniBatchBregmanKMeans is "
                                         "expecting 3"):
        mbk.predict(X[:, :2])


def test_bisecting_bad_input_messages():
    X = blobs("sqeuclidean")
    with pytest.raises(ValueError, match="bisecting_strategy must be 'biggest_inertia' or "
                                         "'largest_cluster'"):
        BisectingBregmanKMeans(3, bisecting_strategy="widest").fit(X)
    with pytest.raises(ValueError, match="init must be 'random' or 'k-means\\+\\+'"):
        BisectingBregmanKMeans(3, init="k-means||").fit(X)
    with pytest.raises(TypeError, match="needs the data in memory"):
        BisectingBregmanKMeans(3).fit(da.from_array(X, chunks=50))
    with pytest.raises(ValueError, match="split 0: the cluster has 1 row\\(s\\) of positive "
                                         "weight"):
        BisectingBregmanKMeans(2).fit(X, sample_weight=np.r_[1.0, np.zeros(len(X) - 1)])
    with pytest.raises(DomainError, match="itakura_saito needs positive data"):
        BisectingBregmanKMeans(2, divergence="itakura_saito").fit(X)


def test_float32_rows_stay_float32_and_give_the_float64_labels():
    rng = np.random.default_rng(17)
    X = np.vstack([rng.normal(m, 1.0, size=(800, 5)) for m in (0.0, 5.0, 10.0)])
    for cls in (MiniBatchBregmanKMeans, BisectingBregmanKMeans):
        a = cls(3, random_state=0).fit(X)
        b = cls(3, random_state=0).fit(X.astype(np.float32))
        assert np.array_equal(a.labels_, b.labels_), cls
        assert b.cluster_centers_.dtype == np.float32
        assert b.transform(X[:4].astype(np.float32)).dtype == np.float32


def test_bisecting_verbose_shows_a_bar_per_split(capsys):
    X = np.random.default_rng(0).normal(size=(300, 4))
    BisectingBregmanKMeans(3, random_state=0, verbose=1).fit(X)
    err = capsys.readouterr().err
    assert "BisectingBregmanKMeans split 0 restart 0" in err
    assert "BisectingBregmanKMeans split 1 restart 0" in err and "objective=" in err
    BisectingBregmanKMeans(3, random_state=0).fit(X)
    assert capsys.readouterr() == ("", "")

