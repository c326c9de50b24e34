"""The weighted label indicator shared by the divergence record and the multi-task code.

``Divergence.left_centroid`` used to build its ``k x n`` weighted indicator inline; it now
comes from the module below ``divergences`` that ``_multitask.label_indicator`` also uses. The
oracle here is the inline construction as it was (scipy's COO-to-CSR of ``(w, (labels,
arange))``) followed by the same chunked product: the centres and weights must be the same
bits.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from bregclust import get_divergence


def _left_centroid_as_before(div, X, labels, k, w):
    n = labels.shape[0]
    M = sp.csr_matrix((w, (labels, np.arange(n))), shape=(k, n))
    W = np.asarray(M.sum(axis=1)).ravel()
    S = np.zeros((k, X.shape[1]))
    for s in range(0, n, 4096):
        Xc = X[s:s + 4096]
        Xc = Xc.toarray() if sp.issparse(Xc) else Xc
        S += M[:, s:s + 4096] @ div.grad(Xc)
    with np.errstate(invalid="ignore", divide="ignore"):
        return div.grad_inv(S / W[:, None]), W


@pytest.mark.parametrize("name", ["sqeuclidean", "kl", "itakura_saito"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n", [37, 9000])  # 9000: three chunks of 4096 rows
def test_left_centroid_same_bits_as_the_inline_indicator(name, sparse, n):
    rng = np.random.default_rng(n)
    X = rng.gamma(2.0, 1.0, (n, 5)) + 0.1
    k = 4
    labels = rng.integers(0, k - 1, n)  # cluster k - 1 stays empty
    w = rng.uniform(0.0, 3.0, n)
    w[::7] = 0.0  # zero weights are allowed
    div = get_divergence(name)
    Xin = sp.csr_matrix(X) if sparse else X
    X0, labels0, w0 = Xin.copy(), labels.copy(), w.copy()
    got_c, got_w = div.left_centroid(Xin, labels, k, sample_weight=w)
    ref_c, ref_w = _left_centroid_as_before(div, X, labels, k, w)
    np.testing.assert_array_equal(got_w, ref_w)
    np.testing.assert_array_equal(got_c, ref_c)  # NaN row of the empty cluster included
    assert np.isnan(got_c[k - 1]).all() and got_w[k - 1] == 0.0
    # inputs untouched
    assert np.array_equal(labels, labels0) and np.array_equal(w, w0)
    assert (abs(Xin - X0)).max() == 0


def test_left_centroid_unweighted_is_the_weighted_with_unit_weights():
    rng = np.random.default_rng(0)
    X = rng.gamma(2.0, 1.0, (200, 3)) + 0.1
    labels = rng.integers(0, 3, 200)
    div = get_divergence("kl")
    a = div.left_centroid(X, labels, 3)
    b = div.left_centroid(X, labels, 3, sample_weight=np.ones(200))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
