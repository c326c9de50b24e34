"""Where the data are, and the two on-disk cache formats of the loaders.

The data home is ``$BREGCLUST_DATA`` or the first existing ``shared/data`` folder near the working
directory or the package. Caches never live inside the repository: ``cache_dir`` (or
``$BREGCLUST_CACHE``) names the folder. Two formats are written there, each atomically (a
temporary file renamed into place) and each rebuilt when unreadable:

* a pickle of parsed texts (the 20 Newsgroups tarball), keyed by the tarball's path, size and
  modification time;
* a count matrix as ``.npz`` plus its terms as ``.json``, keyed by the source files' signature,
  the document set and the vectoriser's parameters (also memoised in memory).
"""

import hashlib
import json
import os
import pickle
from pathlib import Path

import numpy as np
import scipy.sparse as sp

_ENV = "BREGCLUST_DATA"
_CACHE_ENV = "BREGCLUST_CACHE"


def _candidate_homes():
    cwd = Path.cwd()
    pkg = Path(__file__).resolve().parent.parent  # the bregclust package folder
    return [cwd / ".." / "shared" / "data", cwd / "shared" / "data", pkg / ".." / ".." / "shared" / "data"]


def get_data_home():
    """Return the folder holding the real data sets.

    Returns
    -------
    path : pathlib.Path
        ``$BREGCLUST_DATA`` when that variable is set (whether or not it exists); otherwise the
        first existing folder among ``<cwd>/../shared/data``, ``<cwd>/shared/data`` and
        ``<package>/../../shared/data``; if none exists, the first of them (loaders then raise
        :class:`FileNotFoundError` naming every place they looked).
    """
    env = os.environ.get(_ENV)
    if env:
        return Path(env).expanduser()
    candidates = _candidate_homes()
    for c in candidates:
        if c.is_dir():
            return c.resolve()
    return candidates[0].resolve()


def data_file(relpath, what):
    """Absolute path of ``relpath`` under the data home, or a FileNotFoundError saying where."""
    home = get_data_home()
    path = home / relpath
    if path.exists():
        return path
    env = os.environ.get(_ENV)
    if env:
        where = f"{path} (from the environment variable {_ENV}={env!r})"
    else:
        looked = ", ".join(str(c.resolve()) for c in _candidate_homes())
        where = f"{path}; data folders tried, first existing wins: {looked}"
    raise FileNotFoundError(
        f"{what}: {relpath!r} not found. Looked at {where}. Point the environment variable "
        f"{_ENV} at the folder holding the data sets (the one containing DATA.md and "
        f"{Path(relpath).parts[0]}/) to override."
    )


def read_mat(relpath, what):
    """``scipy.io.loadmat`` of a file under the data home, and its path."""
    import scipy.io

    path = data_file(relpath, what)
    return scipy.io.loadmat(str(path)), path


def file_signature(*paths):
    """Identity of source files (path, size, mtime) for cache keys."""
    out = []
    for p in paths:
        st = p.stat()
        out.append(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}")
    return ";".join(out)


def check_choice(value, name, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)!r}; got {value!r}.")
    return value


# --------------------------------------------------------------------------------------------
# The cache folder
# --------------------------------------------------------------------------------------------


def cache_root(cache_dir):
    """Disk cache folder or None. ``cache_dir=None`` defers to ``$BREGCLUST_CACHE`` (unset, ''
    or '0': no disk cache; '1' or 'auto': the user cache folder; anything else: that folder)."""
    if cache_dir is None:
        env = os.environ.get(_CACHE_ENV, "")
        cache_dir = None if env in ("", "0") else ("auto" if env == "1" else env)
    if cache_dir is None or cache_dir is False:
        return None
    if cache_dir is True or cache_dir == "auto":
        base = os.environ.get("XDG_CACHE_HOME") or (Path.home() / ".cache")
        return Path(base) / "bregclust"
    return Path(cache_dir).expanduser()


# --------------------------------------------------------------------------------------------
# Format 1: a pickle of parsed texts
# --------------------------------------------------------------------------------------------


def pickle_path(cache_dir_str, stem, identity):
    """The pickle file for ``identity`` (a string) in ``cache_dir_str``, or None without a folder."""
    if not cache_dir_str:
        return None
    key = hashlib.sha1(identity.encode()).hexdigest()[:16]
    return Path(cache_dir_str) / f"{stem}-{key}.pkl"


def pickle_load(cache_file):
    """The cached object, or None when there is no file (or it is unreadable: it is rebuilt)."""
    if cache_file is None or not cache_file.exists():
        return None
    try:
        with open(cache_file, "rb") as fh:
            return pickle.load(fh)
    except Exception:  # noqa: BLE001 - a corrupt cache is re-built
        return None


def pickle_store(cache_file, obj):
    """Write ``obj`` atomically; a cache that cannot be written is skipped silently."""
    if cache_file is None:
        return
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(".tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(cache_file)
    except OSError:
        pass


# --------------------------------------------------------------------------------------------
# Format 2: count matrices (.npz + .json), memoised in memory too
# --------------------------------------------------------------------------------------------

_COUNTS_CACHE = {}  # (source, digest of the document set, vectoriser params) -> (counts, terms)
_COUNTS_CACHE_SIZE = 2


def memo_counts(source, key, n_rows, build, root):
    """``build()`` -> (CSR counts, terms), memoised in memory under ``key`` and, when ``root``
    (a folder) is given, on disk as ``<source>-counts-<hash>.npz`` + ``.json``. A disk entry
    whose shape is not ``(n_rows, len(terms))`` is rebuilt. The returned matrix is shared and
    read-only: callers hand out copies."""
    import sklearn

    hit = _COUNTS_CACHE.get(key)
    if hit is not None:
        return hit
    files = None
    if root is not None:
        h = hashlib.sha1(repr((key, sklearn.__version__, "counts-v1")).encode()).hexdigest()
        files = (root / f"{source}-counts-{h[:20]}.npz", root / f"{source}-counts-{h[:20]}.json")
        if files[0].exists() and files[1].exists():
            try:
                with open(files[1], encoding="utf-8") as fh:
                    terms = np.array(json.load(fh), dtype=object)
                hit = (sp.csr_matrix(sp.load_npz(files[0]), dtype=np.float64), terms)
                if hit[0].shape != (n_rows, terms.size):
                    hit = None
            except (OSError, ValueError):  # a corrupt cache is re-built
                hit = None
    if hit is None:
        hit = build()
        if files is not None:
            try:
                files[0].parent.mkdir(parents=True, exist_ok=True)
                tmp = files[0].with_name(files[0].stem + ".tmp.npz")
                sp.save_npz(tmp, hit[0])
                tmpj = files[1].with_suffix(".tmp")
                with open(tmpj, "w", encoding="utf-8") as fh:
                    json.dump([str(t) for t in hit[1]], fh)
                tmp.replace(files[0])
                tmpj.replace(files[1])
            except OSError:
                pass
    hit[0].data.flags.writeable = False  # shared: callers only get copies
    while len(_COUNTS_CACHE) >= _COUNTS_CACHE_SIZE:
        _COUNTS_CACHE.pop(next(iter(_COUNTS_CACHE)))
    _COUNTS_CACHE[key] = hit
    return hit
