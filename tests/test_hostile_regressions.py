"""Regression tests for issue 12 (hostile input), one test per row of the issue.

Rows that crash the interpreter on the old code (segfaults) run in a subprocess, so a crash
fails the test instead of the whole session. Rows fixed in the core refactor (divergence
kernels, agglomerative models, registry) are marked ``xfail(strict=True)`` until it lands.
"""

import math
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from bregclust import (
    AgglomerativeBregman,
    BregmanKMeans,
    MultitaskBregmanClustering,
    SharedSubspaceClustering,
    SharedSubspaceTransfer,
    SpectralKernelMTC,
    bregman_kmeans_plusplus,
    bregman_linkage,
    bregman_merge_cost,
    dendrogram_purity,
    get_divergence,
    kernel_kmeans,
    project_simplex,
    register_divergence,
    similarity_matrix,
)
from bregclust.cli import main
from bregclust.metrics import ari


def _core(row):
    return pytest.mark.xfail(strict=True, reason=f"issue 12 row {row}: fixed in the core refactor")


def _run_isolated(code):
    """Run ``code`` in a fresh interpreter; return (returncode, stdout, stderr)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    prefix = "import numpy as np, scipy.sparse as sp, math\nfrom bregclust import *\n"
    r = subprocess.run([sys.executable, "-c", prefix + textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def _X(n=20, d=3, seed=0):
    return np.random.RandomState(seed).rand(n, d)


def _cli_user_error(capsys, argv):
    """Run the CLI; assert a user error: non-zero exit, one line on stderr, no traceback."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code not in (0, None)
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# ----------------------------------------------------------------------------- crashes
def test_row01_ward_overflow_is_an_error_or_valid_linkage():
    rc, out, err = _run_isolated("""
        from scipy.cluster.hierarchy import is_valid_linkage
        def ok(f):
            try:
                Z = f()
            except ValueError as e:
                assert "overflow" in str(e).lower(), e
                return
            assert is_valid_linkage(Z), Z
        ok(lambda: bregman_linkage(np.random.RandomState(0).rand(20, 3) * 1e300))
        ok(lambda: bregman_linkage(np.array([[0.], [1e155], [5.]])))
        ok(lambda: AgglomerativeBregman(2).fit(np.random.RandomState(0).rand(20, 3),
                                              sample_weight=np.full(20, 1e308)).linkage_matrix_)
        print("OK")
    """)
    assert rc == 0 and "OK" in out, err[-2000:]


