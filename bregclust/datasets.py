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
"""

import functools
import gzip
import hashlib
import json
import os
import pickle
import re
import struct
import tarfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch, check_random_state

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

# --------------------------------------------------------------------------------------------
# Where the data are
# --------------------------------------------------------------------------------------------

_ENV = "BREGCLUST_DATA"


def _candidate_homes():
    cwd = Path.cwd()
    pkg = Path(__file__).resolve().parent
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


def _data_file(relpath, what):
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


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def _check_choice(value, name, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)!r}; got {value!r}.")
    return value


_REPRESENTATIONS = {"count": "counts", "counts": "counts", "tfidf": "tfidf", "tf-idf": "tfidf"}


def _select_categories(categories, labels, what):
    """The sorted requested categories (all when None), checked against those in ``labels``."""
    known = sorted(set(labels))
    if categories is None:
        return known
    cats = [categories] if isinstance(categories, str) else list(categories)
    unknown = [c for c in cats if c not in known]
    if unknown:
        raise ValueError(f"unknown {what} {unknown}; known: {known}.")
    return sorted(set(cats))


def _check_representation(value, name="representation"):
    if value not in _REPRESENTATIONS:
        raise ValueError(f"{name} must be 'counts' (alias 'count') or 'tfidf'; got {value!r}.")
    return _REPRESENTATIONS[value]


def _counts_to(X, representation):
    """Turn a CSR count matrix into the requested representation (float64 CSR)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    if representation == "tfidf":
        from sklearn.feature_extraction.text import TfidfTransformer

        X = TfidfTransformer(norm="l2", use_idf=True, smooth_idf=True).fit_transform(X)
        X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    return X


_TFIDF_TEXT = (
    "tf-idf = raw count x smoothed idf (scikit-learn TfidfTransformer: idf = ln((1+n)/(1+df)) + 1, "
    "idf fitted on all documents of all tasks), rows L2-normalised"
)


def _select_terms(X, min_df=1, max_features=None):
    """Keep the columns of a count matrix with document frequency >= min_df (and the
    max_features most frequent by total count, CountVectorizer's rule). Returns (X, kept)."""
    X = sp.csr_matrix(X)
    n = X.shape[0]
    df = np.bincount(X.indices, minlength=X.shape[1])
    thr = min_df if isinstance(min_df, (int, np.integer)) else int(np.ceil(min_df * n))
    keep = np.flatnonzero(df >= max(thr, 1))
    if max_features is not None and keep.size > max_features:
        tot = np.asarray(X[:, keep].sum(axis=0)).ravel()
        order = np.argsort(-tot, kind="stable")[:max_features]
        keep = np.sort(keep[order])
    return X[:, keep], keep


def _nonempty_rows(X):
    return np.flatnonzero(np.diff(sp.csr_matrix(X).indptr) > 0)


def _mat(relpath, what):
    import scipy.io

    path = _data_file(relpath, what)
    return scipy.io.loadmat(str(path)), path


# --------------------------------------------------------------------------------------------
# CLUTO document matrices
# --------------------------------------------------------------------------------------------

CLUTO_NAMES = ("hitech", "ohscal", "reviews", "tr11", "tr23", "tr45")


def load_cluto(name):
    """Load one CLUTO / Zhong & Ghosh document-term count matrix.

    Parameters
    ----------
    name : {'hitech', 'ohscal', 'reviews', 'tr11', 'tr23', 'tr45'}

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` CSR float64 raw term counts (documents x terms), ``y`` int64 ``classid - 1``,
        ``target_names`` the ``classid`` values as strings ``'1'..'K'`` (file order),
        ``description``.

    Raises
    ------
    ValueError
        Unknown name.
    FileNotFoundError
        ``cluto_docs/<name>.mat`` is missing.

    Examples
    --------
    >>> d = load_cluto("tr23")              # doctest: +SKIP
    >>> d.X.shape, len(d.target_names)      # doctest: +SKIP
    ((204, 5831), 6)
    """
    if name not in CLUTO_NAMES:
        raise ValueError(f"unknown CLUTO data set {name!r}; known: {list(CLUTO_NAMES)}.")
    m, path = _mat(f"cluto_docs/{name}.mat", f"CLUTO data set {name!r}")
    X = sp.csr_matrix(m["dtm"], dtype=np.float64)
    X.sort_indices()
    classid = np.asarray(m["classid"]).ravel().astype(np.int64)
    classes = np.unique(classid)
    y = np.searchsorted(classes, classid).astype(np.int64)
    return Bunch(
        X=X,
        y=y,
        target_names=[str(c) for c in classes],
        description=f"CLUTO {name}: {X.shape[0]} documents x {X.shape[1]} terms, raw term counts "
        f"('dtm'), labels classid-1 ({len(classes)} classes); file {path}.",
    )


# --------------------------------------------------------------------------------------------
# 20 Newsgroups
# --------------------------------------------------------------------------------------------

_NG_FILE = "20newsgroups/20news-bydate.tar.gz"
_NG_SUBSETS = {"train": "20news-bydate-train", "test": "20news-bydate-test"}


_CACHE_ENV = "BREGCLUST_CACHE"


def _cache_root(cache_dir):
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


@functools.lru_cache(maxsize=2)
def _read_20ng(path_str, size, mtime, cache_dir_str):
    """Parse the tarball once: (texts, group names per doc, subset per doc, member names)."""
    cache_file = None
    if cache_dir_str:
        key = hashlib.sha1(f"{path_str}|{size}|{mtime}|v2".encode()).hexdigest()[:16]
        cache_file = Path(cache_dir_str) / f"20news-bydate-{key}.pkl"
        if cache_file.exists():
            try:
                with open(cache_file, "rb") as fh:
                    return pickle.load(fh)
            except Exception:  # noqa: BLE001 - a corrupt cache is re-built
                pass
    texts, groups, subsets, names = [], [], [], []
    inverse = {v: k for k, v in _NG_SUBSETS.items()}
    with tarfile.open(path_str, "r:gz") as tf:
        for member in tf:
            if not member.isfile():
                continue
            parts = member.name.split("/")
            if len(parts) != 3 or parts[0] not in inverse:
                continue
            raw = tf.extractfile(member).read()
            texts.append(raw.decode("latin-1"))
            groups.append(parts[1])
            subsets.append(inverse[parts[0]])
            names.append(member.name)
    # deterministic order: train before test (as scikit-learn's subset='all'), then group, then
    # the numeric message id
    ids = [int(n.rsplit("/", 1)[1]) if n.rsplit("/", 1)[1].isdigit() else -1 for n in names]
    order = np.lexsort((np.array(names), np.array(ids), np.array(groups),
                        np.array([s != "train" for s in subsets])))
    out = (
        tuple(texts[i] for i in order),
        np.array(groups, dtype=object)[order],
        np.array(subsets, dtype=object)[order],
        np.array(names, dtype=object)[order],
    )
    if cache_file is not None:
        try:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache_file.with_suffix(".tmp")
            with open(tmp, "wb") as fh:
                pickle.dump(out, fh, protocol=pickle.HIGHEST_PROTOCOL)
            tmp.replace(cache_file)
        except OSError:
            pass
    return out


