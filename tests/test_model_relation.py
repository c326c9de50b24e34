"""Tests for bregclust.model_relation (MTCMRL and SNMF)."""

import math
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import uniform_points
from naive_model_relation import (
    cosine_similarity_loops,
    objective_loops,
    project_simplex_bisection,
    relation_cost_loops,
    relation_frank_wolfe,
    relation_objective,
    relation_qp_cvxpy,
    w_step_sylvester,
    y_objective,
    y_update_paper,
)
from sklearn.exceptions import ConvergenceWarning

import bregclust.model_relation as mr
from bregclust import DomainError
from bregclust.model_relation import (
    ModelRelationClustering,
    SymmetricNMF,
    project_simplex,
    similarity_matrix,
)


def _blobs_tasks(seed=0, sizes=(3, 4), n_per=12, d=30, noise=0.3):
    """Non-negative tasks drawing from shared 'topics' (task t uses topics 0..h_t-1)."""
    rng = np.random.RandomState(seed)
    topics = rng.rand(max(sizes), d) ** 4 * 3
    Xs, ys = [], []
    for h in sizes:
        y = np.repeat(np.arange(h), n_per)
        X = topics[y] + noise * rng.rand(len(y), d)
        Xs.append(X)
        ys.append(y)
    return Xs, ys


def _converging_tasks(sizes=(3, 4)):
    """Blob tasks on which the default tolerance is reached well before max_iter.

    With little noise (``_blobs_tasks``' default) ``M^t`` is almost exactly of rank ``h_t``,
    the SNMF residual nearly vanishes and J is dominated by the cross-task term, which then
    drifts down by about 1e-6 of J per sweep for thousands of sweeps (labels unchanged), so the
    relative test of ``tol = 1e-7`` is not met by ``max_iter = 1000``, the former default. More samples and noise
    (clusters still separated: every fit below recovers them exactly) give the SNMF term its
    usual weight, as on real data.
    """
    return _blobs_tasks(sizes=sizes, n_per=20, noise=2.0)


def _rel_drop(J):
    """Relative decrease of J over the last sweep (the damped loop's exit test)."""
    return (J[-2] - J[-1]) / abs(J[-2])


def _random_state_of_fit(seed=0, sizes=(3, 4, 2), n=(15, 20, 12), d=8):
    """Random Ys, Ws, Gs, Xs, Ms for checking single steps."""
    rng = np.random.RandomState(seed)
    Xs = [rng.rand(nt, d) for nt in n]
    Ms = [similarity_matrix(X) for X in Xs]
    Ys = [rng.rand(nt, h) for nt, h in zip(n, sizes)]
    Ws = [rng.randn(d, h) for h in sizes]
    Gs = {}
    for t in range(len(sizes)):
        for s in range(len(sizes)):
            if s != t:
                G = rng.rand(sizes[t], sizes[s])
                Gs[(t, s)] = G / G.sum()
    return Xs, Ms, Ys, Ws, Gs


# ------------------------------------------------------------------ relation step (simplex)
@pytest.mark.parametrize("seed", range(5))
def test_project_simplex_matches_bisection(seed):
    rng = np.random.RandomState(seed)
    v = rng.randn(50) * 3
    g = project_simplex(v)
    np.testing.assert_allclose(g, project_simplex_bisection(v), atol=1e-12)
    assert g.min() >= 0 and abs(g.sum() - 1) < 1e-12


