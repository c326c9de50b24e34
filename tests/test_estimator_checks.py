"""scikit-learn's estimator checks on every single-task estimator of bregclust.

Each estimator runs scikit-learn's whole suite (``parametrize_with_checks``: one test per
check). A check an estimator cannot pass is declared in :func:`_expected_failed_checks` with a
sentence saying why; the declared failures are strict (``xfail_strict`` in pyproject.toml), so
a check that starts passing is reported and its declaration removed. Divergences and models of
every domain are covered: on R (sqeuclidean, l1_subgradient, the Gaussian models), on the
non-negative orthant (kl, multinomial) and on the positive orthant (Itakura-Saito), whose
declared failures are checked to fail for the declared reason only.
"""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import check_estimator, parametrize_with_checks

from bregclust import (
    AgglomerativeBregman,
    BisectingBregmanKMeans,
    BregmanCoclustering,
    BregmanKMeans,
    BregmanMixture,
    MiniBatchBregmanKMeans,
)

ESTIMATORS = [
    *[BregmanKMeans(2, divergence=d) for d in
      ("sqeuclidean", "kl", "l1_subgradient", "itakura_saito")],
    *[AgglomerativeBregman(2, model=m) for m in
      ("sqeuclidean", "kl", "l1_subgradient", "multinomial", "gaussian_diag", "gaussian_full",
       "itakura_saito")],
    BregmanMixture(2, random_state=0),
    BregmanMixture(2, divergence="kl", random_state=0),
    BregmanMixture(2, divergence="kl", family="poisson", random_state=0),
    MiniBatchBregmanKMeans(n_clusters=3, random_state=0, batch_size=20),
    MiniBatchBregmanKMeans(n_clusters=2, divergence="kl", random_state=0),
    BisectingBregmanKMeans(n_clusters=3, random_state=0),
    BregmanCoclustering(2, 2, divergence="sqeuclidean", n_init=2, random_state=0),
    BregmanCoclustering(2, 2, n_init=2, random_state=0),
    BregmanKMeans(2, divergence="cosine"),
    BregmanMixture(2, divergence="cosine", random_state=0),
]

# Why fitting with weights differs from fitting repeated or removed samples, per estimator.
_WEIGHT_EQUIVALENCE = {
    BregmanKMeans: (
        "k-means++ draws its seeds in proportion to the weights, so repeating a sample instead "
        "of weighting it changes the random stream and the fit may end in another local "
        "optimum; test_kmeans.py::test_sample_weight_equals_repetition checks the equivalence "
        "from fixed initial centres."),
    AgglomerativeBregman: (
        "the check gives some samples zero weight, and a zero-weight point has no statistic to "
        "merge, so the estimator refuses zero weights with a ValueError (documented); "
        "test_agglomerative.py::test_weighted_ward_equals_duplicated_points checks positive "
        "weights against duplicated points."),
    BregmanMixture: (
        "the k-means++ start draws its seeds in proportion to the weights, so repeating a "
        "sample instead of weighting it starts EM elsewhere; "
        "test_mixture.py::test_dense_sparse_and_weighted_repeats_agree checks the equivalence "
        "from a fixed start."),
    MiniBatchBregmanKMeans: (
        "batches and seeds are drawn in proportion to the weights, so repeating a sample "
        "instead of weighting it changes the random stream, as in scikit-learn's "
        "MiniBatchKMeans."),
    BisectingBregmanKMeans: (
        "each bisection seeds its two centres in proportion to the weights, so repeating a "
        "sample instead of weighting it changes the random stream, as in scikit-learn's "
        "BisectingKMeans."),
}

_COCLUSTERING_WEIGHTS = (
    "the check expects a sample_weight of shape (n_samples, 2) to be refused, but on its "
    "two-column X that is the entry-weight matrix co-clustering takes (0 = missing entry).")