def test_row02_divergence_methods_accept_non_csr_sparse():
    rc, out, err = _run_isolated("""
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


def test_row03_weighted_sums_refuses_labels_out_of_range():
    rc, out, err = _run_isolated("""
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


# ----------------------------------------------------------------------------- silent wrong results
def _offset_data(offset):
    rng = np.random.RandomState(0)
    y = np.repeat([0, 1], 50)
    return rng.normal(0, .1, (100, 2)) + y[:, None] + offset, y


@pytest.mark.parametrize("offset", [1e7, 1e8, 1e10])
def test_row04_kmeans_far_from_origin_and_inertia_matches_labels(offset):
    X, y = _offset_data(offset)
    km = BregmanKMeans(2, random_state=0).fit(X)
    assert ari(y, km.labels_) == 1.0
    brute = float(((X - km.cluster_centers_[km.labels_]) ** 2).sum())
    assert km.inertia_ == pytest.approx(brute, rel=1e-6)
    A = np.array([[2.0, 0.3], [0.3, 1.0]])
    km = BregmanKMeans(2, divergence="mahalanobis", divergence_params={"A": A},
                       random_state=0).fit(X)
    assert ari(y, km.labels_) == 1.0
    D = X - km.cluster_centers_[km.labels_]
    assert km.inertia_ == pytest.approx(float(np.einsum("ij,jk,ik->", D, A, D)), rel=1e-6)


@pytest.mark.parametrize("divergence", ["kl", "itakura_saito", "l1_subgradient"])
def test_row04_inertia_equals_objective_of_returned_labels(divergence):
    X = np.random.RandomState(3).gamma(2.0, 1.0, (60, 4)) + 0.1
    km = BregmanKMeans(3, divergence=divergence, random_state=0).fit(X)
    div = get_divergence(divergence)
    brute = sum(div.divergence(x, km.cluster_centers_[c]) for x, c in zip(X, km.labels_))
    assert km.inertia_ == pytest.approx(brute, rel=1e-12, abs=1e-12)


def test_row04_kernel_pairwise_is_accurate_far_from_origin():
    X, _ = _offset_data(1e8)
    U = X[[0, 99]]
    exact = ((X[:, None, :] - U[None, :, :]) ** 2).sum(-1)
    D = get_divergence("sqeuclidean").pairwise(X, U)
    assert np.allclose(D, exact, rtol=1e-6, atol=1e-6)


def test_row05_non_finite_divergences_are_not_zero():
    div = get_divergence("sqeuclidean")
    assert div.pairwise(np.array([[1e308]]), np.array([[1.0]]))[0, 0] == math.inf
    with pytest.raises(ValueError, match="NaN"):
        div.pairwise(np.array([[np.nan]]), np.array([[1.0]]))
    with pytest.warns(RuntimeWarning, match="overflow|inf"):
        BregmanKMeans(2).fit([[0], [1], [2], [1e200], [1.1e200], [1.2e200]])


def test_row06_scale_invariant_models():
    X = np.vstack([_X(10, 3, 1), _X(10, 3, 2) + 5])
    y = np.repeat([0, 1], 10)
    for s in (1e-300, 1e300):
        for div in ("sqeuclidean", "kl", "itakura_saito", "l1_subgradient"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # inertia_ overflows at 1e300
                km = BregmanKMeans(2, divergence=div, random_state=0).fit(X * s)
            km1 = BregmanKMeans(2, divergence=div, random_state=0).fit(X)
            assert np.array_equal(km.labels_, km1.labels_), (s, div)
            assert np.array_equal(km.predict(X * s), km1.labels_), (s, div)
            if div == "l1_subgradient":  # l1 sees no structure in positive data at any scale
                continue
            assert ari(y, km.labels_) == 1.0, (s, div)
            ref = km1.cluster_centers_
            got = km.cluster_centers_ / s
            assert np.allclose(got[np.argsort(got[:, 0])], ref[np.argsort(ref[:, 0])],
                               rtol=1e-12)
        for sim in ("cosine", "sqeuclidean", "kl"):
            S = similarity_matrix(X * s, similarity=sim)
            assert np.isfinite(S).all() and np.abs(S).max() > 0
            assert np.allclose(S, similarity_matrix(X, similarity=sim), rtol=1e-12, atol=1e-12)
    # exact powers of two: bit-identical
    assert np.array_equal(similarity_matrix(X * 2.0**-900), similarity_matrix(X))
    km0 = BregmanKMeans(2, random_state=0).fit(X)
    km1 = BregmanKMeans(2, random_state=0).fit(X * 2.0**-900)
    assert np.array_equal(km0.labels_, km1.labels_)
    assert np.array_equal(km0.cluster_centers_, km1.cluster_centers_ * 2.0**900)
    assert km1.inertia_ == km0.inertia_ * 2.0**-1800


def test_row06e_mtcmrl_refuses_overflowing_regression():
    from bregclust import ModelRelationClustering
    X = np.vstack([_X(10, 3, 1), _X(10, 3, 2) + 5]) * 1e300
    with pytest.raises(ValueError, match="task 0 .*overflows float64; rescale"):
        ModelRelationClustering(2, random_state=0).fit([X, X])
    est = ModelRelationClustering(2, lam=0.0, random_state=0).fit([X, X])
    assert np.isfinite(est.objective_history_).all()


def test_row06b_agglomerative_gaussian_models_scale_invariant():
    X = np.vstack([_X(10, 3, 1), _X(10, 3, 2) + 5])
    for model in ("gaussian_diag", "gaussian_full"):
        for s in (1e300, 1e-300):
            agg = AgglomerativeBregman(2, model=model).fit(X * s)
            assert sorted(np.bincount(agg.labels_)) == [10, 10]


def test_row07_builtin_aliases_are_reserved():
    import bregclust.divergences as D
    saved = dict(D._REGISTRY), dict(D._ALIASES)
    try:
        with pytest.raises(ValueError, match="kl"):
            register_divergence("mine_row7", phi=lambda x: x * x, dphi=lambda x: 2 * x,
                                aliases=("kl",), overwrite=True)
        assert get_divergence("kl").name == "kl"
    finally:  # never leave the registry hijacked for the other tests
        D._REGISTRY.clear()
        D._REGISTRY.update(saved[0])
        D._ALIASES.clear()
        D._ALIASES.update(saved[1])


def test_row08_cone_smoothing_point_is_domain_checked():
    X = _X() + 0.1
    with pytest.raises(ValueError, match="smoothing"):
        AgglomerativeBregman(2, model="kl", smoothing=(0.5, -100., "cone")).fit(X)
    try:
        agg = AgglomerativeBregman(2, model="kl").fit(X, sample_weight=np.full(20, 1e308))
    except ValueError as e:
        assert "overflow" in str(e) or "sample_weight" in str(e)
    else:
        assert len(np.unique(agg.labels_)) == 2


def test_row09_merge_cost_member_indices():
    X = _X()
    with pytest.raises(ValueError, match="duplicate|twice"):
        bregman_merge_cost(X, [0, 0, 0], [3, 4, 5])
    with pytest.raises((ValueError, TypeError), match="integer"):
        bregman_merge_cost(X, [0.9], [3])
    with pytest.raises(ValueError, match="range|-1"):
        bregman_merge_cost(X, [-1], [19])
    with pytest.raises(ValueError, match="1-D"):
        bregman_merge_cost(X, [[0, 1]], [3])


def test_row10_cli_csv_with_partly_non_numeric_first_row(tmp_path, capsys):
    p = tmp_path / "bad.csv"
    p.write_text("1,2,x\n4,5,6\n7,8,9\n10,11,12\n13,14,15\n")
    line = _cli_user_error(capsys, ["fit", str(p), "-k", "2", "-o", str(tmp_path / "l.txt")])
    assert "bad.csv, line 1" in line
    assert not (tmp_path / "l.txt").exists()
    # a fully non-numeric first row is still a header
    p.write_text("a,b,c\n1,2,3\n4,5,6\n7,8,9\n10,11,12\n")
    assert main(["fit", str(p), "-k", "2", "-o", str(tmp_path / "l.txt"), "--quiet"]) == 0
    assert np.loadtxt(tmp_path / "l.txt").shape == (4,)


def test_row11_nan_parameters_are_refused():
    Xs = [_X(), _X(seed=1)]
    with pytest.raises(ValueError, match="lam must be a number, got NaN"):
        SharedSubspaceClustering(2, lam=float("nan")).fit(Xs)
    with pytest.raises(ValueError, match="tol must be a number"):
        BregmanKMeans(2, tol=float("nan")).fit(_X())
    with pytest.raises(ValueError, match="distance_threshold must be a number"):
        AgglomerativeBregman(None, distance_threshold=float("nan")).fit(_X())
    with pytest.raises(ValueError, match="tie_tol must be a number"):
        from bregclust.kernel_mtc import spectral_kernel_weights
        spectral_kernel_weights(np.arange(5.), np.ones(5), 1.0, 2.0, tie_tol=float("nan"))
    with pytest.raises(ValueError, match="eigen_tol must be a number"):
        SpectralKernelMTC(2, eigen_tol=float("nan")).fit(Xs)
    with pytest.raises(ValueError, match="b must be a number"):
        SpectralKernelMTC(2, b=float("nan")).fit(Xs)
    with pytest.raises(ValueError, match="C must be a number"):
        SpectralKernelMTC(2, C=float("nan")).fit(Xs)


def test_row12_multinomial_transform_refuses_what_fit_refuses():
    agg = AgglomerativeBregman(2, model="multinomial").fit(_X() + 0.1)
    with pytest.raises(ValueError, match="sums to 0"):
        agg.transform(np.zeros((1, 3)))


def test_row13_kernel_kmeans_nan_kernel():
    with pytest.raises(ValueError, match="K contains NaN or infinity"):
        kernel_kmeans(np.full((4, 4), np.nan), 2)


def test_row14_l1_divergence_of_identical_tiny_values():
    div = get_divergence("l1")
    assert div.divergence([1e-200], [1e-200]) == 0.0
    assert div.divergence([-0.5], [-5e-324]) == div.pairwise(np.array([[-0.5]]),
                                                             np.array([[-5e-324]]))[0, 0]


def test_row15_unreseedable_empty_cluster_keeps_its_centre():
    # Only two points carry weight, so a third cluster can never be re-seeded.
    X = np.array([[0.0], [10.0], [20.0], [30.0]])
    w = np.array([1.0, 1.0, 0.0, 0.0])
    init = np.array([[0.0], [10.0], [25.0]])
    with pytest.warns(UserWarning, match="could not be re-seeded.*keep their previous centres"):
        km = BregmanKMeans(3, init=init, random_state=0).fit(X, sample_weight=w)
    assert km.cluster_centers_[2, 0] == 25.0  # previous centre, not the origin
    assert km.inertia_ == 0.0


def test_row16_cli_tracebacks(tmp_path, capsys):
    ok = tmp_path / "ok.npy"
    np.save(ok, _X())
    for name in ("empty.npy", "empty.npz"):
        (tmp_path / name).write_bytes(b"")
        assert "empty (0 bytes)" in _cli_user_error(capsys, ["fit", str(tmp_path / name)])
    assert "--n-init must be >= 1" in _cli_user_error(capsys, ["fit", str(ok), "--n-init", "0"])
    (tmp_path / "x.csv").mkdir()
    assert "is a directory" in _cli_user_error(capsys, ["fit", str(tmp_path / "x.csv")])
    assert "is a directory" in _cli_user_error(
        capsys, ["fit", str(ok), "-k", "2", "-o", str(tmp_path / "x.csv")])
    assert "not a directory" in _cli_user_error(
        capsys, ["fit", str(ok), "-k", "2", "--output-dir", str(ok)])


def test_row17_cli_messages(tmp_path, capsys):
    ok = tmp_path / "ok.npy"
    np.save(ok, _X())
    assert "-k/--n-clusters must be a positive integer" in _cli_user_error(
        capsys, ["fit", str(ok), "-k", "abc"])
    assert "unknown method group(s) bogus" in _cli_user_error(
        capsys, ["demo", "--methods", "bogus"])
    np.save(tmp_path / "one.npy", np.arange(5.0))
    assert "shape (5,)" in _cli_user_error(capsys, ["fit", str(tmp_path / "one.npy")])
    np.save(tmp_path / "c.npy", np.ones((4, 2)) * 1j)
    assert "complex" in _cli_user_error(capsys, ["fit", str(tmp_path / "c.npy")])
    (tmp_path / "r.npz").write_bytes(np.random.RandomState(0).bytes(300))
    line = _cli_user_error(capsys, ["fit", str(tmp_path / "r.npz")])
    assert "not a .npz archive" in line and "allow_pickle" not in line
    assert "--mahalanobis-matrix" in _cli_user_error(
        capsys, ["fit", str(ok), "-k", "2", "--divergence", "mahalanobis"])
    assert "--output-dir" in _cli_user_error(
        capsys, ["fit", str(ok), str(ok), "-k", "2", "-o", str(tmp_path / "l.txt")])


def test_row18_mahalanobis_matrix_of_wrong_size():
    with pytest.raises(ValueError, match=r"A must be \(n_features, n_features\)"):
        BregmanKMeans(2, divergence="mahalanobis", divergence_params={"A": np.eye(2)}).fit(_X())


def test_row19_kmeans_overflow_is_reported_as_overflow():
    X = np.random.RandomState(0).rand(20, 3) * 1e300
    try:
        with pytest.warns(RuntimeWarning, match="overflowed"):
            BregmanKMeans(2, random_state=0).fit(X)
    except ValueError as e:  # an error is fine too, if it names the overflow
        assert "smoothing" not in str(e) and "overflow" in str(e)


def test_row19_partition_emd_overflow_is_not_a_domain_problem():
    from bregclust import partition_emd
    U1, U2 = np.array([[1e300], [0.]]), np.array([[-1e300], [1.]])
    with pytest.raises(ValueError, match="overflow"):
        partition_emd(U1, [.5, .5], U2, [.5, .5])


def test_row20_parameters_fail_early():
    Xs = [_X(), _X(seed=1)]
    with pytest.raises(ValueError, match="b must be a number"):
        SpectralKernelMTC(2, b=float("nan")).fit(Xs)
    with pytest.raises(ValueError, match="use a smaller C"):
        SpectralKernelMTC(2, C=1e300).fit(Xs)
    with pytest.raises(ValueError, match="init_offset must be a number"):
        SharedSubspaceClustering(2, init_offset=float("nan")).fit(Xs)
    with pytest.raises(TypeError, match="init must be 'k-means\\+\\+', 'random' or an array"):
        BregmanKMeans(2, init=None).fit(_X())
    with pytest.raises(TypeError, match="smoothing must be a string or a tuple"):
        AgglomerativeBregman(2, smoothing=1.0).fit(_X())
    with pytest.raises(TypeError, match="model_params must be a dict"):
        AgglomerativeBregman(2, model_params="abc").fit(_X())
    est = SpectralKernelMTC(2).fit(Xs)
    with pytest.raises(ValueError, match="task must be <= 1, got 5"):
        est.kernel_matrix(task=5)


def test_row21_misleading_messages():
    Xs = [_X(), _X(seed=1)]
    with pytest.raises(TypeError, match="X is None; pass a 2-D array"):
        BregmanKMeans(2).fit(None)
    with pytest.raises(TypeError, match="init is one 2-D array but there are 2 tasks"):
        MultitaskBregmanClustering(2, init=_X()[:2]).fit(Xs)
    for tasks in ({0: Xs[0], 1: Xs[1]}, "abc"):
        with pytest.raises(TypeError, match="Xs must be a list of 2-D arrays"):
            MultitaskBregmanClustering(2).fit(tasks)
    with pytest.raises(TypeError, match="n_clusters must be an integer, got '2'"):
        BregmanKMeans("2").fit(_X())
    with pytest.raises(TypeError, match="aliases must be a sequence of strings"):
        register_divergence("row21", phi=lambda x: x * x, dphi=lambda x: 2 * x, aliases=None)


def test_row22_kmeans_plusplus_parameters_and_project_simplex():
    X = _X()
    with pytest.raises(ValueError, match="smoothing must be >= 0.0"):
        bregman_kmeans_plusplus(X, 2, smoothing=-1)
    with pytest.raises(ValueError, match="smoothing must be a number, got NaN"):
        bregman_kmeans_plusplus(X, 2, smoothing=float("nan"))
    c_auto, _ = bregman_kmeans_plusplus(X, 2, smoothing="auto", random_state=0)
    c_zero, _ = bregman_kmeans_plusplus(X, 2, smoothing=0.0, random_state=0)
    assert np.array_equal(c_auto, c_zero)  # "auto" is 0 on R
    with pytest.raises(ValueError, match="n_local_trials must be >= 1"):
        bregman_kmeans_plusplus(X, 2, n_local_trials=-1)
    with pytest.raises(ValueError, match="sample_weight sums to infinity"):
        bregman_kmeans_plusplus(X, 2, sample_weight=np.full(20, 1e308))
    with pytest.raises(ValueError, match="radius must be finite"):
        project_simplex([1, 2], math.inf)


def test_row23_silently_accepted_parameters():
    Xs = [_X(), _X(seed=1)]
    with pytest.raises(ValueError, match="tol must be a number"):
        MultitaskBregmanClustering(2, tol=float("nan")).fit(Xs)
    with pytest.raises(ValueError, match="distance_threshold must be a number"):
        AgglomerativeBregman(None, distance_threshold=float("nan")).fit(_X())
    with pytest.raises(ValueError, match="verbose must be >= 0"):
        BregmanKMeans(2, verbose=-1).fit(_X())
    from bregclust import ModelRelationClustering
    with pytest.raises(ValueError, match="verbose must be >= 0"):
        ModelRelationClustering(2, verbose=-1).fit(Xs)
    with pytest.raises(TypeError, match="n_clusters for task 1 must be an integer, got 2.0"):
        MultitaskBregmanClustering([2, 2.0]).fit(Xs)
    y = np.r_[np.repeat([0.0, 1.0], 9), np.nan, np.nan]
    with pytest.raises(ValueError, match="y has a missing label"):
        SharedSubspaceTransfer(n_components=2).fit(np.vstack([_X(), _X(seed=1)]),
                                                   np.r_[y, np.full(20, -1.0)])
    with pytest.raises(ValueError, match="y has a missing label"):
        dendrogram_purity(bregman_linkage(_X()), np.r_[np.zeros(19), np.nan])


def _expected_failures(est):
    """Checks that cannot pass, with the reason (scikit-learn's ``expected_failed_checks``)."""
    out = {
        "check_sample_weight_equivalence_on_dense_data":
            "k-means and Ward-type merges from a random start are not invariant to repeating a "
            "sample: the seeding draws differ (the weighted and repeated data are different "
            "inputs to D-sampling), so labels may differ while both are valid local optima.",
        "check_sample_weight_equivalence_on_sparse_data":
            "same as check_sample_weight_equivalence_on_dense_data.",
    }
    from sklearn.utils import get_tags
    if get_tags(est).input_tags.positive_only:
        out["check_clustering"] = (
            "check_clustering feeds standardised blobs with negative values and does not "
            "honour the positive_only tag; kl/Itakura-Saito/multinomial are undefined there.")
    if getattr(est, "model", None) == "multinomial":
        why = ("the multinomial model normalises each row to a distribution, so a row summing "
               "to 0 (which these checks' random non-negative data contain, or one feature "
               "rounded to 0) is refused with a clear ValueError.")
        for name in ("check_estimator_sparse_array", "check_estimator_sparse_matrix",
                     "check_estimator_sparse_tag", "check_estimators_dtypes",
                     "check_fit2d_1feature", "check_sample_weights_not_an_array",
                     # only run when pandas is installed (not in the tox environments)
                     "check_sample_weights_pandas_series"):
            out[name] = why
        out["check_positive_only_tag_during_fit"] = (
            "the multinomial model's negative-data message (agglomerative.py, core refactor) "
            "does not yet contain scikit-learn's 'Negative values in data'.")
    if _strictly_positive(est):
        for name in _IS_ZERO_CHECKS:
            out.setdefault(name, _IS_ZERO_WHY)
        # run only with pandas installed; scikit-learn re-raises the domain error under its
        # own message (test_pandas_series_sample_weight_on_valid_data covers valid data)
        out["check_sample_weights_pandas_series"] = _IS_ZERO_WHY
    return out


# scikit-learn's data for positive_only estimators are non-negative and hold exact zeros
# (``X - X.min()`` and integer data); no tag says "strictly positive". Itakura-Saito is defined for
# x > 0 only (phi = -log x), so these checks stop at the clear DomainError on the first zero.
# test_row24_check_estimator asserts that each of them fails for exactly that reason.
_IS_ZERO_WHY = ("the check's positive_only data contain exact zeros, outside Itakura-Saito's "
                "domain x > 0; the estimator refuses them with a DomainError naming the entry.")
_IS_ZERO_CHECKS = (
    "check_fit_score_takes_y", "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
    "check_readonly_memmap_input", "check_n_features_in_after_fitting", "check_estimators_dtypes",
    "check_sample_weights_not_an_array", "check_sample_weights_list",
    "check_all_zero_sample_weights_error", "check_dtype_object", "check_pipeline_consistency",
    "check_estimators_nan_inf", "check_estimators_pickle", "check_f_contiguous_array_estimator",
    "check_transformer_data_not_an_array", "check_transformer_general",
    "check_transformer_n_iter", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_fit2d_1sample", "check_fit2d_1feature",
    "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted",
    "check_n_features_in", "check_fit2d_predict1d", "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weight_equivalence_on_sparse_data",
)


def _strictly_positive(est):
    from sklearn.utils import get_tags
    return get_tags(est).input_tags.positive_only and not get_tags(est).input_tags.sparse


@pytest.mark.parametrize("est", [
    *[BregmanKMeans(2, divergence=d, n_init=1) for d in ("sqeuclidean", "kl", "l1_subgradient")],
    *[AgglomerativeBregman(2, model=m) for m in
      ("sqeuclidean", "kl", "l1_subgradient", "multinomial", "gaussian_diag", "gaussian_full")],
    *[BregmanKMeans(2, divergence="itakura_saito", n_init=1),
      AgglomerativeBregman(2, model="itakura_saito")],
], ids=repr)
def test_row24_check_estimator(est):
    from sklearn.utils.estimator_checks import check_estimator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = check_estimator(est, expected_failed_checks=_expected_failures(est), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in res if r["status"] == "failed"]
    assert failed == []
    if _strictly_positive(est):
        # the declared Itakura-Saito failures fail for the declared reason and no other
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = check_estimator(est, on_fail=None)
        why = {r["check_name"]: str(r["exception"]) for r in raw if r["status"] == "failed"
               and r["check_name"] in _IS_ZERO_CHECKS and "sample_weight_equivalence" not in
               r["check_name"]}
        assert why, "expected the zero-data checks to fail on Itakura-Saito"
        for name, msg in why.items():
            assert "itakura_saito needs positive data" in msg and "has 0 at row" in msg, (name, msg)


def test_row24_tags():
    from sklearn.utils import get_tags
    assert get_tags(BregmanKMeans(divergence="kl")).input_tags.positive_only
    assert get_tags(AgglomerativeBregman(model="kl")).input_tags.positive_only
    assert get_tags(AgglomerativeBregman(model="multinomial")).input_tags.positive_only
    assert not get_tags(AgglomerativeBregman()).input_tags.positive_only
    assert not get_tags(BregmanKMeans()).input_tags.positive_only


@pytest.mark.slow
def test_row25_register_fit_unregister_does_not_leak():
    rc, out, err = _run_isolated("""
        def rss():
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * 4096 / 2**20
        X = np.random.RandomState(0).rand(50, 3)
        def cycle(i):
            register_divergence(f"leak{i}", phi=lambda x: x * x, dphi=lambda x: 2 * x)
            BregmanKMeans(2, divergence=f"leak{i}", random_state=0).fit(X)
            unregister_divergence(f"leak{i}")
        for i in range(3):
            cycle(i)
        import gc; gc.collect()
        before = rss()
        for i in range(3, 13):
            cycle(i)
        gc.collect()
        print("GROWTH", (rss() - before) / 10)
    """)
    assert rc == 0, err[-2000:]
    growth = float(out.split("GROWTH")[1])
    assert growth < 1.0  # MiB per cycle (the issue measured ~4.4)


def test_row26_messages_say_an_integer():
    with pytest.raises(TypeError, match="max_iter must be an integer, got True"):
        BregmanKMeans(2, max_iter=True).fit(_X())
    with pytest.raises(TypeError, match="n_init must be an integer"):
        BregmanKMeans(2, n_init=2.5).fit(_X())


# ----------------------------------------------------------------------------- the same defect
# classes elsewhere in the core (issue 12: "assume there are more of each kind")
@pytest.mark.parametrize("name", ["sqeuclidean", "kl", "itakura_saito", "l1_subgradient"])
def test_row02_every_public_method_any_format_dtype_and_layout(name):
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


def test_row03_label_arrays_everywhere():
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
def test_row04_public_methods_and_mbc_far_from_origin(offset):
    X, y = _offset_data(offset)
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
    # MBC runs the same Lloyd loop: it centres the tasks by one common offset
    Xs = [X, _offset_data(offset)[0][::-1].copy()]
    for lam in (0.0, 1.0):
        est = MultitaskBregmanClustering(2, lam=lam, random_state=0).fit(Xs)
        assert ari(y, est.labels_[0]) == 1.0 and ari(y[::-1], est.labels_[1]) == 1.0
        if lam == 0.0:  # independent tasks: the centres are the cluster means
            C = est.cluster_centers_[0][np.argsort(est.cluster_centers_[0][:, 0])]
            assert np.allclose(C, [X[y == 0].mean(0), X[y == 1].mean(0)], rtol=1e-14, atol=0)


def test_row05_nan_and_overflow_in_every_public_method():
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


def test_row07_unregister_never_hides_a_builtin():
    import bregclust.divergences as Dv
    from bregclust import unregister_divergence
    for key in ("kl", "is", "sqeuclidean", "l2sq"):
        with pytest.raises(ValueError, match="reserved"):
            register_divergence(key, phi=lambda x: x * x, dphi=lambda x: 2 * x, overwrite=True)
    register_divergence("mine_row7b", phi=lambda x: x * x, dphi=lambda x: 2 * x,
                        aliases=("mine7",))
    try:
        register_divergence("mine_row7c", phi=lambda x: x * x, dphi=lambda x: 2 * x,
                            aliases=("mine7",), overwrite=True)
        unregister_divergence("mine_row7b")  # must not remove the alias now owned by 7c
        assert get_divergence("mine7").name == "mine_row7c"
    finally:
        for n in ("mine_row7b", "mine_row7c"):
            if n in Dv._REGISTRY:
                unregister_divergence(n)
    for n, d in Dv._REGISTRY.items():
        assert all(Dv._ALIASES[a] == n for a in (n, *d.aliases))


def test_row21_domain_advice_only_where_the_parameter_exists():
    from bregclust import DomainError, partition_emd
    with pytest.raises(DomainError, match="needs positive centres") as e:
        partition_emd([[1.0]], [1], [[0.0]], [1], "kl")
    assert "smoothing" not in str(e.value)
    with pytest.raises(DomainError, match="Move the initial centres inside the domain"):
        BregmanKMeans(1, divergence="kl", init=[[0.0, 1.0, 1.0]]).fit(_X())


@pytest.mark.parametrize("est", [BregmanKMeans(2, divergence="itakura_saito", random_state=0),
                                 AgglomerativeBregman(2, model="itakura_saito"),
                                 AgglomerativeBregman(2, model="multinomial")], ids=repr)
def test_pandas_series_sample_weight_on_valid_data(est):
    # scikit-learn's check_sample_weights_pandas_series feeds data with zeros, which these
    # models refuse (expected failure above); on data inside their domain a Series works
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(0).gamma(2.0, 1.0, size=(30, 3)) + 0.1
    w = np.arange(1, 31, dtype=float)
    a = clone(est).fit(X, sample_weight=pd.Series(w)).labels_
    b = clone(est).fit(X, sample_weight=w).labels_
    np.testing.assert_array_equal(a, b)
