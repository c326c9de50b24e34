"""bregclust: clustering with Bregman divergences and multi-task clustering."""

from ._validation import DomainError, EmptyClusterWarning
from .divergences import (
    Divergence,
    divergence_table,
    get_divergence,
    list_divergences,
    register_divergence,
    unregister_divergence,
)
from .kmeans import BregmanKMeans, bregman_kmeans_plusplus

__version__ = "0.1.0"

__all__ = [
    "BregmanKMeans",
    "bregman_kmeans_plusplus",
    "Divergence",
    "DomainError",
    "EmptyClusterWarning",
    "divergence_table",
    "get_divergence",
    "list_divergences",
    "register_divergence",
    "unregister_divergence",
]
