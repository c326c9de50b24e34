"""Properties every registered divergence must satisfy, plus external oracles."""

import math
import pickle

import naive
import numba
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import offset_blobs, run_isolated, uniform_points
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize
from scipy.spatial.distance import cdist
from scipy.special import kl_div, rel_entr

from bregclust import (
    BregmanKMeans,
    DomainError,
    get_divergence,
    list_divergences,
    register_divergence,
    unregister_divergence,
)

pytestmark = pytest.mark.nojit  # all of this module runs with NUMBA_DISABLE_JIT=1 too

CUSTOM = "test_exp_generator"
CUSTOM_POS = "test_xlogx_plus_sq"


def _exp(x):
    return math.exp(x)


def _xlogx_sq(x):
    return (x * math.log(x) if x > 0 else 0.0) + x * x


def _xlogx_sq_deriv(x):
    return (math.log(x) if x > 0 else -math.inf) + 1.0 + 2.0 * x


@pytest.fixture(scope="module", autouse=True)
def custom_generators():
    """Two test generators, registered for this module's tests and removed after them."""
    # phi(x) = exp(x): asymmetric, on R, no inverse given (solved numerically).
    register_divergence(CUSTOM, phi=_exp, dphi=_exp, formula="sum e^x - e^y - (x - y) e^y",
                        overwrite=True)
    # phi(x) = x log x + x^2 on x >= 0, no inverse given.
    register_divergence(CUSTOM_POS, phi=_xlogx_sq, dphi=_xlogx_sq_deriv, domain="nonnegative",
                        overwrite=True)
    yield
    unregister_divergence(CUSTOM)
    unregister_divergence(CUSTOM_POS)


SPD = np.array([[2.0, 0.3, 0.0, 0.1], [0.3, 1.5, 0.2, 0.0], [0.0, 0.2, 1.0, 0.1],
                [0.1, 0.0, 0.1, 0.8]])
# the built-ins (other modules register their test generators in fixtures, never at import)
ALL = [n for n in list_divergences() if n not in (CUSTOM, CUSTOM_POS)] + [CUSTOM, CUSTOM_POS]
D = 4


def make_div(name):
    return get_divergence(name, A=SPD) if name == "mahalanobis" else get_divergence(name)


def sample(div, n, rng, zeros=True, d=D):
    if div.domain == "real":
        return rng.normal(size=(n, d))
    X = rng.gamma(2.0, 1.0, size=(n, d))
    if div.domain == "nonnegative" and zeros:
        X[rng.random((n, d)) < 0.3] = 0.0
    return X


def centres(div, k, rng, d=D):
    if div.right_domain == "positive":
        return rng.gamma(2.0, 1.0, size=(k, d)) + 0.05
    return rng.normal(size=(k, d))


@pytest.fixture(params=ALL)
def div(request):
    return make_div(request.param)


def test_registry_lists_builtins_and_custom():
    names = list_divergences()
    for n in ("sqeuclidean", "mahalanobis", "kl", "itakura_saito", "l1_subgradient", CUSTOM):
        assert n in names
    assert get_divergence("euclidean2").name == "sqeuclidean"
    assert get_divergence("GKL").name == "kl"
    assert get_divergence("is").name == "itakura_saito"
    assert get_divergence("l1").name == "l1_subgradient"
    assert get_divergence("Itakura-Saito").name == "itakura_saito"


def test_generic_assigned_is_the_oracle_entry_of_each_label(div):
    """The exact objective's one-pass kernel (``form.generic_assigned``, used for ``inertia_``)
    gives ``generic_pairwise[i, labels[i]]`` for rows of positive weight and 0 for the others,
    boundary values (zeros in kl data, inf divergences) included."""
    rng = np.random.default_rng(7)
    X = sample(div, 40, rng)
    U = centres(div, 3, rng)
    if div.domain != "real":
        U[1, 0] = 0.0  # a centre on the boundary: +inf wherever x_0 > 0 (kl), by convention
    labels = rng.integers(0, 3, size=40).astype(np.int64)
    w = rng.random(40)
    w[::5] = 0.0
    full = np.empty((40, 3))
    form = div._ready()
    form.generic_pairwise(X, U, full)
    out = np.full(40, -1.0)
    form.generic_assigned(X, U, labels, w, out)
    expected = np.where(w > 0, full[np.arange(40), labels], 0.0)
    np.testing.assert_array_equal(out, expected)
    if div.name == "kl":
        assert np.isinf(expected).any() and (expected == 0.0).any()


def test_generic_assigned_sqeuclidean_overflow_is_inf_not_nan():
    div = get_divergence("sqeuclidean")
    X = np.array([[1e200, 0.0], [1.0, 2.0]])
    U = np.array([[-1e200, 0.0], [1.0, 2.0]])
    out = np.empty(2)
    div._ready().generic_assigned(X, U, np.array([0, 1]), np.ones(2), out)
    assert out[0] == np.inf and out[1] == 0.0


def test_self_divergence_zero_and_nonnegative(div):
    rng = np.random.default_rng(0)
    X = sample(div, 30, rng, zeros=False)
    Dxx = div.pairwise(X, X)
    assert np.allclose(np.diag(Dxx), 0.0, atol=1e-10)
    U = centres(div, 5, rng)
    assert (div.pairwise(sample(div, 30, rng), U) >= 0).all()
    assert (div.generic_pairwise(X, X) >= -1e-12).all()


