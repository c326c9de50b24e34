"""The numba kernels of the estimators, one module per family (one small kernel lives next to
its only caller: :mod:`bregclust.metrics`' dendrogram purity).

* :mod:`.generators` - the njit preset, the built-in scalar generators, generator codes and the
  function pointers through which user-registered generators reach the kernels;
* :mod:`.lloyd` - assignment, Lloyd passes, pairwise maps and the generic oracle;
* :mod:`.agglomerative` - cluster statistics and merge costs of the agglomerative models;
* :mod:`.linkage_ward`, :mod:`.linkage_generic`, :mod:`.linkage_pruned` - the agglomerative
  drivers: the nearest-neighbour chain (Ward), Muellner's generic algorithm, and the same with
  pruning bounds for sparse separable models (each compiled only when a fit runs it);
* :mod:`.centroids` - sided Bregman centroids by bisection;
* :mod:`.mixture` - the fused E-step pass of a Bregman mixture (soft assignments and sums);
* :mod:`.minibatch` - the mini-batch count update fused with the centres' GEMM parts.
* :mod:`.builtin_rows` - the phi row sums of a built-in generator without the function pointer
  (the small centres' phi, called on every iteration).

Kernels take arrays and scalars, write into buffers the caller allocates, and never validate;
the Python layers (the registry, :mod:`bregclust._execution`, the estimators) validate.
"""

from . import (
    agglomerative,
    centroids,
    generators,
    linkage_generic,
    linkage_pruned,
    linkage_ward,
    lloyd,
    mixture,
)
from .generators import (
    DOMAIN_CODES,
    JIT,
    PJIT,
    abs_phi,
    is_dphi,
    is_dphi_inv,
    is_phi,
    kl_dphi,
    kl_dphi_inv,
    kl_phi,
    make_inverse,
    sign_dphi,
    sq_dphi,
    sq_dphi_inv,
    sq_phi,
)
from .lloyd import (
    fused_argmin,
    fused_pairwise,
    generic_assigned,
    generic_pairwise,
    l1_pairwise_exact,
    lloyd_step_csr,
    lloyd_step_dense,
    map_scalar,
    map_scalar_par,
    rowsum,
    rowsum_csr,
    rowsum_par,
    weighted_sums_csr,
    weighted_sums_dense,
)

__all__ = [
    "agglomerative", "centroids", "generators", "linkage_generic", "linkage_pruned",
    "linkage_ward", "lloyd", "mixture", "DOMAIN_CODES", "JIT", "PJIT",
    "abs_phi", "is_dphi", "is_dphi_inv", "is_phi", "kl_dphi", "kl_dphi_inv", "kl_phi",
    "make_inverse", "sign_dphi", "sq_dphi", "sq_dphi_inv", "sq_phi", "fused_argmin",
    "fused_pairwise", "generic_assigned", "generic_pairwise", "l1_pairwise_exact", "lloyd_step_csr",
    "lloyd_step_dense", "map_scalar", "map_scalar_par", "rowsum", "rowsum_csr", "rowsum_par",
    "weighted_sums_csr", "weighted_sums_dense",
]
