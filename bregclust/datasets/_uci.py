"""Readers of the UCI tables (glass, spambase) and of the MNIST test set (idx files)."""

import functools
import gzip
import re
import struct

import numpy as np
from sklearn.utils import Bunch

from ._base import data_file

# --------------------------------------------------------------------------------------------
# UCI glass, spambase, MNIST
# --------------------------------------------------------------------------------------------

_GLASS_TYPES = {
    1: "building_windows_float_processed",
    2: "building_windows_non_float_processed",
    3: "vehicle_windows_float_processed",
    4: "vehicle_windows_non_float_processed",
    5: "containers",
    6: "tableware",
    7: "headlamps",
}


def load_glass():
    """Load UCI Glass Identification: 214 x 9 (RI and 8 oxide percentages), 6 types present.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (214, 9) float64, ``y`` int64 ``0..5`` indexing ``target_names`` (types 1, 2, 3,
        5, 6, 7), ``types`` (the original type numbers), ``feature_names``, ``description``.
    """
    path = data_file("uci_glass/glass.data", "UCI glass")
    D = np.loadtxt(path, delimiter=",")
    types = D[:, 10].astype(np.int64)
    classes = np.unique(types)
    return Bunch(
        X=np.ascontiguousarray(D[:, 1:10]),
        y=np.searchsorted(classes, types).astype(np.int64),
        types=types,
        target_names=[_GLASS_TYPES[int(c)] for c in classes],
        feature_names=["RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe"],
        description=f"UCI glass ({path}): 214 samples x 9 features (Id column dropped), "
        f"{len(classes)} glass types present.",
    )


def load_spambase():
    """Load UCI Spambase: 4601 x 57 non-negative features, labels 0 = non-spam, 1 = spam.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (4601, 57) float64, ``y`` int64, ``target_names``, ``feature_names``, ``description``.
    """
    path = data_file("uci_spambase/spambase.data", "UCI spambase")
    D = np.loadtxt(path, delimiter=",")
    names = []
    try:
        with open(path.with_name("spambase.names"), encoding="latin-1") as fh:
            names = [ln.split(":")[0].strip() for ln in fh if re.match(r"^[a-z_]+\S*:\s", ln)]
    except OSError:
        pass
    if len(names) != 57:
        names = [f"f{i}" for i in range(57)]
    return Bunch(
        X=np.ascontiguousarray(D[:, :57]),
        y=D[:, 57].astype(np.int64),
        target_names=["non-spam", "spam"],
        feature_names=names,
        description=f"UCI spambase ({path}): 4601 e-mails x 57 features (48 word and 6 char "
        "frequencies in %, 3 capital-run statistics), 2 classes.",
    )


def _read_idx(path):
    with gzip.open(path, "rb") as fh:
        b = fh.read()
    nd = b[3]
    dims = struct.unpack(">" + "I" * nd, b[4: 4 + 4 * nd])
    return np.frombuffer(b[4 + 4 * nd:], dtype=np.uint8).reshape(dims)


@functools.lru_cache(maxsize=1)
def _mnist_test_raw(img, lab):
    return _read_idx(img), _read_idx(lab)


def load_mnist_test():
    """Load the MNIST test set: 10,000 x 784 pixel intensities 0..255 (float64), digits 0..9.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (10000, 784) float64, ``y`` int64 digit, ``images`` (10000, 28, 28) uint8,
        ``target_names``, ``description``.
    """
    img = data_file("digits_mnist/t10k-images-idx3-ubyte.gz", "MNIST test images")
    lab = data_file("digits_mnist/t10k-labels-idx1-ubyte.gz", "MNIST test labels")
    images, labels = _mnist_test_raw(str(img), str(lab))
    return Bunch(
        X=images.reshape(images.shape[0], -1).astype(np.float64),
        y=labels.astype(np.int64),
        images=images.copy(),
        target_names=[str(d) for d in range(10)],
        description="MNIST test set (LeCun et al.), 10000 images 28x28, raw intensities 0..255.",
    )


def load_mnist35(downscale=True):
    """The 3s and 5s of the MNIST test set (1,902 images), as in the agglomerative paper.

    Parameters
    ----------
    downscale : bool, default=True
        Average 4x4 pixel blocks: 28x28 -> 7x7 = 49 features (intensities stay on 0..255).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (1902, 49 or 784) float64, ``y`` int64 (0 = digit 3, 1 = digit 5),
        ``digits`` (3 or 5), ``target_names`` ``['3', '5']``, ``description``.
    """
    d = load_mnist_test()
    keep = np.flatnonzero(np.isin(d.y, (3, 5)))
    imgs = d.images[keep].astype(np.float64)
    if downscale:
        X = imgs.reshape(-1, 7, 4, 7, 4).mean(axis=(2, 4)).reshape(-1, 49)
    else:
        X = imgs.reshape(-1, 784)
    digits = d.y[keep]
    return Bunch(
        X=np.ascontiguousarray(X),
        y=(digits == 5).astype(np.int64),
        digits=digits,
        target_names=["3", "5"],
        description=f"MNIST test set digits 3 ({np.sum(digits == 3)}) and 5 "
        f"({np.sum(digits == 5)}); "
        + ("downscaled 28x28 -> 7x7 by 4x4 block averaging (49 features)" if downscale
           else "full 784 pixels") + ", intensities 0..255.",
    )