def test_fast_kernel_equals_definition_dense_and_sparse(div):
    rng = np.random.default_rng(1)
    X = sample(div, 40, rng)
    U = centres(div, 6, rng)
    ref = div.generic_pairwise(X, U)
    assert np.allclose(div.pairwise(X, U), ref, rtol=1e-10, atol=1e-10)
    if div.domain != "positive":
        Xs = sp.csr_matrix(X)
        assert np.allclose(div.pairwise(Xs, U), ref, rtol=1e-10, atol=1e-10)
        lab, mins = div.assign(Xs, U, chunk_rows=7)
        assert np.array_equal(lab, ref.argmin(axis=1))
    lab, mins = div.assign(X, U, chunk_rows=7)
    assert np.array_equal(lab, ref.argmin(axis=1))
    assert np.allclose(mins, ref.min(axis=1), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("parallel", [False, True])
def test_assign_and_sum_equals_assign_then_weighted_sums(div, parallel, monkeypatch):
    """The fused Lloyd pass == the two-pass route == the definition, dense and CSR, weighted."""
    import bregclust._execution as ex

    if parallel:  # split even tiny inputs over every thread
        monkeypatch.setattr(ex, "PARALLEL_MIN", 0)
    rng = np.random.default_rng(11)
    X = sample(div, 601, rng)
    U = centres(div, 5, rng)
    w = rng.uniform(0.5, 2.0, size=X.shape[0])
    ref = div.generic_pairwise(X, U)
    inputs = [X] + ([sp.csr_matrix(X)] if div.domain != "positive" else [])
    for Xi in inputs:
        before = Xi.copy()
        labels, mins, S, W = div.assign_and_sum(Xi, U, w)
        assert np.array_equal(labels, ref.argmin(axis=1))
        assert np.allclose(mins, ref.min(axis=1), rtol=1e-10, atol=1e-10)
        S2, W2 = div.weighted_sums(Xi, labels, U.shape[0], w)
        assert np.allclose(S, S2, rtol=1e-12, atol=1e-12)
        assert np.allclose(W, W2, rtol=1e-12)
        assert np.allclose(W, np.bincount(labels, weights=w, minlength=5))
        assert (abs(Xi - before)).sum() == 0  # input untouched


def test_assign_and_sum_with_boundary_centre_takes_exact_route():
    d = get_divergence("kl")
    X = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
    U = np.array([[1.0, 0.0], [0.5, 0.5]])  # a zero coordinate: the GEMM form is undefined
    labels, mins, S, W = d.assign_and_sum(X, U, np.ones(3))
    assert labels.tolist() == [0, 1, 0] and np.isfinite(mins).all()
    assert np.allclose(S, [[4.0, 0.0], [0.0, 2.0]]) and W.tolist() == [2.0, 1.0]


def test_definition_matches_naive_formula(div):
    rng = np.random.default_rng(2)
    X = sample(div, 12, rng)
    U = centres(div, 3, rng)
    if div.builtin:
        ref = naive.pairwise(div.name, X, U, A=SPD)
    else:
        ref = np.array([[naive.separable_divergence(div.phi, div.dphi, x, u) for u in U]
                        for x in X])
    assert np.allclose(div.pairwise(X, U), ref, rtol=1e-10, atol=1e-10)


def test_three_point_identity(div):
    if not div.differentiable:
        pytest.skip("three-point identity needs a gradient")
    if div.spherical:
        pytest.skip("holds on the unit sphere only (tests/test_cosine.py)")
    rng = np.random.default_rng(3)
    x, y, z = centres(div, 3, rng)
    lhs = div.divergence(x, y) + div.divergence(y, z) - div.divergence(x, z)
    rhs = float((x - y) @ (div.grad(z[None])[0] - div.grad(y[None])[0]))
    assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-10)


def test_right_centroid_is_weighted_mean_minimiser(div):
    if div.spherical:
        pytest.skip("every positive multiple of the mean minimises (tests/test_cosine.py)")
    rng = np.random.default_rng(4)
    X = sample(div, 25, rng)
    w = rng.random(25) + 0.1
    C, W = div.right_centroid(X, np.zeros(25, dtype=np.int64), 1, w)
    assert W[0] == pytest.approx(w.sum())
    assert np.allclose(C[0], (w @ X) / w.sum())

    def obj(c):
        return float(w @ div.pairwise(X, c[None])[:, 0])

    best = obj(C[0])
    if div.differentiable:
        lo = 1e-9 if div.right_domain == "positive" else None
        res = minimize(obj, C[0] * 1.3 + 0.1, method="L-BFGS-B", bounds=[(lo, None)] * D)
        assert best <= res.fun + 1e-8 * max(1, abs(res.fun))
        assert np.allclose(res.x, C[0], rtol=1e-3, atol=1e-3)
    else:  # l1: piecewise-constant objective; compare with many candidate centres
        for c in np.vstack([X, rng.normal(size=(200, D))]):
            assert best <= obj(c) + 1e-12


def test_left_centroid_is_gradient_mean_minimiser(div):
    if div.spherical:
        pytest.skip("grad phi = u / ||u|| has no inverse (tests/test_cosine.py)")
    if not div.differentiable:
        with pytest.raises(ValueError, match="not differentiable"):
            div.left_centroid(np.ones((3, D)), np.zeros(3, dtype=np.int64), 1)
        return
    rng = np.random.default_rng(5)
    X = centres(div, 20, rng)  # strictly inside the domain
    w = rng.random(20) + 0.1
    C, _ = div.left_centroid(X, np.zeros(20, dtype=np.int64), 1, w)

    def obj(c):
        return float(w @ np.array([div.divergence(c, x) for x in X]))

    lo = 1e-9 if div.domain != "real" else None
    res = minimize(obj, X.mean(axis=0), method="L-BFGS-B", bounds=[(lo, None)] * D)
    assert obj(C[0]) <= res.fun + 1e-7 * max(1, abs(res.fun))
    assert np.allclose(res.x, C[0], rtol=2e-3, atol=2e-3)


