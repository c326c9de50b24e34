"""The engine's exact per-row values (:func:`bregclust._execution.exact_assigned`) and the final
objective built on them (:func:`bregclust._execution.exact_objective`).

On sparse rows ``exact_assigned`` evaluates each row against its own centre only (the GEMM
form on the row's non-zeros, ``O(nnz)``); it must give :func:`bregclust._execution.pairwise`'s
value cluster by cluster bit for bit (float64 rows), the definition in float64 (float32 rows),
keep the digit-loss redo of ``pairwise`` with ``guard=True``, and leave rows of zero weight
unevaluated. The private names read here are listed in ``tests/test_imports.py``
(``KERNEL_ORACLES``).
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import COSH as CUSTOM
from conftest import SPD

from bregclust import get_divergence

pytestmark = pytest.mark.usefixtures("cosh_generator")  # the user generator CUSTOM
DIVS = ["sqeuclidean", "mahalanobis", "kl", "itakura_saito", "l1_subgradient", "cosine", CUSTOM]


def _record(div):
    return get_divergence(div, A=SPD) if div == "mahalanobis" else get_divergence(div)


def _problem(div, seed, n=120, d=4, k=5, dtype=np.float64):
    """CSR rows in the divergence's domain (implicit zeros where the domain has 0), labels and
    centres (the clusters' means, pushed inside the domain of kl / Itakura-Saito)."""
    rng = np.random.default_rng(seed)
    X = rng.gamma(2.0, 1.0, size=(n, d)) + (0.2 if div == "itakura_saito" else 0.0)
    if div in ("sqeuclidean", "mahalanobis", "l1_subgradient", CUSTOM):
        X = X - 2.0
    if div != "itakura_saito":
        X[rng.random(X.shape) < 0.4] = 0.0
        X[:, 0] = np.abs(X[:, 0]) + 0.5  # no empty row (cosine)
    labels = rng.integers(0, k, n)
    labels[:k] = np.arange(k)
    U = np.array([X[labels == j].mean(axis=0) for j in range(k)])
    if div in ("kl", "itakura_saito"):
        U = U + 0.01
    return sp.csr_matrix(X.astype(dtype)), np.ascontiguousarray(U), labels


def _by_cluster(rec, X, U, labels, guard):
    """The former sparse branch of ``exact_assigned``: ``pairwise`` against each centre on the
    rows of its cluster."""
    from bregclust._execution import pairwise

    out = np.empty(X.shape[0])
    for j in range(U.shape[0]):
        idx = np.flatnonzero(labels == j)
        out[idx] = pairwise(rec, X[idx], U[j:j + 1], guard=guard)[:, 0]
    return out


def _definition(rec, X, U, labels):
    Xd = X.toarray().astype(np.float64) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    return np.array([rec.divergence(x, U[j]) for x, j in zip(Xd, labels)])


@pytest.mark.parametrize("div", DIVS)
def test_sparse_exact_assigned_is_pairwise_by_cluster_bit_for_bit(div):
    """Float64 CSR rows: each row's value against its own centre is the value ``pairwise``
    gives it against that centre alone (the same sum in the same order), and the definition
    to 1e-12; ``guard=True`` gives ``pairwise(guard=True)``'s."""
    from bregclust._execution import exact_assigned

    rec = _record(div)
    X, U, labels = _problem(div, DIVS.index(div))
    got = exact_assigned(rec, X, U, labels)
    assert np.array_equal(got, _by_cluster(rec, X, U, labels, guard=False))
    np.testing.assert_allclose(got, _definition(rec, X, U, labels), rtol=1e-12, atol=1e-12)
    assert np.array_equal(exact_assigned(rec, X, U, labels, guard=True),
                          _by_cluster(rec, X, U, labels, guard=True))


@pytest.mark.parametrize("div", ["kl", "itakura_saito", "sqeuclidean", CUSTOM])
def test_sparse_float32_rows_are_widened_before_their_gemm_parts(div):
    """Float32 CSR rows: the values of the rows widened to float64, bit for bit (so the
    definition in float64, not float32's rounding of the GEMM form)."""
    from bregclust._execution import exact_assigned

    rec = _record(div)
    X, U, labels = _problem(div, 11, dtype=np.float32)
    got = exact_assigned(rec, X, U, labels)
    assert got.dtype == np.float64
    assert np.array_equal(got, exact_assigned(rec, X.astype(np.float64), U, labels))
    np.testing.assert_allclose(got, _definition(rec, X, U, labels), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_rows_of_zero_weight_are_zero_and_not_evaluated(sparse):
    """With ``w``, a row of zero weight counts 0 even where its divergence is infinite (kl: mass
    on a coordinate where its centre is 0), and the objective is the weighted sum of the rest."""
    from bregclust._execution import exact_assigned, exact_objective

    kl = get_divergence("kl")
    X = np.array([[1.0, 2.0, 0.0], [3.0, 1.0, 0.0], [1.0, 1.0, 4.0], [2.0, 2.0, 0.0]])
    U = np.array([[2.0, 1.5, 0.0], [1.0, 1.0, 4.0]])
    labels = np.array([0, 0, 1, 0])
    labels_bad = np.array([0, 0, 0, 0])  # row 2 has mass where centre 0 has none: d = inf
    w = np.array([1.0, 2.0, 0.0, 0.5])
    Xf = sp.csr_matrix(X) if sparse else X
    d = exact_assigned(kl, Xf, U, labels_bad, w=w)
    assert d[2] == 0.0 and np.isfinite(d).all()
    assert np.isinf(exact_assigned(kl, Xf, U, labels_bad)[2])
    ref = _definition(kl, X, U, labels_bad)
    np.testing.assert_allclose(d[[0, 1, 3]], ref[[0, 1, 3]], rtol=1e-13)
    obj = exact_objective(kl, Xf, U, labels_bad, w)
    assert obj == pytest.approx(math.fsum(w[i] * ref[i] for i in (0, 1, 3)), rel=1e-13)
    assert exact_objective(kl, Xf, U, labels, np.zeros(4)) == 0.0
    assert np.array_equal(exact_assigned(kl, Xf, U, labels, w=np.zeros(4)), np.zeros(4))


def test_guard_redoes_the_rows_that_lost_their_digits():
    """``guard=True`` (the values a user reads) evaluates by the definition a sparse row whose
    GEMM value cancelled: ``x = (1e8, 1)`` against ``u = (1e8, 2)`` is 1 exactly, which the GEMM
    form ``||x||^2 + ||u||^2 - 2 <x, u>`` loses to rounding; without the guard the engine keeps
    the GEMM value (a fit's passes are written for it)."""
    from bregclust._execution import exact_assigned

    sq = get_divergence("sqeuclidean")
    X = sp.csr_matrix(np.array([[1e8, 1.0], [0.0, 3.0]]))
    U = np.array([[1e8, 2.0], [0.0, 1.0]])
    labels = np.array([0, 1])
    guarded = exact_assigned(sq, X, U, labels, guard=True)
    assert guarded.tolist() == [1.0, 4.0]
    plain = exact_assigned(sq, X, U, labels)
    assert plain[1] == 4.0 and plain[0] != 1.0  # the cancellation the guard exists for


@pytest.mark.parametrize("div", ["kl", "itakura_saito", "sqeuclidean", CUSTOM])
@pytest.mark.parametrize("sparse", [False, True])
def test_exact_objective_is_the_weighted_sum_of_exact_assigned(div, sparse):
    """``exact_objective`` is ``exact_assigned`` weighted and summed (CSR: one dot product over
    the rows of positive weight; dense: ``sum(w * d)``), bit for bit."""
    from bregclust._execution import exact_assigned, exact_objective

    rec = _record(div)
    X, U, labels = _problem(div, 5)
    X = X if sparse else X.toarray()
    rng = np.random.default_rng(3)
    w = rng.uniform(0.0, 3.0, X.shape[0]) * (rng.random(X.shape[0]) < 0.8)
    d = exact_assigned(rec, X, U, labels, w=w)
    keep = w > 0
    expected = float(w[keep] @ d[keep]) if sparse else float(np.sum(w * d))
    assert exact_objective(rec, X, U, labels, w) == expected
    assert expected == pytest.approx(math.fsum(w[keep] * _definition(rec, X, U, labels)[keep]),
                                     rel=1e-12)