def _20ng_raw(cache_dir=None):
    path = _data_file(_NG_FILE, "20 Newsgroups")
    st = path.stat()
    root = _cache_root(cache_dir)
    return _read_20ng(str(path.resolve()), st.st_size, st.st_mtime_ns, str(root) if root else "")


def _signature(*paths):
    """Identity of source files (path, size, mtime) for cache keys."""
    out = []
    for p in paths:
        st = p.stat()
        out.append(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}")
    return ";".join(out)


def _20ng_disk(cache_dir):
    """(cache folder or None, signature of the tarball) for the count-matrix caches."""
    return _cache_root(cache_dir), _signature(_data_file(_NG_FILE, "20 Newsgroups"))


_QUOTE_RE = re.compile(r"(writes in|writes:|wrote:|says:|said:|^In article|^Quoted from|^\||^>)")


def _strip_text(text, remove):
    """Remove 'headers' (up to the first blank line), 'footers' (from the last line starting
    with '--' when it is near the end) and 'quotes' (lines quoting other posts)."""
    if "headers" in remove:
        _, sep, body = text.partition("\n\n")
        text = body if sep else text
    if "quotes" in remove:
        text = "\n".join(ln for ln in text.split("\n") if not _QUOTE_RE.search(ln))
    if "footers" in remove:
        lines = text.strip().split("\n")
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].strip().strip("-") == "" and lines[i].strip().startswith("--"):
                if len(lines) - i <= 10:  # a signature block, not a divider inside the message
                    text = "\n".join(lines[:i])
                break
    return text


def _ng_vectorize(texts, representation, *, min_df, max_df, max_features, stop_words):
    from sklearn.feature_extraction.text import CountVectorizer

    cv = CountVectorizer(
        decode_error="strict",
        lowercase=True,
        min_df=min_df,
        max_df=max_df,
        max_features=max_features,
        stop_words=stop_words,
        dtype=np.float64,
    )
    counts = cv.fit_transform(texts)
    return _counts_to(counts, representation), cv.get_feature_names_out()


def _ng_text_description(representation, n_docs, n_terms, min_df, max_df, max_features,
                         stop_words, remove, n_dropped):
    rep = "raw term counts" if representation == "counts" else _TFIDF_TEXT
    return (
        f"20 Newsgroups bydate ({_NG_FILE}), latin-1 decoded; removed parts: "
        f"{list(remove) or 'none'}; scikit-learn CountVectorizer (lowercase, token pattern "
        f"\\b\\w\\w+\\b, stop_words={stop_words!r}, min_df={min_df!r}, max_df={max_df!r}, "
        f"max_features={max_features!r}) fitted on the selected documents; {rep}; "
        f"{n_dropped} documents with no terms dropped; {n_docs} documents x {n_terms} terms."
    )


def _check_remove(remove):
    remove = tuple(remove) if not isinstance(remove, str) else (remove,)
    bad = set(remove) - {"headers", "footers", "quotes"}
    if bad:
        raise ValueError(f"remove may contain 'headers', 'footers', 'quotes'; got {sorted(bad)!r}.")
    return remove


def load_20newsgroups(categories=None, subset="all", vectorizer="count", *, max_features=None,
                      min_df=1, max_df=1.0, stop_words=None, remove=(), remove_empty=True,
                      return_text=False, cache_dir=None):
    """Load 20 Newsgroups (bydate) from the tarball and vectorise it with scikit-learn.

    The tarball is read directly (nothing is extracted). Parsed texts and the count matrix are
    cached in memory, and on disk too when ``cache_dir`` (or ``$BREGCLUST_CACHE``) is set:
    vectorising the whole corpus takes 4-15 s, reading the cached matrix well under one.

    Parameters
    ----------
    categories : list of str, default=None
        Newsgroup names to keep (all 20 when None).
    subset : {'all', 'train', 'test'}, default='all'
    vectorizer : {'count', 'tfidf'}, default='count'
        Raw term counts, or tf-idf with L2-normalised rows.
    max_features, min_df, max_df, stop_words
        Passed to :class:`sklearn.feature_extraction.text.CountVectorizer`, fitted on the selected
        documents.
    remove : tuple of {'headers', 'footers', 'quotes'}, default=()
        Message parts to strip before vectorising (the papers keep everything).
    remove_empty : bool, default=True
        Drop documents left with no terms.
    return_text : bool, default=False
        Also return the (stripped) texts as ``data``.
    cache_dir : None, 'auto', False or path, default=None
        On-disk cache of the parsed 20 Newsgroups texts and count matrices ('auto' =
        ``$XDG_CACHE_HOME/bregclust`` or ``~/.cache/bregclust``; never inside the repository).
        None defers to the environment variable ``BREGCLUST_CACHE`` (unset: memory only).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (CSR float64), ``y`` (int64 index into ``target_names``), ``target_names`` (sorted
        group names kept), ``feature_names``, ``subset`` (per document), ``filenames`` (tar
        member names), ``description``; ``data`` if ``return_text``.

    Raises
    ------
    ValueError
        Unknown category, subset, vectorizer or removal option.
    FileNotFoundError
        The tarball is missing.
    """
    _check_choice(subset, "subset", {"all", "train", "test"})
    rep = _check_representation(vectorizer, "vectorizer")
    remove = _check_remove(remove)
    texts, groups, subsets, names = _20ng_raw(cache_dir)
    cats = _select_categories(categories, groups, "20 Newsgroups categories")
    mask = np.isin(groups, cats)
    if subset != "all":
        mask &= subsets == subset
    idx = np.flatnonzero(mask)
    if remove:
        sel = [_strip_text(texts[i], remove) for i in idx]
        X, feats = _ng_vectorize(sel, rep, min_df=min_df, max_df=max_df,
                                 max_features=max_features, stop_words=stop_words)
    else:
        sel = None
        counts, feats = _union_counts("20ng", texts, idx, min_df=min_df, max_df=max_df,
                                      max_features=max_features, stop_words=stop_words,
                                      disk=_20ng_disk(cache_dir))
        X, feats = _counts_to(counts.copy(), rep), feats.copy()
    keep = _nonempty_rows(X) if remove_empty else np.arange(X.shape[0])
    n_dropped = X.shape[0] - keep.size
    X = X[keep]
    if return_text:
        data = [sel[i] for i in keep] if sel is not None else [texts[i] for i in idx[keep]]
    idx = idx[keep]
    y = np.searchsorted(np.array(cats, dtype=object), groups[idx]).astype(np.int64)
    out = Bunch(
        X=X,
        y=y,
        target_names=list(cats),
        feature_names=feats,
        subset=subsets[idx].astype(str),
        filenames=names[idx].astype(str),
        description=_ng_text_description(rep, X.shape[0], X.shape[1], min_df, max_df,
                                         max_features, stop_words, remove, n_dropped),
    )
    if return_text:
        out.data = data
    return out