def test_grad_inv_inverts_grad(div):
    if not div.differentiable or div.spherical:
        pytest.skip("no gradient, or one without inverse (u / ||u||)")
    rng = np.random.default_rng(6)
    U = centres(div, 5, rng)
    assert np.allclose(div.grad_inv(div.grad(U)), U, rtol=1e-9, atol=1e-9)


def test_pickle_roundtrip(div):
    again = pickle.loads(pickle.dumps(div))
    rng = np.random.default_rng(7)
    X, U = sample(div, 5, rng), centres(div, 2, rng)
    assert again.name == div.name
    assert np.array_equal(again.pairwise(X, U), div.pairwise(X, U))


# ----------------------------------------------------------------------------- external oracles
def test_sqeuclidean_matches_cdist():
    rng = np.random.default_rng(8)
    X, U = rng.normal(size=(50, 7)), rng.normal(size=(9, 7))
    assert np.allclose(get_divergence("sqeuclidean").pairwise(X, U), cdist(X, U, "sqeuclidean"),
                       rtol=1e-10, atol=1e-10)


def test_mahalanobis_matches_cdist():
    rng = np.random.default_rng(9)
    X, U = rng.normal(size=(30, 4)), rng.normal(size=(5, 4))
    ref = cdist(X, U, "mahalanobis", VI=SPD) ** 2
    assert np.allclose(get_divergence("mahalanobis", A=SPD).pairwise(X, U), ref, rtol=1e-9)


def test_kl_matches_scipy_special():
    rng = np.random.default_rng(10)
    X = rng.poisson(1.0, size=(40, 6)).astype(float)
    U = rng.gamma(2.0, size=(5, 6)) + 0.01
    ref_kl_div = np.array([[kl_div(x, u).sum() for u in U] for x in X])
    ref_rel = np.array([[(rel_entr(x, u) - x + u).sum() for u in U] for x in X])
    d = get_divergence("kl")
    assert np.allclose(d.pairwise(X, U), ref_kl_div, rtol=1e-10, atol=1e-12)
    assert np.allclose(d.pairwise(sp.csr_matrix(X), U), ref_rel, rtol=1e-10, atol=1e-12)
    # On the simplex the generalised I-divergence is KL.
    p = X[0] + 1
    p /= p.sum()
    q = U[0] / U[0].sum()
    assert d.divergence(p, q) == pytest.approx(rel_entr(p, q).sum(), rel=1e-12)


def test_kl_centre_on_boundary_gives_infinite_divergence():
    d = get_divergence("kl")
    X = np.array([[1.0, 0.0], [0.0, 2.0]])
    U = np.array([[1.0, 0.0], [0.5, 0.5]])
    D = d.pairwise(X, U)
    assert D[0, 0] == 0.0 and np.isinf(D[1, 0])
    lab, mins = d.assign(X, U)
    assert lab.tolist() == [0, 1] and np.isfinite(mins).all()


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, (6, 3), elements=st.floats(-50, 50)),
       arrays(np.float64, (4, 3), elements=st.floats(-50, 50)),
       st.sampled_from(["sqeuclidean", "mahalanobis", "l1_subgradient", CUSTOM]))
def test_hypothesis_real_domain(X, U, name):
    div = make_div(name) if name != "mahalanobis" else get_divergence(name, A=SPD[:3, :3] + np.eye(3))
    if name == CUSTOM:
        X, U = X / 10, U / 10  # keep exp() in range
    fast = div.pairwise(X, U)
    ref = div.generic_pairwise(X, U)
    scale = 1.0 + np.abs(ref).max()
    assert (fast >= 0).all()
    assert np.allclose(fast, ref, rtol=1e-9, atol=1e-9 * scale)


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, (6, 3), elements=st.floats(0, 100)),
       arrays(np.float64, (4, 3), elements=st.floats(1e-3, 100)),
       st.sampled_from(["kl", "itakura_saito", CUSTOM_POS]))
def test_hypothesis_positive_domains(X, U, name):
    div = make_div(name)
    if div.domain == "positive":
        X = X + 1e-3
    fast = div.pairwise(X, U)
    ref = div.generic_pairwise(X, U)
    assert (fast >= 0).all()
    assert np.allclose(fast, ref, rtol=1e-8, atol=1e-8 * (1.0 + np.abs(ref).max()))


# ----------------------------------------------------------------------------- registry errors
def test_unknown_divergence_lists_known_names():
    with pytest.raises(ValueError, match="unknown divergence 'nope'.*itakura_saito.*sqeuclidean"):
        get_divergence("nope")
    with pytest.raises(TypeError, match="must be a name"):
        get_divergence(3)


def test_mahalanobis_parameter_checks():
    with pytest.raises(TypeError, match="needs the parameter A"):
        get_divergence("mahalanobis")
    with pytest.raises(ValueError, match="positive definite; its smallest eigenvalue"):
        get_divergence("mahalanobis", A=np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="must be symmetric"):
        get_divergence("mahalanobis", A=np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="square matrix"):
        get_divergence("mahalanobis", A=np.ones((2, 3)))
    with pytest.raises(TypeError, match="unexpected parameter"):
        get_divergence("kl", A=np.eye(2))
    A = np.eye(2)
    d = get_divergence("mahalanobis", A=A)
    A[0, 0] = 5.0  # the bound copy is independent and read-only
    assert d.param("A")[0, 0] == 1.0
    assert not d.param("A").flags.writeable


