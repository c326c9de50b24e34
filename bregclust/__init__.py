"""bregclust: clustering with Bregman divergences and multi-task clustering."""

from ._validation import DomainError, EmptyClusterWarning
from .agglomerative import (
    AgglomerativeBregman,
    bregman_linkage,
    bregman_merge_cost,
    dendrogram_purity,
)
from .bisecting import BisectingBregmanKMeans
from .coclustering import BregmanCoclustering
from .divergences import (
    Divergence,
    divergence_table,
    get_divergence,
    list_divergences,
    register_divergence,
    unregister_divergence,
)
from .kernel_mtc import LNKMTC, LSKMTC, NonparametricKernelMTC, SpectralKernelMTC, kernel_kmeans
from .kmeans import BregmanKMeans, bregman_kmeans_plusplus
from .mbc import MultitaskBregmanClustering, multitask_bregman_clustering
from .metrics import ari, clustering_accuracy, clustering_scores, nmi, partition_emd
from .minibatch import MiniBatchBregmanKMeans
from .mixture import BregmanMixture, select_n_clusters
from .model_relation import (
    ModelRelationClustering,
    SymmetricNMF,
    project_simplex,
    similarity_matrix,
)
from .shared_subspace import LSSMTC, LSSTTC, SharedSubspaceClustering, SharedSubspaceTransfer
from .spectral_mtc import SpectralMTC

__version__ = "0.1.0"

__all__ = [
    "MultitaskBregmanClustering",
    "multitask_bregman_clustering",
    "LSSMTC",
    "LSSTTC",
    "SharedSubspaceClustering",
    "SharedSubspaceTransfer",
    "ModelRelationClustering",
    "SymmetricNMF",
    "project_simplex",
    "similarity_matrix",
    "AgglomerativeBregman",
    "bregman_linkage",
    "bregman_merge_cost",
    "dendrogram_purity",
    "LNKMTC",
    "LSKMTC",
    "NonparametricKernelMTC",
    "SpectralKernelMTC",
    "SpectralMTC",
    "kernel_kmeans",
    "BregmanKMeans",
    "bregman_kmeans_plusplus",
    "BregmanMixture",
    "select_n_clusters",
    "MiniBatchBregmanKMeans",
    "BisectingBregmanKMeans",
    "BregmanCoclustering",
    "Divergence",
    "DomainError",
    "EmptyClusterWarning",
    "ari",
    "clustering_accuracy",
    "clustering_scores",
    "nmi",
    "partition_emd",
    "divergence_table",
    "get_divergence",
    "list_divergences",
    "register_divergence",
    "unregister_divergence",
]