def test_project_simplex_at_extreme_magnitudes():
    """Entries near float64's limits: the same projection as of the shifted vector, no
    overflow in the running sums."""
    np.testing.assert_allclose(project_simplex([1e308, -1e308, 1e308]), [0.5, 0.0, 0.5])
    np.testing.assert_allclose(project_simplex([1e308, 1e308 - 1e292, -1e308]), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(project_simplex(np.array([0.3, 0.1, -0.2]) + 1e300),
                               project_simplex([1e300, 1e300, 1e300]))
    v = np.array([0.7, 0.2, -0.4, 0.1])
    np.testing.assert_allclose(project_simplex(v + 1e6), project_simplex(v), atol=1e-9)
    np.testing.assert_allclose(project_simplex(v, radius=2.0),
                               project_simplex_bisection(v, radius=2.0), atol=1e-12)


def test_project_simplex_small_cases():
    assert project_simplex([0.2, 0.3, 0.5]).tolist() == pytest.approx([0.2, 0.3, 0.5])
    assert project_simplex([10.0, 0.0, 0.0]).tolist() == [1.0, 0.0, 0.0]
    np.testing.assert_allclose(project_simplex([1.0, 1.0, 1.0, 1.0]), 0.25)
    np.testing.assert_allclose(project_simplex([3.0]), [1.0])
    np.testing.assert_allclose(project_simplex([1.0, 0.0], radius=3.0), [2.0, 1.0])


@pytest.mark.parametrize("h_t,h_s,beta,scale", [(3, 4, 0.5, 1.0), (5, 5, 0.5, 0.1),
                                                (4, 2, 2.0, 10.0), (6, 3, 0.05, 1.0)])
def test_relation_step_equals_cvxpy_qp(h_t, h_s, beta, scale):
    rng = np.random.RandomState(h_t * 10 + h_s)
    Wt, Ws = rng.randn(7, h_t) * scale, rng.randn(7, h_s) * scale
    A = mr._relation_cost(Wt, Ws)
    np.testing.assert_allclose(A, relation_cost_loops(Wt, Ws), rtol=1e-12, atol=1e-12)
    G = mr._relation_step(A, beta)
    G_qp, status, _ = relation_qp_cvxpy(A, beta)
    assert status == "optimal"
    # constraints of the paper's Eq. (4): G >= 0, G <= 1, sum G = 1
    assert G.min() >= 0 and G.max() <= 1 and abs(G.sum() - 1) < 1e-13
    np.testing.assert_allclose(G, G_qp, atol=1e-8)
    f, f_qp = relation_objective(A, G, beta), relation_objective(A, G_qp, beta)
    assert f <= f_qp + 1e-12 * max(1.0, abs(f_qp))
    assert abs(f - f_qp) <= 1e-8 * max(1.0, abs(f_qp))
    # and Frank-Wolfe reaches the same optimum
    G_fw, _, gap = relation_frank_wolfe(A, beta, gap_tol=1e-13, variant="pairwise")
    assert abs(relation_objective(A, G_fw, beta) - f) <= 1e-9 * max(1.0, abs(f))


def test_relation_step_beta_zero_is_a_minimising_vertex():
    A = np.array([[3.0, 1.0], [0.5, 2.0]])
    G = mr._relation_step(A, 0.0)
    np.testing.assert_array_equal(G, [[0, 0], [1, 0]])


def test_relation_step_kkt_when_many_zeros():
    # a large beta spreads mass; a tiny beta concentrates it on the smallest A_ij
    A = np.arange(12, dtype=float).reshape(3, 4)
    assert np.count_nonzero(mr._relation_step(A, 100.0)) == 12
    G = mr._relation_step(A, 1e-3)
    assert G[0, 0] == pytest.approx(1.0)


# ------------------------------------------------------------------ W step (Sylvester)
@pytest.mark.parametrize("shape", [(15, 40), (40, 8)])     # dual (n <= d) and primal forms
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("lam,alpha", [(4.0, 4.0), (0.25, 2.0), (1.0, 0.0), (0.0, 1.0)])
def test_w_step_equals_solve_sylvester(shape, sparse, lam, alpha):
    rng = np.random.RandomState(1)
    n, d = shape
    Xs = [rng.rand(n, d) * (rng.rand(n, d) < 0.5), rng.rand(n + 3, d), rng.rand(n + 1, d)]
    sizes = (3, 4, 2)
    Ys = [rng.rand(X.shape[0], h) for X, h in zip(Xs, sizes)]
    Ws = [rng.randn(d, h) for h in sizes]
    Gs = {(t, s): mr._relation_step(mr._relation_cost(Ws[t], Ws[s]), 0.5)
          for t in range(3) for s in range(3) if s != t}
    X = sp.csr_matrix(Xs[0]) if sparse else Xs[0]
    factor = mr._TaskFactor(X) if lam > 0 else None
    W = mr._w_step(0, X, Ys[0], Ws, Gs, factor, lam, 0.5, alpha)
    W_ref = w_step_sylvester(0, Xs[0], Ys[0], Ws, Gs, lam, 0.5, alpha)
    np.testing.assert_allclose(W, W_ref, rtol=1e-9, atol=1e-10)
    # and it is the exact block minimiser: J does not decrease under perturbations of W^t
    J = mr._objective(Xs, [similarity_matrix(Z) for Z in Xs], Ys, [W] + Ws[1:], Gs,
                      lam, 0.5, alpha, 0.5)
    for _ in range(3):
        Wp = W + 1e-4 * rng.randn(*W.shape)
        Jp = mr._objective(Xs, [similarity_matrix(Z) for Z in Xs], Ys, [Wp] + Ws[1:], Gs,
                           lam, 0.5, alpha, 0.5)
        assert Jp >= J - 1e-10 * abs(J)


# ------------------------------------------------------------------ Y step
@pytest.mark.parametrize("seed", range(4))
def test_y_step_decreases_and_stays_nonnegative(seed):
    rng = np.random.RandomState(seed)
    X = rng.rand(25, 10)
    M = similarity_matrix(X)
    Y = rng.rand(25, 3) + 0.2
    Q = rng.randn(25, 3)
    for lam in (0.0, 0.25, 4.0):
        Yn, eta = mr._y_step(Y, M, mr._split(M), Q if lam else None, lam)
        assert Yn.min() >= 0
        f0 = y_objective(Y, M, Q, lam)
        assert y_objective(Yn, M, Q, lam) < f0
        if eta == 1.0:
            np.testing.assert_allclose(Yn, y_update_paper(Y, M, Q, lam), rtol=1e-12)


def test_y_step_damps_when_paper_update_increases():
    # Y far too large: the undamped multiplicative step overshoots
    rng = np.random.RandomState(3)
    M = similarity_matrix(rng.rand(30, 5))
    Y = rng.rand(30, 2) * 0.01
    Y[:, 0] += 3.0
    f0 = y_objective(Y, M, np.zeros_like(Y), 0.0)
    Y_paper = y_update_paper(Y, M, np.zeros_like(Y), 0.0)
    Yn, eta = mr._y_step(Y, M, mr._split(M), None, 0.0)
    assert y_objective(Yn, M, np.zeros_like(Y), 0.0) < f0
    if y_objective(Y_paper, M, np.zeros_like(Y), 0.0) >= f0:
        assert eta < 1.0


def test_y_step_negative_similarity_keeps_y_nonnegative():
    rng = np.random.RandomState(0)
    X = rng.randn(20, 4)                       # cosine similarity has negative entries
    M = similarity_matrix(X)
    assert M.min() < 0
    Y = rng.rand(20, 2) + 0.2
    Yn, _ = mr._y_step(Y, M, mr._split(M), None, 0.0)
    assert Yn.min() >= 0
    assert y_objective(Yn, M, 0 * Y, 0.0) < y_objective(Y, M, 0 * Y, 0.0)


# ------------------------------------------------------------------ Y step with W eliminated
@pytest.mark.parametrize("shape", [(15, 40), (40, 8)])     # dual (n <= d) and primal forms
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("lam,alpha", [(4.0, 4.0), (0.25, 2.0), (1.0, 0.0), (0.0, 1.0)])
def test_reduced_objective_is_j_at_the_best_w_and_its_gradient(shape, sparse, lam, alpha):
    """F(Y) + const = J(Y, W*(Y)) with W* from solve_sylvester, and grad F is the partial
    gradient of J in Y at W* (Danskin): 2 (Y Y^T Y - M Y) + 2 lam (Y - X W*)."""
    rng = np.random.RandomState(2)
    n, d = shape
    Xs = [rng.rand(n, d) * (rng.rand(n, d) < 0.5), rng.rand(n + 3, d), rng.rand(n + 1, d)]
    sizes = (3, 4, 2)
    Ms = [similarity_matrix(Z) for Z in Xs]
    Ws = [rng.randn(d, h) for h in sizes]
    Gs = {(t, s): mr._relation_step(mr._relation_cost(Ws[t], Ws[s]), 0.5)
          for t in range(3) for s in range(3) if s != t}
    X = sp.csr_matrix(Xs[0]) if sparse else Xs[0]
    factor = mr._TaskFactor(X)
    b, C0 = mr._relation_terms(0, Ws, Gs, 0.5, alpha, 3, d)
    fun = mr._reduced_y_objective(X, Ms[0], mr._RowSpace(X, factor), b, C0, lam)
    values = []
    for _ in range(3):
        Y = rng.rand(Xs[0].shape[0], 3)
        W = w_step_sylvester(0, Xs[0], Y, Ws, Gs, lam, 0.5, alpha)
        J = objective_loops([Xs[0]] + Xs[1:], Ms, [Y] + [rng.rand(Z.shape[0], h) * 0 for Z, h
                                                         in zip(Xs[1:], sizes[1:])],
                            [W] + Ws[1:], Gs, lam, 0.5, alpha, 0.5)
        f, g = fun(Y.ravel())
        values.append(J - f)
        grad = 2 * (Y @ (Y.T @ Y) - Ms[0] @ Y) + 2 * lam * (Y - Xs[0] @ W)
        np.testing.assert_allclose(g.reshape(Y.shape), grad, rtol=1e-8, atol=1e-9)
    # the constant does not depend on Y
    np.testing.assert_allclose(values, values[0], rtol=1e-9, atol=1e-9 * abs(values[0]))


def test_lbfgs_block_decreases_task_objective_and_stays_nonnegative():
    Xs, Ms, Ys, Ws, Gs = _random_state_of_fit(seed=3)
    for lam, alpha in [(4.0, 4.0), (0.0, 1.0), (1.0, 0.0)]:
        X = Xs[1]
        factor = mr._TaskFactor(X)
        Ws1 = list(Ws)
        Ws1[1] = mr._w_step(1, X, Ys[1], Ws1, Gs, factor, lam, 0.5, alpha)
        J0 = mr._task_objective(1, X, Ms[1], Ys[1], Ws1, Gs, lam, 0.5, alpha)
        b, C0 = mr._relation_terms(1, Ws1, Gs, 0.5, alpha, Ys[1].shape[1], X.shape[1])
        fun = mr._reduced_y_objective(X, Ms[1], mr._RowSpace(X, factor), b, C0, lam)
        Y, J1, nit = mr._y_block_lbfgs(Ys[1], J0, fun, 1e-10)
        assert Y.min() >= 0 and nit > 0 and J1 < J0
        Ws1[1] = mr._w_step(1, X, Y, Ws1, Gs, factor, lam, 0.5, alpha)
        assert mr._task_objective(1, X, Ms[1], Y, Ws1, Gs, lam, 0.5, alpha) == pytest.approx(
            J1, rel=1e-9)
        # KKT at the end: the projected gradient is small next to the start's
        g0 = fun(Ys[1].ravel())[1]
        g1 = fun(Y.ravel())[1]
        pg = np.where(Y.ravel() > 0, g1, np.minimum(g1, 0.0))
        assert np.abs(pg).max() < 1e-3 * np.abs(g0).max()


def test_lbfgs_result_is_a_fixed_point_of_the_damped_update():
    """From the point the default solver returns, the damped multiplicative update (the other
    solver) stops after one sweep, lowering J by less than tol, with the same labels; from the
    damped solver's stopping point, the default solver still lowers J (it was a plateau)."""
    Xs, _ = _blobs_tasks(sizes=(3, 4))
    Ms, factors = mr._prepare(Xs, "cosine", None, True)
    init = [np.arange(X.shape[0]) % h for X, h in zip(Xs, (3, 4))]
    Y0 = [np.full((X.shape[0], h), 0.2) for X, h in zip(Xs, (3, 4))]
    for Y, lab in zip(Y0, init):
        Y[np.arange(lab.size), lab] += 1.0
    W0 = [np.ones((X.shape[1], h)) for X, h in zip(Xs, (3, 4))]
    args = (4.0, 0.5, 4.0, 0.5, 3000, 1e-7)
    new = mr._fit_loop(Xs, Ms, factors, Y0, W0, *args, algorithm="lbfgs")
    assert new["converged"]
    again = mr._fit_loop(Xs, Ms, factors, new["Ys"], new["Ws"], *args, algorithm="damped")
    J = again["history"]
    assert again["n_iter"] == 1 and 0 <= J[0] - J[1] <= 1e-7 * J[0]
    for a, b in zip(again["Ys"], new["Ys"]):
        np.testing.assert_array_equal(a.argmax(1), b.argmax(1))
    old = mr._fit_loop(Xs, Ms, factors, Y0, W0, *args, algorithm="damped")
    assert new["history"][-1] <= old["history"][-1]
    more = mr._fit_loop(Xs, Ms, factors, old["Ys"], old["Ws"], *args, algorithm="lbfgs")
    assert more["history"][-1] < old["history"][-1] * (1 - 1e-7)


# ------------------------------------------------------------------ objective and similarity
def test_objective_matches_loops():
    Xs, Ms, Ys, Ws, Gs = _random_state_of_fit()
    for lam, mu, alpha, beta in [(4.0, 0.5, 4.0, 0.5), (0.25, 1.0, 0.0, 0.0)]:
        J = mr._objective(Xs, Ms, Ys, Ws, Gs if alpha else {}, lam, mu, alpha, beta)
        assert J == pytest.approx(objective_loops(Xs, Ms, Ys, Ws, Gs, lam, mu, alpha, beta),
                                  rel=1e-12)


def test_cosine_similarity_dense_sparse_and_zero_row():
    rng = np.random.RandomState(0)
    X = rng.rand(10, 6) * (rng.rand(10, 6) < 0.5)
    X[3] = 0.0
    M = similarity_matrix(X)
    np.testing.assert_allclose(M, cosine_similarity_loops(X), atol=1e-14)
    np.testing.assert_allclose(similarity_matrix(sp.csr_matrix(X)), M, atol=1e-14)
    assert M[3].max() == 0


def test_divergence_similarity_is_exp_of_scaled_divergence():
    rng = np.random.RandomState(0)
    X = rng.rand(8, 3) + 0.1
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    sigma = np.median(D[~np.eye(8, dtype=bool)])
    np.testing.assert_allclose(similarity_matrix(X, "sqeuclidean"), np.exp(-D / sigma),
                               rtol=1e-10)
    Mkl = similarity_matrix(X, "kl")
    np.testing.assert_allclose(Mkl, Mkl.T)
    assert np.allclose(np.diag(Mkl), 1.0) and Mkl.max() <= 1.0 + 1e-15


# ------------------------------------------------------------------ the estimator
@pytest.mark.parametrize("algorithm", ["lbfgs", "damped"])
def test_objective_non_increasing_every_iteration_and_constraints(algorithm):
    Xs, ys = _blobs_tasks(sizes=(3, 4, 2))
    n = 12 if algorithm == "lbfgs" else 60
    est = ModelRelationClustering([3, 4, 2], max_iter=n, tol=1e-12, random_state=0,
                                  init="random", algorithm=algorithm)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        est.fit(Xs)
    J = est.objective_history_
    assert len(J) == n + 1
    assert np.all(np.diff(J) <= 1e-10 * np.abs(J[:-1]))
    assert J[-1] < J[0]
    for t, (Y, W) in enumerate(zip(est.indicators_, est.coef_)):
        assert Y.min() >= 0
        assert W.shape == (Xs[t].shape[1], [3, 4, 2][t])
        assert est.labels_[t].shape == (Xs[t].shape[0],)
    assert set(est.relations_) == {(t, s) for t in range(3) for s in range(3) if s != t}
    for (t, s), G in est.relations_.items():
        assert G.shape == (est.indicators_[t].shape[1], est.indicators_[s].shape[1])
        assert G.min() >= 0 and abs(G.sum() - 1) < 1e-12
    # objective of the stored variables equals the last history entry and the naive one
    Ms = [similarity_matrix(X) for X in Xs]
    assert est.objective(Xs) == pytest.approx(J[-1], rel=1e-12)
    assert objective_loops(Xs, Ms, est.indicators_, est.coef_, est.relations_, 4.0, 0.5, 4.0,
                           0.5) == pytest.approx(J[-1], rel=1e-10)


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
def test_recovers_easy_clusters_with_kmeans_init():
    from sklearn.metrics import adjusted_rand_score

    # separated blobs: M^t is close to block-diagonal, so the SNMF minimiser is the blob
    # partition (with much noise M^t is nearly constant and the minimiser of J need not be)
    Xs, ys = _blobs_tasks(sizes=(3, 4))
    est = ModelRelationClustering([3, 4], random_state=0).fit(Xs)
    for y, lab in zip(ys, est.labels_):
        assert adjusted_rand_score(y, lab) == 1.0
    # the defaults converge: the exit test is met at the last sweep and not before
    J = est.objective_history_
    assert est.n_iter_ < est.max_iter and J.size == est.n_iter_ + 1
    assert 0 <= _rel_drop(J) <= est.tol
    assert np.all(-np.diff(J[:-1]) / J[:-2] > est.tol)


@pytest.mark.parametrize("algorithm", ["lbfgs", "damped"])
def test_alpha_beta_zero_is_snmf_lr_and_tasks_decouple(algorithm):
    Xs, _ = _blobs_tasks(sizes=(3, 4))
    rng = np.random.RandomState(0)
    init = [rng.randint(3, size=Xs[0].shape[0]), rng.randint(4, size=Xs[1].shape[0])]
    # the same number of sweeps in both fits: a Y block sees only its own task
    kw = dict(alpha=0.0, beta=0.0, max_iter=3 if algorithm == "lbfgs" else 20, tol=0.0,
              algorithm=algorithm)
    with warnings.catch_warnings():
        # tol=0 fixes the number of sweeps (the quasi-Newton fit may also end on a sweep
        # that leaves J unchanged, which meets tol=0)
        warnings.simplefilter("ignore", ConvergenceWarning)
        both = ModelRelationClustering([3, 4], init=init, **kw).fit(Xs)
        one = ModelRelationClustering([4], init=[init[1]], **kw).fit([Xs[1]])
    assert both.relations_ == {}
    np.testing.assert_allclose(both.indicators_[1], one.indicators_[0], rtol=1e-10)
    np.testing.assert_allclose(both.coef_[1], one.coef_[0], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("algorithm", ["lbfgs", "damped"])
def test_snmf_equals_lam_zero_alpha_zero(algorithm):
    Xs, _ = _blobs_tasks(sizes=(3,))
    init = np.random.RandomState(1).randint(3, size=Xs[0].shape[0])
    kw = dict(max_iter=2 if algorithm == "lbfgs" else 15, tol=0, algorithm=algorithm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        snmf = SymmetricNMF(3, init=init, **kw).fit(Xs[0])
        mtc = ModelRelationClustering(3, lam=0.0, alpha=0.0, beta=0.0, init=[init],
                                      **kw).fit(Xs)
    np.testing.assert_allclose(snmf.indicators_, mtc.indicators_[0], rtol=1e-12)
    assert np.all(np.diff(snmf.objective_history_) <= 1e-12 * snmf.objective_history_[:-1])
    assert np.all(mtc.coef_[0] == 0)


def test_sparse_and_dense_input_agree_and_inputs_unchanged():
    Xs, _ = _blobs_tasks(sizes=(3, 2))
    Xs[0][Xs[0] < 0.5] = 0.0
    Xs_sp = [sp.csr_matrix(X) for X in Xs]
    copies = [X.copy() for X in Xs]
    kw = dict(random_state=2, init="random", max_iter=30, tol=0.0, algorithm="damped")
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        a = ModelRelationClustering([3, 2], **kw).fit(Xs)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        b = ModelRelationClustering([3, 2], **kw).fit(Xs_sp)
    for Xa, Xc, Xsp in zip(Xs, copies, Xs_sp):
        np.testing.assert_array_equal(Xa, Xc)
        np.testing.assert_array_equal(Xsp.toarray(), Xc)
    np.testing.assert_allclose(a.objective_history_, b.objective_history_, rtol=1e-9)
    # the default solver: the sparse and dense factorisations (eigh / svd) differ by
    # rounding, which the quasi-Newton steps carry along, but not to other clusters
    c = ModelRelationClustering([3, 2], random_state=2, init="random").fit(Xs)
    e = ModelRelationClustering([3, 2], random_state=2, init="random").fit(Xs_sp)
    np.testing.assert_allclose(c.objective_history_[-1], e.objective_history_[-1], rtol=1e-6)
    for lc, le in zip(c.labels_, e.labels_):
        np.testing.assert_array_equal(lc, le)
    for la, lb in zip(a.labels_, b.labels_):
        np.testing.assert_array_equal(la, lb)


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
def test_deterministic_and_picklable():
    Xs, _ = _converging_tasks(sizes=(3, 4))
    a = ModelRelationClustering([3, 4], random_state=5).fit(Xs)
    b = ModelRelationClustering([3, 4], random_state=5).fit(Xs)
    np.testing.assert_array_equal(a.objective_history_, b.objective_history_)
    c = pickle.loads(pickle.dumps(a))
    for la, lc in zip(a.labels_, c.labels_):
        np.testing.assert_array_equal(la, lc)
    assert c.get_params() == a.get_params()


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
def test_divergence_similarity_in_fit():
    Xs, ys = _converging_tasks(sizes=(3, 3))
    est = ModelRelationClustering(3, similarity="kl", random_state=0).fit(Xs)
    J = est.objective_history_
    assert np.all(np.diff(J) <= 1e-10 * J[:-1])
    assert est.n_iter_ < est.max_iter and 0 <= _rel_drop(J) <= est.tol


# ------------------------------------------------------------------ bad input
def test_bad_parameters():
    Xs, _ = _blobs_tasks(sizes=(3, 3))
    with pytest.raises(ValueError, match="mu must be > 0"):
        ModelRelationClustering(3, mu=0.0).fit(Xs)
    with pytest.raises(ValueError, match="lam must be >= 0"):
        ModelRelationClustering(3, lam=-1.0).fit(Xs)
    with pytest.raises(ValueError, match="alpha must be finite"):
        ModelRelationClustering(3, alpha=np.inf).fit(Xs)
    with pytest.raises(TypeError, match="beta must be a real number"):
        ModelRelationClustering(3, beta="0.5").fit(Xs)
    with pytest.raises(ValueError, match="n_clusters has 3 entries but there are 2 tasks"):
        ModelRelationClustering([2, 2, 2]).fit(Xs)
    with pytest.raises(ValueError, match="larger than n_samples"):
        ModelRelationClustering([3, 1000]).fit(Xs)
    with pytest.raises(TypeError, match="n_clusters must be an int or a sequence"):
        ModelRelationClustering(2.5).fit(Xs)
    with pytest.raises(ValueError, match=r"init must be .k-means\+\+., .random."):
        ModelRelationClustering(3, init="kmeans++").fit(Xs)
    with pytest.raises(ValueError, match=r"init labels for task 1 must lie in \[0, 2\]"):
        ModelRelationClustering(3, init=[np.zeros(36, int), np.full(36, 3)]).fit(Xs)
    with pytest.raises(ValueError, match="max_iter must be >= 1"):
        ModelRelationClustering(3, max_iter=0).fit(Xs)
    with pytest.raises(TypeError, match="similarity must be 'cosine'"):
        ModelRelationClustering(3, similarity=3).fit(Xs)
    with pytest.raises(ValueError, match="(?i)unknown divergence|not a registered|known"):
        ModelRelationClustering(3, similarity="cosinus").fit(Xs)


def test_bad_data():
    Xs, _ = _blobs_tasks(sizes=(3, 3))
    with pytest.raises(ValueError, match="share one feature space"):
        ModelRelationClustering(3).fit([Xs[0], Xs[1][:, :5]])
    bad = Xs[1].copy()
    bad[4, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ModelRelationClustering(3).fit([Xs[0], bad])
    with pytest.raises(ValueError, match="empty"):
        ModelRelationClustering(3).fit([])
    with pytest.raises(TypeError, match="list of 2-D arrays"):
        ModelRelationClustering(3).fit(Xs[0])
    neg = Xs[0] - 1.0
    with pytest.raises(DomainError, match="kl"):
        ModelRelationClustering(3, similarity="kl").fit([neg, Xs[1]])
    with pytest.raises(ValueError, match="callable returned shape"):
        ModelRelationClustering(3, similarity=lambda X: np.eye(3)).fit(Xs)


def test_task_size_limit(monkeypatch):
    Xs, _ = _blobs_tasks(sizes=(3, 3))
    monkeypatch.setattr(mr, "MAX_TASK_SAMPLES", 20)
    with pytest.raises(ValueError, match="task 0 has 36 samples; the dense similarity"):
        ModelRelationClustering(3).fit(Xs)
    with pytest.raises(ValueError, match="MAX_TASK_SAMPLES"):
        SymmetricNMF(3).fit(Xs[0])


def test_project_simplex_bad_input():
    with pytest.raises(ValueError, match="non-empty 1-D"):
        project_simplex(np.ones((2, 2)))
    with pytest.raises(ValueError, match="finite"):
        project_simplex([1.0, np.nan])
    with pytest.raises(ValueError, match="radius must be > 0"):
        project_simplex([1.0], radius=0)


def test_objective_requires_fit():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="not fitted"):
        ModelRelationClustering(2).objective([np.ones((3, 2))])


# ------------------------------------------------------------------ real data
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_reuters_tasks_monotone_and_accurate():
    from conftest import require_data

    require_data("reuters21578/cachopo_r52")
    from bregclust.datasets import load_mtcmrl_tasks
    from bregclust.metrics import clustering_accuracy

    data = load_mtcmrl_tasks("reuters")
    est = ModelRelationClustering(3, lam=1.0, alpha=1.0, random_state=0, max_iter=50)
    est.fit(data.Xs)
    J = est.objective_history_
    assert np.all(np.diff(J) <= 1e-10 * np.abs(J[:-1]))
    for Y, G in zip(est.indicators_, est.relations_.values()):
        assert Y.min() >= 0 and G.min() >= 0 and abs(G.sum() - 1) < 1e-12
    accs = [clustering_accuracy(y, lab) for y, lab in zip(data.ys, est.labels_)]
    assert min(accs) > 0.6


# ------------------------------------------------------------------ converged defaults, as printed
def test_default_tolerances_are_the_converged_ones():
    for est in (ModelRelationClustering(), SymmetricNMF()):
        assert est.tol == 1e-7 and est.max_iter == 3000 and est.algorithm == "lbfgs"


def test_snmf_default_stops_below_tol():
    Xs, ys = _blobs_tasks(sizes=(3,), noise=0.3)
    est = SymmetricNMF(3, random_state=0).fit(Xs[0])
    J = est.objective_history_
    assert est.n_iter_ < est.max_iter and J.size == est.n_iter_ + 1
    assert 0 <= _rel_drop(J) <= est.tol                      # the exit test, met
    assert np.all(-np.diff(J[:-1]) / J[:-2] > est.tol)      # and not met before
    from bregclust.metrics import clustering_accuracy

    assert clustering_accuracy(ys[0], est.labels_) == 1.0


@pytest.mark.parametrize("cls", [ModelRelationClustering, SymmetricNMF])
def test_max_iter_exit_warns_with_drop_above_tol(cls):
    Xs, _ = _blobs_tasks(sizes=(3, 3))
    # one SymmetricNMF sweep is a whole L-BFGS-B run: only the first cannot confirm itself
    n = 4 if cls is ModelRelationClustering else 1
    est = cls(3, random_state=0, max_iter=n)
    with pytest.warns(ConvergenceWarning, match=f"did not converge in max_iter={n}"):
        est.fit(Xs if cls is ModelRelationClustering else Xs[0])
    J = est.objective_history_
    assert est.n_iter_ == n and J.size == n + 1 and _rel_drop(J) > est.tol


def test_as_printed_is_eq19_with_the_papers_stopping_rule():
    Xs, _ = _blobs_tasks(sizes=(3, 4))
    init = [np.arange(X.shape[0]) % h for X, h in zip(Xs, (3, 4))]
    kw = dict(lam=2.0, alpha=1.0, beta=0.5, init=init)
    one = ModelRelationClustering([3, 4], algorithm="as_printed", max_iter=1, **kw)
    with pytest.warns(ConvergenceWarning):
        one.fit(Xs)
    # one sweep by hand: G, exact W, then the undamped Eq. 19 for each task in turn
    Ms = [similarity_matrix(X) for X in Xs]
    factors = [mr._TaskFactor(X) for X in Xs]
    Ys = [np.full((X.shape[0], h), 0.2) for X, h in zip(Xs, (3, 4))]
    for Y, lab in zip(Ys, init):
        Y[np.arange(lab.size), lab] += 1.0
    Ws = [np.ones((X.shape[1], h)) for X, h in zip(Xs, (3, 4))]
    Gs = mr._all_relations(Ws, 0.5)
    for t in range(2):
        s = 1 - t
        Gs[(t, s)] = mr._relation_step(mr._relation_cost(Ws[t], Ws[s]), 0.5)
        Ws[t] = mr._w_step(t, Xs[t], Ys[t], Ws, Gs, factors[t], 2.0, 0.5, 1.0)
        Ys[t] = y_update_paper(Ys[t], Ms[t], Xs[t] @ Ws[t], 2.0)
    for Y, Yref in zip(one.indicators_, Ys):
        np.testing.assert_allclose(Y, Yref, rtol=1e-10)
    assert one.n_damped_ == 0
    # stopping rule: every sweep but the last lowered J by at least 1, the last by less
    est = ModelRelationClustering([3, 4], algorithm="as_printed", **kw).fit(Xs)
    J = est.objective_history_
    assert est.n_iter_ < est.max_iter
    assert np.all(J[:-2] - J[1:-1] >= mr.PAPER_THRESHOLD) and J[-2] - J[-1] < mr.PAPER_THRESHOLD


def test_algorithm_validation():
    Xs, _ = _blobs_tasks(sizes=(3, 3))
    with pytest.raises(ValueError,
                       match=r"algorithm must be one of \['lbfgs', 'damped', 'as_printed'\]"):
        ModelRelationClustering(3, algorithm="literal").fit(Xs)
    with pytest.raises(ValueError, match="algorithm must be one of"):
        SymmetricNMF(3, algorithm=None).fit(Xs[0])


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_cai_reuters_converged_defaults_and_as_printed():
    """On the paper's Reuters data the defaults converge (exit drop below tol, J monotone) and
    reach the paper's SNMF accuracy; the printed rule stops at a sweep that raised J."""
    from conftest import require_data

    require_data("reuters21578/Reuters21578.mat")
    from bregclust.datasets import load_mtcmrl_tasks
    from bregclust.metrics import clustering_accuracy

    data = load_mtcmrl_tasks("reuters", source="cai")
    est = ModelRelationClustering(3, random_state=0).fit(data.Xs)
    J = est.objective_history_
    assert est.n_iter_ < est.max_iter and 0 <= _rel_drop(J) <= est.tol
    assert np.all(np.diff(J) <= 1e-10 * np.abs(J[:-1]))
    accs = [clustering_accuracy(y, lab) for y, lab in zip(data.ys, est.labels_)]
    assert min(accs) > 0.9
    X, y = data.Xs[0], data.ys[0]
    run = SymmetricNMF(3, random_state=0).fit(X)
    printed = SymmetricNMF(3, random_state=0, algorithm="as_printed").fit(X)
    assert 0 <= _rel_drop(run.objective_history_) <= run.tol
    Jp = printed.objective_history_
    assert run.objective_history_[-1] < Jp[-1]         # the printed rule stops short
    assert Jp[-1] > Jp[-2] or Jp[-2] - Jp[-1] < mr.PAPER_THRESHOLD
    assert clustering_accuracy(y, run.labels_) >= clustering_accuracy(y, printed.labels_)
    assert clustering_accuracy(y, run.labels_) > 0.95


@pytest.mark.parametrize("similarity", ["cosine", lambda X: np.asarray(X @ X.T)])
def test_similarity_params_without_a_divergence_is_an_error(similarity):
    # parameters that the similarity would silently ignore are a user error, not a no-op
    rng = np.random.default_rng(0)
    Xs = [rng.random((12, 4)), rng.random((12, 4))]
    with pytest.raises(ValueError, match="similarity_params=.* is only used with a divergence"):
        ModelRelationClustering(2, similarity=similarity, similarity_params={"A": 1.0}).fit(Xs)
    with pytest.raises(ValueError, match="similarity_params=.* is only used with a divergence"):
        similarity_matrix(Xs[0], similarity=similarity, similarity_params={"A": 1.0})
    # an empty dict is the same as None
    M = similarity_matrix(Xs[0], similarity=similarity, similarity_params={})
    assert M.shape == (12, 12)


# ------------------------------------------------------------ overflow and the simplex radius
def test_overflowing_regression_is_refused():
    X = np.vstack([uniform_points(10, 3, 1), uniform_points(10, 3, 2) + 5]) * 1e300
    with pytest.raises(ValueError, match="task 0 .*overflows float64; rescale"):
        ModelRelationClustering(2, random_state=0).fit([X, X])
    est = ModelRelationClustering(2, lam=0.0, random_state=0).fit([X, X])
    assert np.isfinite(est.objective_history_).all()


def test_project_simplex_refuses_an_infinite_radius():
    with pytest.raises(ValueError, match="radius must be finite"):
        project_simplex([1, 2], math.inf)


def test_relation_step_at_magnitudes_that_absorb_the_radius():
    """A cost so large that ``c - 1 == c`` in float64 still gives a point of the simplex."""
    for A in (np.array([[2e300]]), np.array([[1e299, 3e299], [2e299, 1e299]])):
        G = mr._relation_step(A, 0.5)
        assert np.all(G >= 0) and G.sum() == pytest.approx(1.0)
        # the mass sits on the cheapest entries, as the exact minimiser at any scale
        assert np.all(G[A > A.min()] == 0)


def test_relation_step_refuses_an_overflowed_cost():
    with pytest.raises(ValueError, match=r"overflowed float64\); rescale the data"):
        mr._relation_step(np.full((2, 2), np.inf), 0.5)


def test_mtcmrl_one_cluster_far_tasks():
    """One cluster per task with rows near 1e150 (squared distances near 1e300): labels, no crash."""
    X = np.array([[4.17022005e+149, 7.20324493e+149]])
    X2 = np.array([[0.5488135, 0.71518937]])
    est = ModelRelationClustering(1, random_state=0, max_iter=5).fit([X, X2])
    assert [lab.tolist() for lab in est.labels_] == [[0], [0]]