def test_register_rejects_bad_generators():
    with pytest.raises(ValueError, match="already registered"):
        register_divergence("kl", phi=lambda x: x * x, dphi=lambda x: 2 * x)
    with pytest.raises(ValueError, match="strictly increasing"):
        register_divergence("test_concave", phi=lambda x: -x * x, dphi=lambda x: -2 * x)
    with pytest.raises(ValueError, match="not the derivative of phi"):
        register_divergence("test_wrongderiv", phi=lambda x: x * x, dphi=lambda x: x ** 3 + x)
    with pytest.raises(ValueError, match="does not invert"):
        register_divergence("test_badinv", phi=lambda x: x * x, dphi=lambda x: 2 * x,
                            dphi_inv=lambda t: t)
    with pytest.raises(ValueError, match="domain must be one of"):
        register_divergence("test_baddomain", phi=lambda x: x * x, dphi=lambda x: 2 * x,
                            domain="complex")
    with pytest.raises(ValueError, match="not finite"):
        register_divergence("test_log_on_r", phi=lambda x: -math.log(x),
                            dphi=lambda x: -1.0 / x)
    with pytest.raises(ValueError, match="declared symmetric"):
        register_divergence("test_fake_sym", phi=lambda x: math.exp(x),
                            dphi=lambda x: math.exp(x), symmetric=True)
    with pytest.raises(TypeError, match="callable"):
        register_divergence("test_notcallable", phi=3, dphi=lambda x: 2 * x)
    for name in ("test_concave", "test_wrongderiv", "test_badinv", "test_fake_sym"):
        assert name not in list_divergences()


def test_register_overwrite_and_unregister():
    register_divergence("test_tmp", phi=lambda x: x * x, dphi=lambda x: 2 * x,
                        aliases=("test_tmp_alias",), symmetric=True)
    assert get_divergence("test_tmp_alias").symmetric
    with pytest.raises(ValueError, match="already registered"):
        register_divergence("test_tmp", phi=lambda x: x ** 4 + x * x,
                            dphi=lambda x: 4 * x ** 3 + 2 * x)
    d = register_divergence("test_tmp", phi=lambda x: x ** 4 + x * x,
                            dphi=lambda x: 4 * x ** 3 + 2 * x, overwrite=True)
    assert get_divergence("test_tmp") is d
    assert d.divergence([1.0], [0.0]) == pytest.approx(2.0)
    unregister_divergence("test_tmp")
    with pytest.raises(ValueError, match="unknown divergence"):
        get_divergence("test_tmp")
    with pytest.raises(ValueError, match="cannot be removed"):
        unregister_divergence("kl")


def test_numeric_inverse_is_accurate():
    d = get_divergence(CUSTOM)
    t = np.array([[1e-3, 0.5, 1.0, 20.0]])  # inside the range of exp
    assert np.allclose(d.grad(d.grad_inv(t)), t, rtol=1e-12, atol=1e-12)
    p = get_divergence(CUSTOM_POS)
    U = np.array([[1e-4, 0.3, 2.0, 50.0]])
    assert np.allclose(p.grad_inv(p.grad(U)), U, rtol=1e-12)


# ----------------------------------------------------------------------------- domain errors
def test_domain_errors_name_the_entry_and_a_fix():
    """The data checks every fit runs (here through BregmanKMeans), and check_domain."""
    X = np.ones((3, 2))
    X[1, 1] = -0.3
    with pytest.raises(DomainError, match=r"kl needs non-negative data; X has -0.3 at row 1, column 1"):
        BregmanKMeans(1, divergence="kl").fit(X)
    Z = np.ones((3, 2))
    Z[2, 0] = 0.0
    with pytest.raises(DomainError, match=r"itakura_saito needs positive data.*row 2, column 0.*offset"):
        BregmanKMeans(1, divergence="is").fit(Z)
    with pytest.raises(DomainError, match="implicit zero of the sparse matrix"):
        BregmanKMeans(1, divergence="is").fit(sp.csr_matrix(Z))
    with pytest.raises(DomainError, match="needs positive centres.*interior of the domain") as e:
        get_divergence("kl").check_domain(Z, name="init", side="right")
    assert "smoothing" not in str(e.value)  # no advice about a parameter the caller may lack
    with pytest.raises(DomainError, match="needs positive centres.*Use smoothing > 0"):
        get_divergence("kl").check_domain(Z, name="init", side="right",
                                          advice="Use smoothing > 0.")
    assert issubclass(DomainError, ValueError)


def test_validation_messages():
    with pytest.raises(ValueError, match=r"NaN at row 0, column 1"):
        BregmanKMeans(1).fit(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match=r"infinity at row 1, column 0"):
        BregmanKMeans(1).fit(sp.csr_matrix(np.array([[1.0, 0.0], [np.inf, 1.0]])))
    with pytest.raises(ValueError, match="Expected 2D array"):
        BregmanKMeans(1).fit(np.ones(3))


# ------------------------------------------------------------------------- capabilities
SIDED = ["sqeuclidean", "kl", "itakura_saito"]