# --------------------------------------------------------------------------------------------
# WebKB4 (LINQS), MALSAR newsgroup tasks
# --------------------------------------------------------------------------------------------

_WEBKB_UNIVS = ("cornell", "texas", "washington", "wisconsin")


@functools.lru_cache(maxsize=4)
def _read_webkb(path_str):
    urls, rows, labels = [], [], []
    with open(path_str, encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                continue
            urls.append(parts[0])
            rows.append(np.array(parts[1:-1], dtype=np.int8))
            labels.append(parts[-1])
    return np.vstack(rows), np.array(labels), np.array(urls)


def load_webkb4(*, drop_staff=True, sparse=False):
    """Load WebKB (LINQS release) as four tasks, one per university.

    Parameters
    ----------
    drop_staff : bool, default=True
        Drop the 'staff' pages (the usual 4-class WebKB4: course, faculty, project, student).
    sparse : bool, default=False
        Return CSR matrices instead of dense arrays.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``Xs`` four (n_t, 1703) float64 binary word-presence matrices (cornell, texas,
        washington, wisconsin; same vocabulary), ``ys`` int64 labels indexing
        ``target_names[t]`` (the same sorted class list for every task), ``task_names``,
        ``urls``, ``description``.
    """
    Xs, labels, urls = [], [], []
    for u in _WEBKB_UNIVS:
        path = _data_file(f"webkb4_linqs/{u}.content", "WebKB (LINQS)")
        X, lab, url = _read_webkb(str(path))
        keep = lab != "staff" if drop_staff else np.ones(lab.size, bool)
        Xs.append(X[keep].astype(np.float64))
        labels.append(lab[keep])
        urls.append(url[keep])
    classes = sorted(set(np.concatenate(labels)))
    ys = [np.searchsorted(np.array(classes), lab).astype(np.int64) for lab in labels]
    if sparse:
        Xs = [sp.csr_matrix(X) for X in Xs]
    sizes = ", ".join(f"{u} {X.shape[0]}" for u, X in zip(_WEBKB_UNIVS, Xs))
    return Bunch(
        Xs=Xs,
        ys=ys,
        target_names=[list(classes) for _ in Xs],
        task_names=list(_WEBKB_UNIVS),
        urls=urls,
        description=f"WebKB LINQS release, one task per university ({sizes} pages), "
        f"{Xs[0].shape[1]} shared binary word-presence features (stemmed, stop words removed, "
        f"document frequency >= 10, as distributed); classes {classes}"
        f"{' (staff dropped)' if drop_staff else ''}.",
    )


MALSAR_PROBLEMS = {
    "rec.vs.talk": ("rec.vs.talk/Task1.mat", "rec.vs.talk/Task2.mat"),
    "comp.vs.sci": ("comp.vs.sci/task1.mat", "comp.vs.sci/task2.mat"),
}


def load_malsar(problem):
    """Load a two-task 20 Newsgroups problem shipped with MALSAR (Gu & Zhou, ICDM 2009).

    Parameters
    ----------
    problem : {'rec.vs.talk', 'comp.vs.sci'}

    Returns
    -------
    data : sklearn.utils.Bunch
        ``Xs`` two CSR float64 term-count matrices over the same 2,000 terms, ``ys`` int64
        ``gnd - 1`` (two classes), ``target_names`` (``['1', '2']`` per task: the files do not
        name the classes), ``task_names``, ``description``.
    """
    if problem not in MALSAR_PROBLEMS:
        raise ValueError(f"unknown MALSAR problem {problem!r}; known: {sorted(MALSAR_PROBLEMS)}.")
    Xs, ys, files = [], [], []
    for rel in MALSAR_PROBLEMS[problem]:
        m, path = _mat(f"mtc_newsgroups_malsar/{rel}", f"MALSAR problem {problem!r}")
        X = sp.csr_matrix(m["fea"], dtype=np.float64)
        X.sort_indices()
        Xs.append(X)
        ys.append(np.asarray(m["gnd"]).ravel().astype(np.int64) - 1)
        files.append(str(path))
    sizes = " and ".join(str(X.shape[0]) for X in Xs)
    return Bunch(
        Xs=Xs,
        ys=ys,
        target_names=[["1", "2"], ["1", "2"]],
        task_names=[f"{problem} task 1", f"{problem} task 2"],
        description=f"MALSAR {problem} (Gu & Zhou 2009): 2 tasks of {sizes} documents, "
        f"{Xs[0].shape[1]} shared terms, raw term counts as distributed ('fea'), labels gnd-1; "
        f"files {files}.",
    )


# --------------------------------------------------------------------------------------------
# Reuters
# --------------------------------------------------------------------------------------------

_R52_DIR = "reuters21578/cachopo_r52"


@functools.lru_cache(maxsize=4)
def _read_tab(path_str):
    labels, docs = [], []
    with open(path_str, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for line in lines[3:]:
        if not line.strip():
            continue
        lab, _, text = line.partition("\t")
        labels.append(lab)
        docs.append(text)
    return tuple(labels), tuple(docs)


def _r52_raw(subset):
    labels, docs, subs = [], [], []
    for s in ("train", "test") if subset == "all" else (subset,):
        path = _data_file(f"{_R52_DIR}/reuters-r52-{s}.tab", "Reuters R52 (Cachopo)")
        lab, doc = _read_tab(str(path))
        labels += lab
        docs += doc
        subs += [s] * len(lab)
    return np.array(labels, dtype=object), docs, np.array(subs)


def load_reuters_r52(categories=None, subset="all", vectorizer="count", *, max_features=None,
                     min_df=1, max_df=1.0, stop_words=None, remove_empty=True, return_text=False):
    """Load Cardoso-Cachopo's R52 (single-label Reuters-21578, ModApte) from raw text.

    Parameters
    ----------
    categories : list of str, default=None
        Topic names to keep (all 52 when None), e.g. ``['gnp', 'gold', 'cocoa']``.
    subset : {'all', 'train', 'test'}, default='all'
    vectorizer : {'count', 'tfidf'}, default='count'
    max_features, min_df, max_df, stop_words
        Passed to CountVectorizer, fitted on the selected documents.
    remove_empty : bool, default=True
    return_text : bool, default=False

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` CSR float64, ``y`` int64 index into ``target_names`` (sorted topic names),
        ``feature_names``, ``subset``, ``description``; ``data`` if ``return_text``.
    """
    _check_choice(subset, "subset", {"all", "train", "test"})
    rep = _check_representation(vectorizer, "vectorizer")
    labels, docs, subs = _r52_raw(subset)
    cats = _select_categories(categories, labels, "R52 topics")
    idx = np.flatnonzero(np.isin(labels, cats))
    sel = [docs[i] for i in idx]
    X, feats = _ng_vectorize(sel, rep, min_df=min_df, max_df=max_df, max_features=max_features,
                             stop_words=stop_words)
    keep = _nonempty_rows(X) if remove_empty else np.arange(X.shape[0])
    n_dropped = X.shape[0] - keep.size
    X, idx = X[keep], idx[keep]
    out = Bunch(
        X=X,
        y=np.searchsorted(np.array(cats, dtype=object), labels[idx]).astype(np.int64),
        target_names=list(cats),
        feature_names=feats,
        subset=subs[idx],
        description=f"Reuters-21578 R52 (Cardoso-Cachopo, all-terms: lowercase letters only), "
        f"subset={subset!r}; CountVectorizer(min_df={min_df!r}, max_df={max_df!r}, "
        f"max_features={max_features!r}, stop_words={stop_words!r}); "
        f"{'raw term counts' if rep == 'counts' else _TFIDF_TEXT}; {n_dropped} documents with "
        f"no terms dropped; {X.shape[0]} documents x {X.shape[1]} terms.",
    )
    if return_text:
        out.data = [sel[i] for i in keep]
    return out


def load_reuters_cai(*, n_largest=None):
    """Load Deng Cai's Reuters21578.mat (8,293 single-label documents, 65 topics, counts).

    Parameters
    ----------
    n_largest : int, default=None
        Keep only the documents of the ``n_largest`` largest topics (e.g. 10).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` CSR float64 term counts, ``y`` int64 labels ``0..K-1`` (``target_names`` = the
        original numeric topic ids as strings), ``train_mask`` (bool, the file's ``trainIdx``),
        ``description``.
    """
    m, path = _mat("reuters21578/Reuters21578.mat", "Reuters21578 (Deng Cai)")
    X = sp.csr_matrix(m["fea"], dtype=np.float64)
    X.sort_indices()
    gnd = np.asarray(m["gnd"]).ravel().astype(np.int64)
    train = np.zeros(X.shape[0], bool)
    train[np.asarray(m["trainIdx"]).ravel().astype(np.int64) - 1] = True
    keep = np.arange(X.shape[0])
    if n_largest is not None:
        if not (isinstance(n_largest, (int, np.integer)) and n_largest >= 1):
            raise ValueError(f"n_largest must be a positive integer; got {n_largest!r}.")
        ids, counts = np.unique(gnd, return_counts=True)
        top = ids[np.argsort(-counts, kind="stable")[:n_largest]]
        keep = np.flatnonzero(np.isin(gnd, top))
    X, gnd, train = X[keep], gnd[keep], train[keep]
    classes = np.unique(gnd)
    return Bunch(
        X=X,
        y=np.searchsorted(classes, gnd).astype(np.int64),
        target_names=[str(c) for c in classes],
        train_mask=train,
        description=f"Reuters21578.mat (Deng Cai): {X.shape[0]} documents x {X.shape[1]} terms, "
        f"raw term counts (stemmed, stop words removed), {len(classes)} topics"
        f"{'' if n_largest is None else f' (the {n_largest} largest)'}; file {path}.",
    )


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
    path = _data_file("uci_glass/glass.data", "UCI glass")
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
    path = _data_file("uci_spambase/spambase.data", "UCI spambase")
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
    img = _data_file("digits_mnist/t10k-images-idx3-ubyte.gz", "MNIST test images")
    lab = _data_file("digits_mnist/t10k-labels-idx1-ubyte.gz", "MNIST test labels")
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


# --------------------------------------------------------------------------------------------
# Multi-task splits of the papers
# --------------------------------------------------------------------------------------------

MBC_NAMES = ("reviews", "hitech", "ohscal", "tr11", "tr23", "tr45", "ng20-1", "ng20-2", "ng20-3")

# classid ranges (inclusive) per task, DATA.md "The papers' task splits"
_MBC_CLUTO_SPLITS = {
    "reviews": ((1, 4), (2, 5)),
    "hitech": ((1, 5), (2, 6)),
    "ohscal": ((1, 8), (2, 9)),
    "tr11": ((1, 7), (3, 9)),
    "tr45": ((1, 7), (4, 10)),
    "tr23": ((1, 6), (1, 6)),
}
_TR23_TASK2_SIZE = 157

_NG_SUBJECTS = {
    "comp": "comp",
    "rec": "rec",
    "sci": "sci",
    "misc": "misc",
    "talk.politics": "politics",
    "alt.atheism": "religion",
    "soc.religion": "religion",
    "talk.religion": "religion",
}
_NG_SUBJECT_NAMES = ["comp", "rec", "sci", "misc", "politics", "religion"]


def _ng_subject(group):
    for prefix, subject in _NG_SUBJECTS.items():
        if group.startswith(prefix):
            return subject
    raise AssertionError(group)  # pragma: no cover - every bydate group has a subject


_COUNTS_CACHE = {}  # (source, digest of the document set, vectoriser params) -> (counts, terms)
_COUNTS_CACHE_SIZE = 2


def _union_counts(source, texts, union, *, min_df, max_df, max_features, stop_words, disk):
    """CountVectorizer counts of ``texts[union]``, memoised in memory (the task builders of one
    corpus mostly vectorise the same document set; 20 Newsgroups takes seconds) and, when
    ``disk = (folder, source signature)`` has a folder, on disk as ``.npz`` + ``.json``."""
    import sklearn

    sw = tuple(stop_words) if isinstance(stop_words, (list, tuple, set, frozenset)) else stop_words
    root, sig = disk
    key = (source, sig, hashlib.sha1(union.tobytes()).hexdigest(), min_df, max_df, max_features,
           sw)
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
                if hit[0].shape != (union.size, terms.size):
                    hit = None
            except (OSError, ValueError):  # a corrupt cache is re-built
                hit = None
    if hit is None:
        hit = _ng_vectorize([texts[i] for i in union], "counts", min_df=min_df, max_df=max_df,
                            max_features=max_features, stop_words=stop_words)
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


def _text_tasks(source, texts, task_indices, representation, *, min_df, max_df, max_features,
                stop_words, disk):
    """Vectorise the union of the tasks' documents once (one vocabulary, idf fitted on the
    union); drop documents with no terms. Returns ([(X_t, kept source indices)], terms, n_dropped)."""
    union = np.unique(np.concatenate(task_indices))
    counts, feats = _union_counts(source, texts, union, min_df=min_df, max_df=max_df,
                                  max_features=max_features, stop_words=stop_words, disk=disk)
    X = _counts_to(counts.copy(), representation)
    nonempty = np.zeros(len(texts), bool)
    nonempty[union[_nonempty_rows(X)]] = True
    pos = np.full(len(texts), -1, np.int64)
    pos[union] = np.arange(union.size)
    out = []
    for idx in task_indices:
        keep = idx[nonempty[idx]]
        out.append((X[pos[keep]], keep))
    return out, feats.copy(), union.size - int(nonempty[union].sum())


def _mbc_cluto(name, representation, random_state, min_df, max_features):
    d = load_cluto(name)
    cid = d.y + 1
    rng = check_random_state(random_state)
    task_idx = []
    for lo, hi in _MBC_CLUTO_SPLITS[name]:
        task_idx.append(np.flatnonzero((cid >= lo) & (cid <= hi)))
    if name == "tr23":
        task_idx[1] = np.sort(rng.choice(task_idx[1], size=_TR23_TASK2_SIZE, replace=False))
    union = np.unique(np.concatenate(task_idx))
    counts, kept_terms = _select_terms(d.X[union], min_df=min_df, max_features=max_features)
    nonempty = np.zeros(d.X.shape[0], bool)
    nonempty[union[_nonempty_rows(counts)]] = True
    Xu = _counts_to(counts, representation)
    pos = np.full(d.X.shape[0], -1, np.int64)
    pos[union] = np.arange(union.size)
    Xs, ys, kept = [], [], []
    for idx in task_idx:
        idx = idx[nonempty[idx]]
        Xs.append(Xu[pos[idx]])
        ys.append(d.y[idx].copy())
        kept.append(idx)
    n_dropped = union.size - int(nonempty[union].sum())
    splits = _MBC_CLUTO_SPLITS[name]
    desc = (
        f"MBC split of CLUTO {name}: task 1 = classid {splits[0][0]}-{splits[0][1]}, task 2 = "
        f"classid {splits[1][0]}-{splits[1][1]}"
        + (f" (a random subset of {_TR23_TASK2_SIZE} of the 204 documents, "
           f"random_state={random_state!r})" if name == "tr23" else "")
        + "; documents of shared classes appear in both tasks. Terms: "
        f"{Xu.shape[1]} of {d.X.shape[1]} kept (document frequency >= {min_df} in the union of "
        f"the tasks, max_features={max_features!r}); "
        + ("raw term counts" if representation == "counts" else _TFIDF_TEXT)
        + f"; {n_dropped} documents with no terms dropped. Task sizes: "
        + ", ".join(str(X.shape[0]) for X in Xs) + "."
    )
    names = list(d.target_names)
    return Bunch(Xs=Xs, ys=ys, target_names=[names, list(names)], task_names=["task 1", "task 2"],
                 indices=kept, feature_indices=kept_terms, description=desc)


def _mbc_ng(name, representation, random_state, min_df, max_df, max_features, stop_words,
            cache_dir):
    texts, groups, _, _ = _20ng_raw(cache_dir)
    all_groups = sorted(set(groups))
    gidx = np.searchsorted(np.array(all_groups, dtype=object), groups).astype(np.int64)
    n = len(texts)
    if name == "ng20-1":
        perm = check_random_state(random_state).permutation(n)
        half = (n + 1) // 2
        task_idx = [np.sort(perm[:half]), np.sort(perm[half:])]
        what = f"a random half/half split of the corpus (random_state={random_state!r}), 20 groups each"
    elif name == "ng20-2":
        task_idx = [np.flatnonzero([not g.startswith("talk.") for g in groups]),
                    np.flatnonzero([not g.startswith("comp.") for g in groups])]
        what = ("task 1 = all groups but talk.* (16), task 2 = all but comp.* (15); documents of "
                "shared groups appear in both tasks")
    else:
        task_idx = [np.arange(n), np.arange(n)]
        what = ("the whole corpus twice: task 1 labelled by the 20 groups, task 2 by 6 subjects "
                "(comp, rec, sci, misc = misc.forsale, politics = talk.politics.*, religion = "
                "alt.atheism + soc.religion.christian + talk.religion.misc)")
    tasks, feats, n_dropped = _text_tasks("20ng", texts, task_idx, representation, min_df=min_df,
                                          max_df=max_df, max_features=max_features,
                                          stop_words=stop_words, disk=_20ng_disk(cache_dir))
    Xs = [X for X, _ in tasks]
    kept = [idx for _, idx in tasks]
    ys = [gidx[kept[0]], gidx[kept[1]]]
    target_names = [list(all_groups), list(all_groups)]
    if name == "ng20-3":
        subj = np.array([_NG_SUBJECT_NAMES.index(_ng_subject(g)) for g in all_groups])
        ys[1] = subj[gidx[kept[1]]].astype(np.int64)
        target_names[1] = list(_NG_SUBJECT_NAMES)
    rep = "raw term counts" if representation == "counts" else _TFIDF_TEXT
    desc = (
        f"MBC split {name} of 20 Newsgroups bydate (train+test, {_NG_FILE}, latin-1, headers "
        f"kept): {what}. One CountVectorizer (lowercase, token pattern \\b\\w\\w+\\b, "
        f"stop_words={stop_words!r}, min_df={min_df!r}, max_df={max_df!r}, "
        f"max_features={max_features!r}) fitted on the union of the tasks' documents, "
        f"{Xs[0].shape[1]} terms; {rep}; {n_dropped} documents with no terms dropped. Task sizes: "
        + ", ".join(str(X.shape[0]) for X in Xs) + "."
    )
    return Bunch(Xs=Xs, ys=ys, target_names=target_names, task_names=["task 1", "task 2"],
                 indices=kept, feature_names=feats, description=desc)


def load_mbc_tasks(name, *, representation="tfidf", random_state=0, min_df=1, max_df=1.0,
                   max_features=None, stop_words=None, cache_dir=None):
    """Two-task splits of the Multitask Bregman Clustering paper (Zhang & Zhang), Table 2.

    Parameters
    ----------
    name : {'reviews', 'hitech', 'ohscal', 'tr11', 'tr23', 'tr45', 'ng20-1', 'ng20-2', 'ng20-3'}
        CLUTO sets: task 1 and task 2 are ranges of ``classid`` (reviews 1-4 vs 2-5, hitech 1-5
        vs 2-6, ohscal 1-8 vs 2-9, tr11 1-7 vs 3-9, tr45 1-7 vs 4-10, tr23 1-6 vs a random 157
        of the 204 documents); the documents of shared classes appear in both tasks. 20NG: see
        ``description`` (ng20-1 random halves, ng20-2 without talk.* / without comp.*, ng20-3
        the corpus twice with 20 vs 6 labels).
    representation : {'tfidf', 'counts'}, default='tfidf'
        'tfidf' (L2-normalised rows, for the paper's squared-Euclidean experiments) or raw
        term counts (for kl).
    random_state : int, RandomState or None, default=0
        Used by the random parts (tr23 task 2, ng20-1 halves).
    min_df, max_df, max_features, stop_words
        Vocabulary selection on the union of the tasks (CountVectorizer's; for the CLUTO sets
        only ``min_df`` (int) and ``max_features`` apply).
    cache_dir : None, 'auto', False or path, default=None
        On-disk cache of the parsed 20 Newsgroups texts and count matrices ('auto' =
        ``$XDG_CACHE_HOME/bregclust`` or ``~/.cache/bregclust``; never inside the repository).
        None defers to the environment variable ``BREGCLUST_CACHE`` (unset: memory only).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``Xs`` (two CSR float64 matrices, same columns), ``ys``, ``target_names`` (per task),
        ``task_names``, ``indices`` (row numbers in the source per task), ``description``.

    Raises
    ------
    ValueError
        Unknown name or representation.
    FileNotFoundError
        The source data are missing.
    """
    if name not in MBC_NAMES:
        raise ValueError(f"unknown MBC data set {name!r}; known: {list(MBC_NAMES)}.")
    rep = _check_representation(representation)
    if name in _MBC_CLUTO_SPLITS:
        if not isinstance(min_df, (int, np.integer)):
            raise ValueError(f"for the CLUTO sets min_df must be an integer; got {min_df!r}.")
        return _mbc_cluto(name, rep, random_state, min_df, max_features)
    return _mbc_ng(name, rep, random_state, min_df, max_df, max_features, stop_words, cache_dir)


MTCMRL_NAMES = ("20ng", "reuters", "webkb4")

_MTCMRL_20NG = (
    ("comp.graphics", "rec.autos", "sci.crypt"),
    ("comp.os.ms-windows.misc", "rec.motorcycles", "sci.electronics", "talk.politics.mideast"),
    ("comp.sys.ibm.pc.hardware", "rec.sport.baseball", "sci.med"),
    ("comp.sys.mac.hardware", "rec.sport.hockey", "sci.space", "talk.religion.misc"),
)
_MTCMRL_REUTERS = (("gnp", "gold", "cocoa"), ("cpi", "nat-gas", "iron-steel"),
                   ("ipi", "copper", "coffee"))
_REUTERS_ROOT = {"gnp": "economic index", "cpi": "economic index", "ipi": "economic index",
                 "gold": "metal", "iron-steel": "metal", "copper": "metal",
                 "cocoa": "food", "coffee": "food", "nat-gas": "energy"}


def load_mtcmrl_tasks(name, *, representation="tfidf", subset="all", min_df=1, max_df=1.0,
                      max_features=None, stop_words=None, cache_dir=None):
    """Multi-task data sets of MTCMRL (multi-task clustering with model relation learning).

    Parameters
    ----------
    name : {'20ng', 'reuters', 'webkb4'}
        '20ng': 4 tasks (task 1 = comp.graphics, rec.autos, sci.crypt; task 2 =
        comp.os.ms-windows.misc, rec.motorcycles, sci.electronics, talk.politics.mideast; task 3 =
        comp.sys.ibm.pc.hardware, rec.sport.baseball, sci.med; task 4 = comp.sys.mac.hardware,
        rec.sport.hockey, sci.space, talk.religion.misc), label = root (comp, rec, sci, talk).
        'reuters' (R52 train+test): task 1 = gnp, gold, cocoa; task 2 = cpi, nat-gas, iron-steel;
        task 3 = ipi, copper, coffee; label = economic index / energy / food / metal.
        'webkb4': :func:`load_webkb4` (one task per university, 4 classes).
    representation : {'tfidf', 'counts'}, default='tfidf'
        For the text sets (ignored for webkb4, whose features are binary).
    subset : {'all', 'train', 'test'}, default='all'
        For '20ng' only: the bydate split to use (the MTCMRL paper's 20 Newsgroups task sizes
        match the 'test' split). The other sets accept only 'all'.
    min_df, max_df, max_features, stop_words
        CountVectorizer vocabulary selection, fitted on the union of the tasks.
    cache_dir : None, 'auto', False or path, default=None
        On-disk cache of the parsed 20 Newsgroups texts and count matrices ('auto' =
        ``$XDG_CACHE_HOME/bregclust`` or ``~/.cache/bregclust``; never inside the repository).
        None defers to the environment variable ``BREGCLUST_CACHE`` (unset: memory only).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``Xs``, ``ys`` (root labels, consistent across tasks), ``target_names`` (per task, the
        same root list), ``task_names``, ``categories`` (per task, the source categories),
        ``fine_labels`` (per task, each document's source category), ``description``.
    """
    if name not in MTCMRL_NAMES:
        raise ValueError(f"unknown MTCMRL data set {name!r}; known: {list(MTCMRL_NAMES)}.")
    rep = _check_representation(representation)
    _check_choice(subset, "subset", {"all", "train", "test"})
    if subset != "all" and name != "20ng":
        raise ValueError(f"subset={subset!r} applies to '20ng' only; use subset='all' for {name!r}.")
    in_subset = None
    if name == "webkb4":
        return load_webkb4()
    if name == "20ng":
        texts, groups, subsets, _ = _20ng_raw(cache_dir)
        disk = _20ng_disk(cache_dir)
        splits, labels = _MTCMRL_20NG, groups
        root_of = {g: g.split(".")[0] for s in splits for g in s}
        part = "train+test" if subset == "all" else f"{subset} split"
        src = f"20 Newsgroups bydate ({part}, {_NG_FILE}, latin-1, headers kept)"
        if subset != "all":
            in_subset = subsets == subset
    else:
        labels, texts, _ = _r52_raw("all")
        disk = (None, _signature(*(_data_file(f"{_R52_DIR}/reuters-r52-{s}.tab", "Reuters R52")
                                   for s in ("train", "test"))))
        splits = _MTCMRL_REUTERS
        root_of = _REUTERS_ROOT
        src = "Reuters-21578 R52 (Cardoso-Cachopo, train+test, all-terms)"
    roots = sorted(set(root_of.values()))
    task_idx = [np.flatnonzero(np.isin(labels, list(s)) & (True if in_subset is None else in_subset))
                for s in splits]
    tasks, feats, n_dropped = _text_tasks(name, texts, task_idx, rep, min_df=min_df,
                                          max_df=max_df, max_features=max_features,
                                          stop_words=stop_words, disk=disk)
    Xs = [X for X, _ in tasks]
    fine = [np.asarray(labels[idx]).astype(str) for _, idx in tasks]
    ys = [np.array([roots.index(root_of[g]) for g in f], dtype=np.int64) for f in fine]
    desc = (
        f"MTCMRL {name}: {src}; tasks "
        + "; ".join(f"{t + 1} = {', '.join(s)}" for t, s in enumerate(splits))
        + f"; label = root category {roots}. One CountVectorizer (lowercase, token pattern "
        f"\\b\\w\\w+\\b, stop_words={stop_words!r}, min_df={min_df!r}, max_df={max_df!r}, "
        f"max_features={max_features!r}) fitted on the union of the tasks, {Xs[0].shape[1]} "
        f"terms; {'raw term counts' if rep == 'counts' else _TFIDF_TEXT}; {n_dropped} documents "
        "with no terms dropped. Task sizes: " + ", ".join(str(X.shape[0]) for X in Xs) + "."
    )
    return Bunch(Xs=Xs, ys=ys, target_names=[list(roots) for _ in Xs],
                 task_names=[f"task {t + 1}" for t in range(len(Xs))],
                 categories=[list(s) for s in splits], fine_labels=fine, feature_names=feats,
                 description=desc)


# --------------------------------------------------------------------------------------------
# Data sets that need no download
# --------------------------------------------------------------------------------------------


def make_digits_tasks(tasks=((0, 1, 2, 3, 4, 5), (3, 4, 5, 6, 7, 8, 9)), *, shared="split",
                      random_state=0):
    """Related clustering tasks built from scikit-learn's bundled 8x8 digits (no download).

    Parameters
    ----------
    tasks : sequence of sequences of int, default=((0..5), (3..9))
        The digits of each task; digits in several tasks are the shared classes (3, 4, 5 by
        default).
    shared : {'split', 'duplicate'}, default='split'
        'split': the images of a shared digit are divided at random between the tasks that use
        it, so no image occurs twice; 'duplicate': every task gets all of them (the MBC papers'
        convention for shared categories).
    random_state : int, RandomState or None, default=0
        Used by ``shared='split'`` (and to shuffle nothing else).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``Xs`` dense float64 (n_t, 64) pixel counts 0..16 (non-negative, many zeros, so ``kl``
        applies with smoothing), ``ys`` int64 digits (``target_names[t]`` = ``'0'..'9'``),
        ``task_names``, ``indices`` (rows of ``load_digits()``), ``description``.

    Examples
    --------
    >>> d = make_digits_tasks()
    >>> [X.shape for X in d.Xs]
    [(811, 64), (986, 64)]
    """
    from sklearn.datasets import load_digits

    _check_choice(shared, "shared", {"split", "duplicate"})
    tasks = [tuple(int(v) for v in t) for t in tasks]
    if len(tasks) < 1 or any(len(t) == 0 for t in tasks):
        raise ValueError(f"tasks must be a non-empty sequence of non-empty digit lists; got {tasks!r}.")
    bad = sorted({v for t in tasks for v in t if not 0 <= v <= 9})
    if bad:
        raise ValueError(f"digits must be in 0..9; got {bad}.")
    digits = load_digits()
    X, y = digits.data.astype(np.float64), digits.target.astype(np.int64)
    rng = check_random_state(random_state)
    owner = {}  # sample index -> task, for shared='split'
    for d in range(10):
        users = [t for t, ds in enumerate(tasks) if d in ds]
        if len(users) > 1 and shared == "split":
            idx = rng.permutation(np.flatnonzero(y == d))
            for part, t in zip(np.array_split(idx, len(users)), users):
                owner.update(dict.fromkeys(part.tolist(), t))
    Xs, ys, inds = [], [], []
    for t, ds in enumerate(tasks):
        idx = np.flatnonzero(np.isin(y, ds))
        idx = np.array([i for i in idx if owner.get(i, t) == t], dtype=np.int64)
        Xs.append(np.ascontiguousarray(X[idx]))
        ys.append(y[idx].copy())
        inds.append(idx)
    shared_digits = sorted({v for t in tasks for v in t if sum(v in s for s in tasks) > 1})
    return Bunch(
        Xs=Xs,
        ys=ys,
        target_names=[[str(d) for d in range(10)] for _ in tasks],
        task_names=[f"digits {''.join(map(str, t))}" for t in tasks],
        indices=inds,
        description="scikit-learn digits (UCI optdigits, 8x8 pixel counts 0..16); tasks "
        + "; ".join(f"{i + 1} = digits {list(t)} ({X.shape[0]} images)" for i, (t, X) in
                    enumerate(zip(tasks, Xs)))
        + f"; shared digits {shared_digits} "
        + ("split at random between the tasks" if shared == "split" else "duplicated in each task")
        + ".",
    )


_FAMILIES = ("gaussian", "poisson", "gamma")


def _per_task(value, n_tasks, name):
    if np.ndim(value) == 0:
        vals = [value] * n_tasks
    else:
        vals = list(value)
        if len(vals) != n_tasks:
            raise ValueError(f"{name} must be an int or a list of {n_tasks} ints (one per task); "
                             f"got {len(vals)} values.")
    out = []
    for v in vals:
        if not (isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1):
            raise ValueError(f"{name} must contain positive integers; got {v!r}.")
        out.append(int(v))
    return out


def make_multitask_blobs(n_tasks=2, n_samples=200, n_clusters=3, *, n_shared=None, n_features=2,
                         family="gaussian", cluster_std=1.0, center_box=None, gamma_shape=20.0,
                         random_state=None):
    """Isotropic clusters in several tasks, some cluster centres shared by all tasks.

    Parameters
    ----------
    n_tasks : int, default=2
    n_samples : int or list of int, default=200
        Points per task (split as evenly as possible among the task's clusters).
    n_clusters : int or list of int, default=3
        Clusters per task; tasks may differ.
    n_shared : int, default=None
        Number of centres common to all tasks (labels ``0..n_shared-1`` in every task); the
        other clusters are private to their task and get labels no other task uses. None means
        ``min(n_clusters) - 1`` (at least 1): related but not identical tasks.
    n_features : int, default=2
    family : {'gaussian', 'poisson', 'gamma'}, default='gaussian'
        'gaussian': centre + ``cluster_std`` x N(0, I) (real data, for sqeuclidean and
        mahalanobis); 'poisson': counts ~ Poisson(centre) (non-negative integers, for kl);
        'gamma': Gamma(shape=``gamma_shape``, scale=centre/``gamma_shape``), positive with mean
        = centre (for itakura_saito).
    cluster_std : float, default=1.0
        Gaussian family only.
    center_box : (float, float), default=None
        Centre coordinates are uniform in this box; None means (-10, 10) for 'gaussian' and
        (1, 20) for 'poisson'/'gamma' (rates and means must be positive).
    gamma_shape : float, default=20.0
        Gamma family only; larger = tighter clusters (coefficient of variation 1/sqrt(shape)).
    random_state : int, RandomState or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        ``Xs`` (dense float64 (n_t, n_features)), ``ys`` (int64 global cluster ids),
        ``centers`` (per task, (K_t, n_features), row j = centre of ``labels[t][j]``),
        ``center_labels`` (per task, the ids of its clusters), ``shared_labels``,
        ``target_names`` (per task, ``'c<id>'`` for ids ``0..max``), ``task_names``,
        ``description``.

    Examples
    --------
    >>> d = make_multitask_blobs(n_clusters=[3, 4], n_shared=2, random_state=0)
    >>> [X.shape for X in d.Xs], d.shared_labels
    ([(200, 2), (200, 2)], [0, 1])
    """
    if not (isinstance(n_tasks, (int, np.integer)) and n_tasks >= 1):
        raise ValueError(f"n_tasks must be a positive integer; got {n_tasks!r}.")
    if family not in _FAMILIES:
        raise ValueError(f"family must be one of {list(_FAMILIES)}; got {family!r}.")
    if not (isinstance(n_features, (int, np.integer)) and n_features >= 1):
        raise ValueError(f"n_features must be a positive integer; got {n_features!r}.")
    ns = _per_task(n_samples, n_tasks, "n_samples")
    ks = _per_task(n_clusters, n_tasks, "n_clusters")
    for t, (n, k) in enumerate(zip(ns, ks)):
        if n < k:
            raise ValueError(f"task {t} has n_samples={n} < n_clusters={k}; every cluster needs "
                             "a point.")
    if n_shared is None:
        n_shared = max(1, min(ks) - 1)
    if not (isinstance(n_shared, (int, np.integer)) and 0 <= n_shared <= min(ks)):
        raise ValueError(f"n_shared must be an integer in [0, min(n_clusters)={min(ks)}]; "
                         f"got {n_shared!r}.")
    if center_box is None:
        center_box = (-10.0, 10.0) if family == "gaussian" else (1.0, 20.0)
    lo, hi = map(float, center_box)
    if not lo < hi:
        raise ValueError(f"center_box must be (low, high) with low < high; got {center_box!r}.")
    if family != "gaussian" and lo <= 0:
        raise ValueError(f"family={family!r} needs positive centres: center_box low must be > 0; "
                         f"got {center_box!r}.")
    if family == "gaussian" and not cluster_std > 0:
        raise ValueError(f"cluster_std must be > 0; got {cluster_std!r}.")
    if family == "gamma" and not gamma_shape > 0:
        raise ValueError(f"gamma_shape must be > 0; got {gamma_shape!r}.")
    rng = check_random_state(random_state)
    n_private = [k - n_shared for k in ks]
    n_total = n_shared + sum(n_private)
    all_centers = rng.uniform(lo, hi, size=(n_total, n_features))
    Xs, ys, centers, center_labels = [], [], [], []
    nxt = n_shared
    for t in range(n_tasks):
        labs = list(range(n_shared)) + list(range(nxt, nxt + n_private[t]))
        nxt += n_private[t]
        sizes = np.full(ks[t], ns[t] // ks[t])
        sizes[: ns[t] % ks[t]] += 1
        y = np.repeat(np.array(labs, dtype=np.int64), sizes)
        mu = all_centers[y]
        if family == "gaussian":
            X = mu + cluster_std * rng.standard_normal(mu.shape)
        elif family == "poisson":
            X = rng.poisson(mu).astype(np.float64)
        else:
            X = rng.gamma(gamma_shape, mu / gamma_shape)
        perm = rng.permutation(ns[t])
        Xs.append(np.ascontiguousarray(X[perm], dtype=np.float64))
        ys.append(y[perm])
        centers.append(all_centers[labs].copy())
        center_labels.append(np.array(labs, dtype=np.int64))
    names = [f"c{i}" for i in range(n_total)]
    return Bunch(
        Xs=Xs,
        ys=ys,
        centers=centers,
        center_labels=center_labels,
        shared_labels=list(range(n_shared)),
        target_names=[list(names) for _ in range(n_tasks)],
        task_names=[f"task {t + 1}" for t in range(n_tasks)],
        description=f"make_multitask_blobs: {n_tasks} tasks, n_samples={ns}, n_clusters={ks}, "
        f"{n_shared} shared centres, {n_features} features, family={family!r}, centres uniform "
        f"in {(lo, hi)}, random_state={random_state!r}.",
    )
