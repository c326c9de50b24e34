"""Synthetic multi-task generators and loaders of the real benchmark data.

Real data live outside the repository, in ``../shared/data`` (see ``DATA.md`` and each folder's
``PROVENANCE.txt`` there); the environment variable ``BREGCLUST_DATA`` overrides the location.
A loader whose file is missing raises :class:`FileNotFoundError` saying where it looked.

Single-data-set loaders return a :class:`sklearn.utils.Bunch` with ``X`` (dense float64 ndarray,
or CSR float64 for text), ``y`` (int64 labels ``0..K-1`` indexing ``target_names``),
``target_names`` and ``description``.  Multi-task loaders return a Bunch with ``Xs`` (one matrix
per task, all with the same columns), ``ys`` (int64 labels per task; ``ys[t]`` indexes
``target_names[t]``, and a class that occurs in several tasks has the same label in each of them),
``target_names`` (one list per task), ``task_names`` and ``description`` (the preprocessing).

One module per source kind: ``_base`` (the data home and the on-disk caches), ``_text`` (the text
corpora: CLUTO, 20 Newsgroups, WebKB4, MALSAR, Reuters), ``_uci`` (UCI tables and MNIST),
``_tasks`` (the papers' multi-task splits) and ``_synthetic`` (generators needing no download).
Import the public functions from :mod:`bregclust.datasets`.
"""

from ._base import get_data_home
from ._synthetic import make_digits_tasks, make_multitask_blobs
from ._tasks import MBC_NAMES, MTCMRL_NAMES, load_mbc_tasks, load_mtcmrl_tasks
from ._text import (
    CLUTO_NAMES,
    MALSAR_PROBLEMS,
    load_20newsgroups,
    load_cluto,
    load_malsar,
    load_reuters_cai,
    load_reuters_r52,
    load_webkb4,
)
from ._uci import load_glass, load_mnist35, load_mnist_test, load_spambase

__all__ = [
    "get_data_home",
    "load_cluto",
    "load_20newsgroups",
    "load_webkb4",
    "load_malsar",
    "load_reuters_r52",
    "load_reuters_cai",
    "load_glass",
    "load_spambase",
    "load_mnist_test",
    "load_mnist35",
    "load_mbc_tasks",
    "load_mtcmrl_tasks",
    "make_digits_tasks",
    "make_multitask_blobs",
    "CLUTO_NAMES",
    "MBC_NAMES",
    "MTCMRL_NAMES",
    "MALSAR_PROBLEMS",
]