@pytest.mark.parametrize("name", SIDED + ["mahalanobis"])
def test_sided_centroid_closed_form_vs_bisection_vs_scipy(name):
    """Every built-in's exact sided centroid == the bisection kernel == a scipy minimiser."""
    from scipy.optimize import minimize_scalar

    rng = np.random.default_rng(21)
    k, d = 4, 3
    A = rng.uniform(0.2, 3.0, size=(k, 1))
    B = rng.uniform(0.2, 3.0, size=(k, 1))
    mL = rng.uniform(0.3, 4.0, size=(k, d))
    mR = rng.uniform(0.3, 4.0, size=(k, d))
    if name == "mahalanobis":
        M = rng.normal(size=(d, d))
        div = get_divergence(name, A=M @ M.T + d * np.eye(d))
        U = div.sided_centroid(A, B, mL, mR)
        # quadratic: the gradient A (u - mL) + B (u - mR) vanishes
        np.testing.assert_allclose(U, (A * mL + B * mR) / (A + B), rtol=1e-12)
        return
    div = get_divergence(name)
    assert div.has_sided_centroid
    U = div.sided_centroid(A, B, mL, mR)
    Ub = div.centroid_by_bisection(A, B, mL, mR)
    np.testing.assert_allclose(U, Ub, rtol=1e-8)
    for z in range(k):
        for j in range(d):
            def f(u, z=z, j=j):
                return (A[z, 0] * div.divergence([mL[z, j]], [u])
                        + B[z, 0] * div.divergence([u], [mR[z, j]]))
            lo, hi = sorted((mL[z, j], mR[z, j]))
            ref = minimize_scalar(f, bounds=(lo, hi), method="bounded",
                                  options={"xatol": 1e-12}).x
            assert U[z, j] == pytest.approx(ref, rel=1e-5)
            assert f(U[z, j]) <= f(ref) + 1e-12


def test_sided_centroid_absent_for_l1():
    div = get_divergence("l1_subgradient")
    assert not div.has_sided_centroid and not div.has_gemm
    with pytest.raises(ValueError, match="no exact sided centroid"):
        div.sided_centroid(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 2)), np.ones((1, 2)))


def test_prepared_centres_path_equals_plain_path(div):
    """``assign_and_sum(centres=div.prepare_centres(U))`` == ``assign_and_sum(X, U)``."""
    rng = np.random.default_rng(12)
    X = sample(div, 300, rng)
    U = centres(div, 4, rng)
    w = rng.uniform(0.5, 2.0, size=X.shape[0])
    for data in (X, sp.csr_matrix(X)):
        prep = div.prepare(data)
        plain = div.assign_and_sum(data, U, w, prepared=prep)
        pc = div.prepare_centres(U)
        assert pc.fused == (div.has_gemm and pc.finite)
        again = div.assign_and_sum(data, U, w, prepared=prep, centres=pc)
        for a, b in zip(plain, again):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(plain[0], div.assign(data, U)[0])


def test_registry_records_keep_no_name_switches():
    """Estimators ask capabilities, never names: the fields an engine needs are on the record."""
    assert get_divergence("sqeuclidean").ward and get_divergence("sqeuclidean").whitening() is None
    A = np.array([[2.0, 0.5], [0.5, 1.0]])
    m = get_divergence("mahalanobis", A=A)
    L = m.whitening()
    np.testing.assert_allclose(L @ L.T, A)
    assert m.param_names == ("A",) and m.generator is None
    assert not get_divergence("kl").ward and get_divergence("kl").generator is not None


def test_register_unregister_does_not_grow_the_registry():
    import gc
    import weakref

    refs = []
    for i in range(3):
        d = register_divergence(f"tmp_cycle_{i}", phi=lambda x: math.cosh(x),
                                dphi=lambda x: math.sinh(x))
        d.pairwise(np.zeros((2, 1)), np.ones((1, 1)))  # compiles its function pointers
        refs.append(weakref.ref(d.generator))
        unregister_divergence(f"tmp_cycle_{i}")
        del d
    gc.collect()
    assert all(r() is None for r in refs)  # the record and its compiled kernels are released


def test_weighted_sums_of_no_rows_are_zero():
    div = get_divergence("kl")
    S, W = div.weighted_sums(np.zeros((0, 3)), np.zeros(0, dtype=np.int64), 2)
    assert S.shape == (2, 3) and not S.any() and W.shape == (2,) and not W.any()
    S, W = div.weighted_sums(sp.csr_matrix((0, 3)), [], 2)
    assert S.shape == (2, 3) and not S.any()


# ---------------------------------------------------------------------------- user generators: hostile
_SCALE = np.array([1.0])  # a global array read by a test generator (see below)


def _bounded_phi(x):
    if x > 5.0:
        raise ValueError("bounded_phi is undefined above 5")
    return x * x


def test_exception_in_a_user_generator_surfaces_once_as_the_users_exception(capfd):
    """A kernel calling a registered function that raises gets NaN from its callback (never a
    silent 0, no traceback per call); the caller's check raises the user's own exception once,
    naming the function and the argument, and the record is then clear."""
    from bregclust import _kernels as K
    from bregclust._kernels import generators as KG

    d = register_divergence("test_raising_phi", phi=_bounded_phi, dphi=lambda x: 2.0 * x)
    try:
        g = d.generator
        X = np.linspace(0.0, 9.0, 40).reshape(20, 2)
        out = np.empty((20, 3))
        with pytest.raises(ValueError, match="undefined above 5") as info:
            with KG.callback_errors():
                K.generic_pairwise(g.code, g.fn_phi, g.fn_dphi, X, X[:3], out)
        if hasattr(info.value, "__notes__"):  # compiled: the failure is named once
            assert "phi of divergence 'test_raising_phi' failed at x = " in info.value.__notes__[0]
            assert not np.isfinite(out[-1]).any() and np.isfinite(out[0]).all()
        KG.check_callbacks()  # nothing left to report
        assert "Traceback" not in capfd.readouterr().err
    finally:
        unregister_divergence("test_raising_phi")


