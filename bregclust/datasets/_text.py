"""Readers of the text corpora: CLUTO matrices, 20 Newsgroups, WebKB4, MALSAR, Reuters.

Each reader parses one source as distributed (nothing is extracted or copied) and, for raw text,
vectorises it with scikit-learn's CountVectorizer; the helpers that turn counts into tf-idf and
select terms are shared with the papers' task splits (:mod:`bregclust.datasets._tasks`).
"""

import functools
import hashlib
import re
import tarfile

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from ._base import (
    cache_root,
    check_choice,
    data_file,
    file_signature,
    memo_counts,
    pickle_load,
    pickle_path,
    pickle_store,
    read_mat,
)

# --------------------------------------------------------------------------------------------
# Representations and term selection
# --------------------------------------------------------------------------------------------

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


def check_representation(value, name="representation"):
    if value not in _REPRESENTATIONS:
        raise ValueError(f"{name} must be 'counts' (alias 'count') or 'tfidf'; got {value!r}.")
    return _REPRESENTATIONS[value]


def counts_to(X, representation):
    """Turn a CSR count matrix into the requested representation (float64 CSR)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    if representation == "tfidf":
        from sklearn.feature_extraction.text import TfidfTransformer

        X = TfidfTransformer(norm="l2", use_idf=True, smooth_idf=True).fit_transform(X)
        X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    return X


TFIDF_TEXT = (
    "tf-idf = raw count x smoothed idf (scikit-learn TfidfTransformer: idf = ln((1+n)/(1+df)) + 1, "
    "idf fitted on all documents of all tasks), rows L2-normalised"
)


def select_terms(X, min_df=1, max_features=None):
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


def nonempty_rows(X):
    return np.flatnonzero(np.diff(sp.csr_matrix(X).indptr) > 0)

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
    m, path = read_mat(f"cluto_docs/{name}.mat", f"CLUTO data set {name!r}")
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

NG_FILE = "20newsgroups/20news-bydate.tar.gz"
_NG_SUBSETS = {"train": "20news-bydate-train", "test": "20news-bydate-test"}


@functools.lru_cache(maxsize=2)
def _read_20ng(path_str, size, mtime, cache_dir_str):
    """Parse the tarball once: (texts, group names per doc, subset per doc, member names)."""
    cache_file = pickle_path(cache_dir_str, "20news-bydate", f"{path_str}|{size}|{mtime}|v2")
    cached = pickle_load(cache_file)
    if cached is not None:
        return cached
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
    pickle_store(cache_file, out)
    return out


def ng20_raw(cache_dir=None):
    path = data_file(NG_FILE, "20 Newsgroups")
    st = path.stat()
    root = cache_root(cache_dir)
    return _read_20ng(str(path.resolve()), st.st_size, st.st_mtime_ns, str(root) if root else "")


def ng20_disk(cache_dir):
    """(cache folder or None, signature of the tarball) for the count-matrix caches."""
    return cache_root(cache_dir), file_signature(data_file(NG_FILE, "20 Newsgroups"))


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
    return counts_to(counts, representation), cv.get_feature_names_out()


def _ng_text_description(representation, n_docs, n_terms, min_df, max_df, max_features,
                         stop_words, remove, n_dropped):
    rep = "raw term counts" if representation == "counts" else TFIDF_TEXT
    return (
        f"20 Newsgroups bydate ({NG_FILE}), latin-1 decoded; removed parts: "
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
    reading the cached matrix takes a small fraction of the time vectorising the corpus takes.

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
    check_choice(subset, "subset", {"all", "train", "test"})
    rep = check_representation(vectorizer, "vectorizer")
    remove = _check_remove(remove)
    texts, groups, subsets, names = ng20_raw(cache_dir)
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
        counts, feats = union_counts("20ng", texts, idx, min_df=min_df, max_df=max_df,
                                      max_features=max_features, stop_words=stop_words,
                                      disk=ng20_disk(cache_dir))
        X, feats = counts_to(counts.copy(), rep), feats.copy()
    keep = nonempty_rows(X) if remove_empty else np.arange(X.shape[0])
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
        path = data_file(f"webkb4_linqs/{u}.content", "WebKB (LINQS)")
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
        m, path = read_mat(f"mtc_newsgroups_malsar/{rel}", f"MALSAR problem {problem!r}")
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

R52_DIR = "reuters21578/cachopo_r52"


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


def r52_raw(subset):
    labels, docs, subs = [], [], []
    for s in ("train", "test") if subset == "all" else (subset,):
        path = data_file(f"{R52_DIR}/reuters-r52-{s}.tab", "Reuters R52 (Cachopo)")
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
    check_choice(subset, "subset", {"all", "train", "test"})
    rep = check_representation(vectorizer, "vectorizer")
    labels, docs, subs = r52_raw(subset)
    cats = _select_categories(categories, labels, "R52 topics")
    idx = np.flatnonzero(np.isin(labels, cats))
    sel = [docs[i] for i in idx]
    X, feats = _ng_vectorize(sel, rep, min_df=min_df, max_df=max_df, max_features=max_features,
                             stop_words=stop_words)
    keep = nonempty_rows(X) if remove_empty else np.arange(X.shape[0])
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
        f"{'raw term counts' if rep == 'counts' else TFIDF_TEXT}; {n_dropped} documents with "
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
    m, path = read_mat("reuters21578/Reuters21578.mat", "Reuters21578 (Deng Cai)")
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


def union_counts(source, texts, union, *, min_df, max_df, max_features, stop_words, disk):
    """CountVectorizer counts of ``texts[union]``, memoised in memory (the task builders of one
    corpus mostly vectorise the same document set; 20 Newsgroups takes seconds) and, when
    ``disk = (folder, source signature)`` has a folder, on disk as ``.npz`` + ``.json``."""
    sw = tuple(stop_words) if isinstance(stop_words, (list, tuple, set, frozenset)) else stop_words
    root, sig = disk
    key = (source, sig, hashlib.sha1(union.tobytes()).hexdigest(), min_df, max_df, max_features,
           sw)

    def build():
        return _ng_vectorize([texts[i] for i in union], "counts", min_df=min_df, max_df=max_df,
                             max_features=max_features, stop_words=stop_words)

    return memo_counts(source, key, union.size, build, root)