_NEGATIVE_DATA = (
    "the check feeds standardised blobs with negative values whatever the positive_only tag "
    "says, and the divergence is undefined there, so the estimator refuses them with a "
    "DomainError.")

_MULTINOMIAL_ZERO_ROWS = (
    "the multinomial model normalises each row to a distribution, so a row summing to 0 (which "
    "the check's random non-negative data contain, or a single feature rounded to 0) is "
    "refused with a clear ValueError.")
_MULTINOMIAL_CHECKS = (
    "check_estimator_sparse_array", "check_estimator_sparse_matrix", "check_estimator_sparse_tag",
    "check_estimators_dtypes", "check_fit2d_1feature", "check_sample_weights_not_an_array",
    # run only when pandas is installed
    "check_sample_weights_pandas_series",
)

_MIXTURE_SPARSE = (
    "the check reads classifier tags when an estimator has predict_proba, and a density "
    "estimator has none, so the check itself raises; test_mixture.py fits sparse input.")

# scikit-learn's data for positive_only estimators are non-negative and hold exact zeros
# (``X - X.min()`` and integer data); no tag says "strictly positive". Itakura-Saito is defined
# for x > 0 only (phi = -log x), so these checks stop at the DomainError on the first zero;
# test_itakura_saito_fails_the_zero_data_checks_on_its_domain_error checks that reason.
_IS_ZERO_WHY = (
    "the check's positive_only data contain exact zeros, outside Itakura-Saito's domain "
    "x > 0, and the estimator refuses them with a DomainError naming the entry.")
_IS_ZERO_CHECKS = (
    "check_fit_score_takes_y", "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
    "check_readonly_memmap_input", "check_n_features_in_after_fitting", "check_estimators_dtypes",
    "check_sample_weights_not_an_array", "check_sample_weights_list", "check_dtype_object",
    "check_pipeline_consistency", "check_estimators_nan_inf", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_transformer_data_not_an_array",
    "check_transformer_general", "check_transformer_n_iter",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance",
    "check_fit2d_1sample", "check_fit2d_1feature", "check_dict_unchanged", "check_fit_idempotent",
    "check_fit_check_is_fitted", "check_n_features_in", "check_fit2d_predict1d",
)
_IS_ZERO_WEIGHTS_CHECK = "check_all_zero_sample_weights_error"
_IS_ZERO_WEIGHTS_WHY = (
    "the agglomerative estimator validates X before sample_weight, so the check's data, which "
    "contain exact zeros outside Itakura-Saito's domain x > 0, are refused with a DomainError "
    "before the all-zero weights are.")
_IS_PANDAS_WHY = (
    "the check's data contain exact zeros, outside Itakura-Saito's domain x > 0, and "
    "scikit-learn re-raises the DomainError under its own message; "
    "test_pandas_series_sample_weight_on_valid_data passes a Series on valid data.")


_COSINE_ZERO_ROWS = (
    "cosine scales every row to unit length, so an all-zero row (which the check's integer and "
    "sparse data contain) has no direction and is refused with a ValueError naming the row; "
    "test_cosine.py::test_zero_row_is_refused_naming_the_row checks it.")
_COSINE_CHECKS = ("check_estimators_dtypes", "check_estimator_sparse_tag",
                  "check_estimator_sparse_array", "check_estimator_sparse_matrix")


def _strictly_positive(est):
    tags = get_tags(est).input_tags
    return tags.positive_only and not tags.sparse