def test_compile_cache_keys_global_arrays_by_content():
    """Two registrations reading a global array that changed in between compile different code
    (numba freezes the array's content), and identical content reuses the compiled function."""
    phi = lambda x: _SCALE[0] * x * x  # noqa: E731
    dphi = lambda x: 2.0 * _SCALE[0] * x  # noqa: E731
    try:
        a = register_divergence("test_scaled_1", phi=phi, dphi=dphi)
        assert a.divergence([0.0], [1.0]) == pytest.approx(1.0)
        _SCALE[0] = 3.0
        b = register_divergence("test_scaled_3", phi=phi, dphi=dphi)
        assert b.divergence([0.0], [1.0]) == pytest.approx(3.0)
        c = register_divergence("test_scaled_3_again", phi=phi, dphi=dphi)
        assert c.divergence([0.0], [1.0]) == pytest.approx(3.0)
        if not numba.config.DISABLE_JIT:  # interpreted, every registration is the function
            assert c.phi is b.phi and c.phi is not a.phi
    finally:
        _SCALE[0] = 1.0
        for name in ("test_scaled_1", "test_scaled_3", "test_scaled_3_again"):
            if name in list_divergences():
                unregister_divergence(name)


@pytest.mark.parametrize("fn", [math.exp, np.exp], ids=["math.exp", "np.exp"])
def test_register_accepts_math_and_numpy_functions(fn):
    """Builtins and ufuncs are compiled through a Python wrapper: exp(0) - exp(1) + e = 1."""
    d = register_divergence("test_builtin_exp", phi=fn, dphi=fn, overwrite=True)
    try:
        assert d.divergence([0.0], [1.0]) == pytest.approx(1.0)
        np.testing.assert_allclose(d.pairwise(np.zeros((1, 2)), np.ones((1, 2))), [[2.0]])
    finally:
        unregister_divergence("test_builtin_exp")


def test_register_refuses_callable_objects_and_uncompilable_builtins():
    """A callable object is refused before numba sees it, naming the parameter and the fix; a
    builtin numba cannot compile is refused naming it."""

    class Square:
        def __call__(self, x):
            return x * x

    with pytest.raises(TypeError, match=r"phi for divergence 'test_obj' must be a function numba "
                                        r"can compile .* got a callable Square object"):
        register_divergence("test_obj", phi=Square(), dphi=lambda x: 2.0 * x)
    with pytest.raises(TypeError, match=r"dphi of divergence 'test_len' (is <built-in function "
                                        r"len>, which numba cannot compile|could not be evaluated)"):
        register_divergence("test_len", phi=lambda x: x * x, dphi=len)
    assert "test_obj" not in list_divergences() and "test_len" not in list_divergences()


# -------------------------------------------------------- hostile input to the public methods
def test_methods_accept_non_csr_sparse_without_crashing():
    rc, out, err = run_isolated("""
        div = get_divergence("sqeuclidean")
        X = np.arange(60.).reshape(20, 3)
        U = np.array([[0., 0., 0.], [30., 31., 32.]])
        for fmt in ("csc", "coo", "lil", "dok", "bsr"):
            Xs = sp.csr_matrix(X).asformat(fmt)
            lab, mins, S, W = div.assign_and_sum(Xs, U)
            lab0, mins0, _, _ = div.assign_and_sum(X, U)
            assert (lab == lab0).all() and np.allclose(mins, mins0)
            assert np.allclose(div.pairwise(Xs, U), div.pairwise(X, U))
            assert np.allclose(div.phi_rows(Xs), div.phi_rows(X))
            assert (div.assign(Xs, U)[0] == lab0).all()
        print("OK")
    """)
    assert rc == 0 and "OK" in out, err[-2000:]


def test_weighted_sums_refuses_labels_out_of_range_without_crashing():
    rc, out, err = run_isolated("""
        div = get_divergence("sqeuclidean")
        X = np.arange(9.).reshape(3, 3)
        for bad in (np.array([0, 10**9, 1]), np.array([0, -1, 1]), np.array([0., 0.5, 1.])):
            try:
                div.weighted_sums(X, bad, 2)
            except (ValueError, TypeError) as e:
                assert "label" in str(e).lower(), e
            else:
                raise AssertionError(f"labels {bad} accepted")
        print("OK")
    """)
    assert rc == 0 and "OK" in out, err[-2000:]


def test_pairwise_is_accurate_far_from_origin():
    X, _ = offset_blobs(1e8)
    U = X[[0, 99]]
    exact = ((X[:, None, :] - U[None, :, :]) ** 2).sum(-1)
    D = get_divergence("sqeuclidean").pairwise(X, U)
    assert np.allclose(D, exact, rtol=1e-6, atol=1e-6)


def test_non_finite_divergences_are_not_zero():
    div = get_divergence("sqeuclidean")
    assert div.pairwise(np.array([[1e308]]), np.array([[1.0]]))[0, 0] == math.inf
    with pytest.raises(ValueError, match="NaN"):
        div.pairwise(np.array([[np.nan]]), np.array([[1.0]]))
    with pytest.warns(RuntimeWarning, match="overflow|inf"):
        BregmanKMeans(2).fit([[0], [1], [2], [1e200], [1.1e200], [1.2e200]])


def _resolve(name):
    """The registered name a name or alias resolves to (with a parameter where one is needed)."""
    try:
        return get_divergence(name).name
    except TypeError:  # mahalanobis needs its matrix
        return get_divergence(name, A=[[1.0]]).name


def _registry_state():
    """Every registered name and alias with the divergence it resolves to (public lookups)."""
    table = list_divergences(aliases=True)
    return table, {a: _resolve(a) for n, al in table.items() for a in (n, *al)}


def test_builtin_aliases_are_reserved():
    saved = _registry_state()
    try:
        with pytest.raises(ValueError, match="kl"):
            register_divergence("mine_alias_kl", phi=lambda x: x * x, dphi=lambda x: 2 * x,
                                aliases=("kl",), overwrite=True)
        assert get_divergence("kl").name == "kl"
        assert _registry_state() == saved  # the refused registration left nothing behind
    finally:  # never leave the registry hijacked for the other tests
        if "mine_alias_kl" in list_divergences():
            unregister_divergence("mine_alias_kl")


def test_l1_divergence_of_identical_tiny_values():
    div = get_divergence("l1")
    assert div.divergence([1e-200], [1e-200]) == 0.0
    assert div.divergence([-0.5], [-5e-324]) == div.pairwise(np.array([[-0.5]]),
                                                             np.array([[-5e-324]]))[0, 0]


def test_mahalanobis_matrix_of_wrong_size_is_refused():
    with pytest.raises(ValueError, match=r"A must be \(n_features, n_features\)"):
        BregmanKMeans(2, divergence="mahalanobis", divergence_params={"A": np.eye(2)}).fit(uniform_points())


@pytest.mark.slow
def test_register_fit_unregister_does_not_leak_memory():
    # Numba never frees the machine code of a compiled function (numba issues #1361, #5976:
    # LLVM's MCJIT keeps it for the life of the process), so each newly registered generator
    # costs the code of its phi and dphi for good. What bregclust itself must not keep is
    # checked two ways: the registered Divergence is collected after unregister_divergence,
    # and the resident memory grows per cycle by no more than plain numba.njit compiling the
    # same two functions for the same two dtypes (the control, measured in the same process)
    # plus 0.5 MiB - a fit that kept its 9 MiB input, or a cache keyed by name, fails it.
    rc, out, err = run_isolated("""
        import gc, weakref, numba
        def rss():
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * 4096 / 2**20
        X = np.random.RandomState(0).rand(400000, 3)
        refs = []
        def cycle(i):
            register_divergence(f"leak{i}", phi=lambda x: x * x, dphi=lambda x: 2 * x)
            refs.append(weakref.ref(get_divergence(f"leak{i}")))
            BregmanKMeans(2, divergence=f"leak{i}", random_state=0, n_init=1).fit(X)
            unregister_divergence(f"leak{i}")
        def control(i):
            for f in (numba.njit(lambda x: x * x), numba.njit(lambda x: 2 * x)):
                f(1.0), f(np.float32(1.0))
        for run in (cycle, control):
            for i in range(3):
                run(i)
            gc.collect()
            before = rss()
            for i in range(3, 13):
                run(i)
            gc.collect()
            print(run.__name__.upper(), (rss() - before) / 10)
        print("ALIVE", sum(r() is not None for r in refs))
    """)
    assert rc == 0, err[-2000:]
    growth = float(out.split("CYCLE")[1].split()[0])
    control = float(out.split("CONTROL")[1].split()[0])
    assert int(out.split("ALIVE")[1]) == 0
    assert growth < control + 0.5, (growth, control)  # MiB per cycle


@pytest.mark.parametrize("name", ["sqeuclidean", "kl", "itakura_saito", "l1_subgradient"])
def test_every_public_method_accepts_any_format_dtype_and_layout(name):
    div = get_divergence(name)
    X = np.random.RandomState(0).randint(1, 5, (12, 4)).astype(np.float64)
    U = X[[0, 5, 9]] + 0.5
    lab = np.arange(12) % 3
    ref_D = div.generic_pairwise(X, U)
    variants = [X.astype(np.int32), X.astype(np.float32), np.asfortranarray(X),
                np.repeat(X, 2, axis=1)[:, ::2]]
    if name != "itakura_saito":  # a sparse matrix holds implicit zeros
        variants += [sp.csr_matrix(X).asformat(f) for f in ("csc", "coo", "lil", "dok", "bsr")]
        variants += [sp.csc_array(X)]
    for Xv in variants:
        assert np.allclose(div.pairwise(Xv, U), ref_D), type(Xv)
        assert np.array_equal(div.assign(Xv, U)[0], np.argmin(ref_D, axis=1))
        assert np.allclose(div.phi_rows(Xv), div.phi_rows(X))
        S, W = div.weighted_sums(Xv, lab, 3)
        S0, W0 = div.weighted_sums(X, lab, 3)
        assert np.allclose(S, S0) and np.array_equal(W, W0)
        assert np.allclose(div.right_centroid(Xv, lab, 3)[0], div.right_centroid(X, lab, 3)[0])
        if div.differentiable:
            assert np.allclose(div.left_centroid(Xv, lab, 3)[0], div.left_centroid(X, lab, 3)[0])
        assert np.array_equal(div.assign_and_sum(Xv, U)[0], np.argmin(ref_D, axis=1))
    # duplicate entries of a COO matrix are summed, not read as two coordinates
    dup = sp.coo_matrix(([1.0, 2.0], ([0, 0], [1, 1])), shape=(1, 4))
    assert np.allclose(div.phi_rows(dup), div.phi_rows(dup.toarray())) or name == "itakura_saito"
    with pytest.raises(ValueError, match="U has 2 features but X has 4"):
        div.pairwise(X, U[:, :2])
    with pytest.raises(ValueError, match="2-D"):
        div.assign(X[0], U)
    with pytest.raises(TypeError, match="real numbers"):
        div.pairwise(X.astype(complex), U)
    with pytest.raises(ValueError, match="sample_weight must be 1-D of length"):
        div.assign_and_sum(X, U, np.ones(3))