def _expected_failed_checks(est):
    """Checks of scikit-learn's suite that ``est`` cannot pass, each with the reason."""
    if isinstance(est, BregmanCoclustering):
        return {"check_sample_weights_shape": _COCLUSTERING_WEIGHTS}
    out = {}
    # l1_subgradient's divergence sees only the sign pattern of each centre: on the check's
    # data the weighted and the repeated fits end in the same partition, so the checks pass
    if getattr(est, "divergence", None) != "l1_subgradient":
        weights = _WEIGHT_EQUIVALENCE[type(est)]
        out["check_sample_weight_equivalence_on_dense_data"] = weights
        # scikit-learn 1.6 runs the sparse variant whatever the sparse tag says (on rows
        # without zeros, which a dense-only divergence such as Itakura-Saito accepts)
        out["check_sample_weight_equivalence_on_sparse_data"] = weights
    if get_tags(est).input_tags.positive_only and not isinstance(est, BregmanMixture):
        out["check_clustering"] = _NEGATIVE_DATA
        if "compute_labels" in est.get_params():
            out["check_clusterer_compute_labels_predict"] = _NEGATIVE_DATA
    if isinstance(est, BregmanMixture):
        out["check_estimator_sparse_array"] = _MIXTURE_SPARSE
        out["check_estimator_sparse_matrix"] = _MIXTURE_SPARSE
    if getattr(est, "divergence", None) == "cosine":
        out.update(dict.fromkeys(_COSINE_CHECKS, _COSINE_ZERO_ROWS))
    if getattr(est, "model", None) == "multinomial":
        out.update(dict.fromkeys(_MULTINOMIAL_CHECKS, _MULTINOMIAL_ZERO_ROWS))
    if _strictly_positive(est):
        out.update(dict.fromkeys(_IS_ZERO_CHECKS, _IS_ZERO_WHY))
        if "max_iter" not in est.get_params():  # the check has nothing to fit
            del out["check_transformer_n_iter"]
        out["check_sample_weights_pandas_series"] = _IS_PANDAS_WHY
        if isinstance(est, AgglomerativeBregman):
            out[_IS_ZERO_WEIGHTS_CHECK] = _IS_ZERO_WEIGHTS_WHY
    return out


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_scikit_learn_estimator_checks(estimator, check):
    # the checks' tiny random data provoke convergence and empty-cluster warnings; the checks
    # judge the results, not the warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


@pytest.mark.parametrize("est", [e for e in ESTIMATORS if _strictly_positive(e)], ids=repr)
def test_itakura_saito_fails_the_zero_data_checks_on_its_domain_error(est):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = check_estimator(est, on_fail=None)
    names = {*_IS_ZERO_CHECKS, _IS_ZERO_WEIGHTS_CHECK}
    why = {r["check_name"]: str(r["exception"]) for r in raw if r["status"] == "failed"
           and r["check_name"] in names}
    assert why, "expected the zero-data checks to fail on Itakura-Saito"
    for name, msg in why.items():
        assert "itakura_saito needs positive data" in msg and "has 0 at row" in msg, (name, msg)


def test_positive_only_tag_follows_the_divergence_or_model():
    assert get_tags(BregmanKMeans(divergence="kl")).input_tags.positive_only
    assert get_tags(AgglomerativeBregman(model="kl")).input_tags.positive_only
    assert get_tags(AgglomerativeBregman(model="multinomial")).input_tags.positive_only
    assert not get_tags(AgglomerativeBregman()).input_tags.positive_only
    assert not get_tags(BregmanKMeans()).input_tags.positive_only


@pytest.mark.parametrize("est", [BregmanKMeans(2, divergence="itakura_saito", random_state=0),
                                 AgglomerativeBregman(2, model="itakura_saito"),
                                 AgglomerativeBregman(2, model="multinomial")], ids=repr)
def test_pandas_series_sample_weight_on_valid_data(est):
    # scikit-learn's check_sample_weights_pandas_series feeds data with zeros, which these
    # models refuse (an expected failure above); on data inside their domain a Series works
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(0).gamma(2.0, 1.0, size=(30, 3)) + 0.1
    w = np.arange(1, 31, dtype=float)
    a = clone(est).fit(X, sample_weight=pd.Series(w)).labels_
    b = clone(est).fit(X, sample_weight=w).labels_
    np.testing.assert_array_equal(a, b)