def test_every_label_argument_is_checked():
    div = get_divergence("sqeuclidean")
    X = np.arange(9.).reshape(3, 3)
    for fn in (div.weighted_sums, div.right_centroid, div.left_centroid):
        with pytest.raises(ValueError, match="1-D"):
            fn(X, np.zeros((3, 1), dtype=int), 2)
        with pytest.raises(ValueError, match="labels has 2 entries but X has 3 rows"):
            fn(X, np.array([0, 1]), 2)
        with pytest.raises(ValueError, match="labels must lie in 0..1"):
            fn(X, np.array([0, 2, 1]), 2)
        with pytest.raises(ValueError, match="labels must be >= 0"):
            fn(X, np.array([0, -1, 1]), 2)
        with pytest.raises(ValueError, match="labels must be integers"):
            fn(X, np.array([0.0, np.nan, 1.0]), 2)
        with pytest.raises(TypeError, match="k must be an integer"):
            fn(X, np.array([0, 1, 1]), 2.0)
    S, W = div.weighted_sums(X, np.array([0.0, 1.0, 1.0]), 2)  # integral floats are labels
    assert np.array_equal(W, [1.0, 2.0]) and np.array_equal(S[1], X[1] + X[2])


@pytest.mark.parametrize("offset", [1e8, 1e12])
def test_public_methods_are_accurate_far_from_origin(offset):
    X, _ = offset_blobs(offset)
    U = X[[0, 99]]
    exact = ((X[:, None, :] - U[None, :, :]) ** 2).sum(-1)
    div = get_divergence("sqeuclidean")
    lab, mins = div.assign(X, U)
    assert np.array_equal(lab, np.argmin(exact, axis=1))
    assert np.allclose(mins, exact.min(axis=1), rtol=1e-6)
    lab2, mins2, S, W = div.assign_and_sum(X, U)
    assert np.array_equal(lab2, lab) and np.allclose(S, div.weighted_sums(X, lab, 2)[0])
    A = np.array([[2.0, 0.3], [0.3, 1.0]])
    m = get_divergence("mahalanobis", A=A)
    D = X[:, None, :] - U[None, :, :]
    assert np.allclose(m.pairwise(X, U), np.einsum("nkd,de,nke->nk", D, A, D), rtol=1e-6)


def test_nan_and_overflow_in_every_public_method():
    div = get_divergence("sqeuclidean")
    X = np.array([[1e308], [0.0], [1.0]])
    U = np.array([[1.0], [-1e308]])
    D = div.pairwise(X, U)
    assert np.array_equal(D, div.generic_pairwise(X, U))
    assert D[0, 0] == math.inf and D[1, 0] == 1.0 and D[1, 1] == math.inf
    lab, mins = div.assign(X, U)
    assert lab.tolist() == [0, 0, 0] and mins[0] == math.inf
    lab, mins, S, W = div.assign_and_sum(X, U)
    assert lab.tolist() == [0, 0, 0] and W.tolist() == [3.0, 0.0]
    for fn in (lambda: div.assign(np.array([[np.nan]]), U),
               lambda: div.pairwise(X, np.array([[np.nan]])),
               lambda: div.phi_rows(sp.csr_matrix(np.array([[np.nan, 1.0]]))),
               lambda: div.weighted_sums(np.array([[np.nan]]), [0], 1),
               lambda: div.divergence([np.nan], [1.0])):
        with pytest.raises(ValueError, match="NaN"):
            fn()


def test_unregister_never_hides_a_builtin():
    for key in ("kl", "is", "sqeuclidean", "l2sq"):
        with pytest.raises(ValueError, match="reserved"):
            register_divergence(key, phi=lambda x: x * x, dphi=lambda x: 2 * x, overwrite=True)
    register_divergence("mine_alias_owner", phi=lambda x: x * x, dphi=lambda x: 2 * x,
                        aliases=("mine_alias",))
    try:
        register_divergence("mine_alias_thief", phi=lambda x: x * x, dphi=lambda x: 2 * x,
                            aliases=("mine_alias",), overwrite=True)
        unregister_divergence("mine_alias_owner")  # must not remove the alias the thief now owns
        assert get_divergence("mine_alias").name == "mine_alias_thief"
    finally:
        for n in ("mine_alias_owner", "mine_alias_thief"):
            if n in list_divergences():
                unregister_divergence(n)
    for n, aliases in list_divergences(aliases=True).items():
        assert all(_resolve(a) == n for a in (n, *aliases))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("name, X, U", [
    ("sqeuclidean", [[1e150, 0.7]], [[1e150, 0.0], [0.0, 0.0]]),
    ("l1_subgradient", [[-1e300, 0.715]], [[-1e7, -1e7]]),
    ("kl", [[1e300, 0.7]], [[1e300, 0.5]]),
    ("itakura_saito", [[1e300, 0.7]], [[1e300, 0.5]]),
])
def test_pairwise_keeps_a_small_divergence_beside_a_huge_coordinate(name, X, U, sparse):
    """The GEMM form absorbs 0.7 next to 1e300 (it would return 0); such rows are evaluated
    again by the definition."""
    d = get_divergence(name)
    X = np.array(X)
    U = np.array(U)
    exact = d.generic_pairwise(X, U)
    assert exact[0, 0] > 0.01
    got = d.pairwise(sp.csr_matrix(X) if sparse else X, U)
    np.testing.assert_allclose(got, exact, rtol=1e-12)
