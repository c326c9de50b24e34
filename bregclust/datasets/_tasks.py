"""The papers' multi-task splits: MBC (Zhang & Zhang, Table 2) and MTCMRL (Table 1).

Each builder selects the documents of every task from one source, vectorises the union of the
tasks once (one vocabulary; idf fitted on the union) and drops documents left without terms.
"""


import numpy as np
from sklearn.utils import Bunch, check_random_state

from ._base import check_choice, data_file, file_signature
from ._text import (
    NG_FILE,
    R52_DIR,
    TFIDF_TEXT,
    check_representation,
    counts_to,
    load_cluto,
    load_reuters_cai,
    load_webkb4,
    ng20_disk,
    ng20_raw,
    nonempty_rows,
    r52_raw,
    select_terms,
    union_counts,
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


def _text_tasks(source, texts, task_indices, representation, *, min_df, max_df, max_features,
                stop_words, disk):
    """Vectorise the union of the tasks' documents once (one vocabulary, idf fitted on the
    union); drop documents with no terms. Returns ([(X_t, kept source indices)], terms, n_dropped)."""
    union = np.unique(np.concatenate(task_indices))
    counts, feats = union_counts(source, texts, union, min_df=min_df, max_df=max_df,
                                  max_features=max_features, stop_words=stop_words, disk=disk)
    X = counts_to(counts.copy(), representation)
    nonempty = np.zeros(len(texts), bool)
    nonempty[union[nonempty_rows(X)]] = True
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
    counts, kept_terms = select_terms(d.X[union], min_df=min_df, max_features=max_features)
    nonempty = np.zeros(d.X.shape[0], bool)
    nonempty[union[nonempty_rows(counts)]] = True
    Xu = counts_to(counts, representation)
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
        + ("raw term counts" if representation == "counts" else TFIDF_TEXT)
        + f"; {n_dropped} documents with no terms dropped. Task sizes: "
        + ", ".join(str(X.shape[0]) for X in Xs) + "."
    )
    names = list(d.target_names)
    return Bunch(Xs=Xs, ys=ys, target_names=[names, list(names)], task_names=["task 1", "task 2"],
                 indices=kept, feature_indices=kept_terms, description=desc)


def _mbc_ng(name, representation, random_state, min_df, max_df, max_features, stop_words,
            cache_dir):
    texts, groups, _, _ = ng20_raw(cache_dir)
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
                                          stop_words=stop_words, disk=ng20_disk(cache_dir))
    Xs = [X for X, _ in tasks]
    kept = [idx for _, idx in tasks]
    ys = [gidx[kept[0]], gidx[kept[1]]]
    target_names = [list(all_groups), list(all_groups)]
    if name == "ng20-3":
        subj = np.array([_NG_SUBJECT_NAMES.index(_ng_subject(g)) for g in all_groups])
        ys[1] = subj[gidx[kept[1]]].astype(np.int64)
        target_names[1] = list(_NG_SUBJECT_NAMES)
    rep = "raw term counts" if representation == "counts" else TFIDF_TEXT
    desc = (
        f"MBC split {name} of 20 Newsgroups bydate (train+test, {NG_FILE}, latin-1, headers "
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
    rep = check_representation(representation)
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


# Deng Cai's Reuters21578.mat has numeric topics and no vocabulary. The nine gnd ids below are
# the only classes of the file whose sizes equal the paper's Table 1 (each size occurs once among
# the 65 topics), and the union of their documents has exactly the paper's 6,439 non-zero terms.
_MTCMRL_REUTERS_CAI = ((12, 10, 14), (13, 23, 21), (22, 17, 9))
_CAI_TOPIC_NAME = {12: "gnp", 10: "gold", 14: "cocoa", 13: "cpi", 23: "nat-gas", 21: "iron-steel",
                   22: "ipi", 17: "copper", 9: "coffee"}
_MTCMRL_SOURCES = {"reuters": ("cai", "r52")}


def _mtcmrl_reuters_cai(representation, min_df, max_features):
    """The paper's Reuters tasks from Reuters21578.mat (see ``_MTCMRL_REUTERS_CAI``)."""
    d = load_reuters_cai()
    gnd = np.asarray(d.target_names, dtype=np.int64)[d.y]          # the file's topic ids
    task_idx = [np.flatnonzero(np.isin(gnd, ids)) for ids in _MTCMRL_REUTERS_CAI]
    union = np.unique(np.concatenate(task_idx))
    counts, kept_terms = select_terms(d.X[union], min_df=min_df, max_features=max_features)
    nonempty = np.zeros(d.X.shape[0], bool)
    nonempty[union[nonempty_rows(counts)]] = True
    Xu = counts_to(counts, representation)
    pos = np.full(d.X.shape[0], -1, np.int64)
    pos[union] = np.arange(union.size)
    Xs, fine, topics, kept = [], [], [], []
    for idx in task_idx:
        idx = idx[nonempty[idx]]
        Xs.append(Xu[pos[idx]])
        topics.append(gnd[idx].copy())
        fine.append(np.array([_CAI_TOPIC_NAME[int(g)] for g in gnd[idx]]).astype(str))
        kept.append(idx)
    n_dropped = union.size - int(nonempty[union].sum())
    src = (
        "Reuters21578.mat (Deng Cai; stemmed, stop words removed) topics (gnd) "
        + "; ".join(f"task {t + 1} = {', '.join(f'{g} ({_CAI_TOPIC_NAME[g]})' for g in ids)}"
                    for t, ids in enumerate(_MTCMRL_REUTERS_CAI))
        + ". The file has no vocabulary or topic names: the topics are identified by their "
        "sizes (each of the paper's nine class sizes occurs once among the file's 65 topics) "
        "and by the feature count (the union of these documents has exactly the paper's 6,439 "
        f"non-zero terms). Terms: {Xu.shape[1]} of {d.X.shape[1]} kept (document frequency >= "
        f"{min_df} in the union of the tasks, max_features={max_features!r}); "
        + ("raw term counts" if representation == "counts" else TFIDF_TEXT)
        + f"; {n_dropped} documents with no terms dropped"
    )
    return Xs, fine, kept, topics, kept_terms, src


def load_mtcmrl_tasks(name, *, source=None, representation=None, subset="all", min_df=1,
                      max_df=1.0, max_features=None, stop_words=None, cache_dir=None):
    """Multi-task data sets of MTCMRL (multi-task clustering with model relation learning).

    Parameters
    ----------
    name : {'20ng', 'reuters', 'webkb4'}
        '20ng': 4 tasks (task 1 = comp.graphics, rec.autos, sci.crypt; task 2 =
        comp.os.ms-windows.misc, rec.motorcycles, sci.electronics, talk.politics.mideast; task 3 =
        comp.sys.ibm.pc.hardware, rec.sport.baseball, sci.med; task 4 = comp.sys.mac.hardware,
        rec.sport.hockey, sci.space, talk.religion.misc), label = root (comp, rec, sci, talk).
        'reuters': task 1 = gnp, gold, cocoa; task 2 = cpi, nat-gas, iron-steel; task 3 = ipi,
        copper, coffee; label = root category: economic index (gnp, cpi, ipi), energy
        (nat-gas), food (cocoa, coffee) or metal (gold, iron-steel, copper).
        'webkb4': :func:`load_webkb4` (one task per university, 4 classes).
    source : {None, 'cai', 'r52'}, default=None
        Where the 'reuters' tasks come from (the other sets have one source; pass None).
        'cai' (the default for 'reuters'): Deng Cai's ``Reuters21578.mat``, the data of the
        paper, whose Table 1 it matches exactly: 206, 130 and 190 documents, 6,439 terms (those
        occurring in the union of the three tasks; stemmed, stop words removed by Cai). The file
        has no vocabulary and numeric topics only, so the mapping to the paper's topics rests on
        the class sizes (the nine sizes of Table 1 each occur exactly once among the file's 65
        topics: ``gnd`` ids 12, 10, 14 / 13, 23, 21 / 22, 17, 9) plus the feature count;
        ``feature_names`` is then None and ``feature_indices`` gives the file's columns.
        'r52': Cardoso-Cachopo's R52 (train + test, raw text with topic names), vectorised
        here (6,648 terms, a few more documents per topic than the paper).
    representation : {None, 'tfidf', 'counts'}, default=None
        For the text sets (ignored for webkb4, whose features are binary). None means raw
        counts for Cai's Reuters (as distributed) and tf-idf otherwise.
    subset : {'all', 'train', 'test'}, default='all'
        For '20ng' only: the bydate split to use (the MTCMRL paper's 20 Newsgroups task sizes
        match the 'test' split). The other sets accept only 'all'.
    min_df, max_df, max_features, stop_words
        CountVectorizer vocabulary selection, fitted on the union of the tasks. For Cai's
        Reuters (already a count matrix) only ``min_df`` (an int) and ``max_features`` apply.
    cache_dir : None, 'auto', False or path, default=None
        On-disk cache of the parsed 20 Newsgroups texts and count matrices ('auto' =
        ``$XDG_CACHE_HOME/bregclust`` or ``~/.cache/bregclust``; never inside the repository).
        None defers to the environment variable ``BREGCLUST_CACHE`` (unset: memory only).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``Xs``, ``ys`` (root labels, consistent across tasks), ``target_names`` (per task, the
        same root list), ``task_names``, ``categories`` (per task, the source categories),
        ``fine_labels`` (per task, each document's source category), ``feature_names``,
        ``description``; for Cai's Reuters also ``topic_ids`` (per task, each document's
        ``gnd``), ``indices`` (rows of the file per task) and ``feature_indices``.

    Raises
    ------
    ValueError
        Unknown name, source, representation or subset, or a vocabulary option that does not
        apply to the source.
    FileNotFoundError
        The source data are missing.

    Examples
    --------
    >>> d = load_mtcmrl_tasks("reuters")                      # doctest: +SKIP
    >>> [X.shape for X in d.Xs]                               # doctest: +SKIP
    [(206, 6439), (130, 6439), (190, 6439)]
    """
    if name not in MTCMRL_NAMES:
        raise ValueError(f"unknown MTCMRL data set {name!r}; known: {list(MTCMRL_NAMES)}.")
    choices = _MTCMRL_SOURCES.get(name, (None,))
    if source is not None and source not in choices:
        if choices == (None,):
            raise ValueError(f"{name!r} has a single source; pass source=None, got {source!r}.")
        raise ValueError(f"source must be one of {list(choices)} for {name!r} (None means "
                         f"{choices[0]!r}); got {source!r}.")
    source = choices[0] if source is None else source
    if representation is None:
        representation = "counts" if source == "cai" else "tfidf"
    rep = check_representation(representation)
    check_choice(subset, "subset", {"all", "train", "test"})
    if subset != "all" and name != "20ng":
        raise ValueError(f"subset={subset!r} applies to '20ng' only; use subset='all' for {name!r}.")
    if source == "cai":
        if max_df != 1.0 or stop_words is not None:
            raise ValueError("max_df and stop_words apply to raw text; Cai's Reuters is a count "
                             "matrix (stop words already removed): leave them at their defaults.")
        if not isinstance(min_df, (int, np.integer)) or isinstance(min_df, bool):
            raise ValueError(f"for Cai's Reuters min_df must be an integer; got {min_df!r}.")
        Xs, fine, kept, topics, kept_terms, src = _mtcmrl_reuters_cai(rep, min_df, max_features)
        roots = sorted(set(_REUTERS_ROOT.values()))
        ys = [np.array([roots.index(_REUTERS_ROOT[g]) for g in f], dtype=np.int64) for f in fine]
        desc = (f"MTCMRL reuters (source='cai'): {src}; label = root category {roots}. Task "
                "sizes: " + ", ".join(str(X.shape[0]) for X in Xs) + ".")
        return Bunch(Xs=Xs, ys=ys, target_names=[list(roots) for _ in Xs],
                     task_names=[f"task {t + 1}" for t in range(len(Xs))],
                     categories=[list(s) for s in _MTCMRL_REUTERS], fine_labels=fine,
                     topic_ids=topics, indices=kept, feature_names=None,
                     feature_indices=kept_terms, description=desc)
    in_subset = None
    if name == "webkb4":
        return load_webkb4()
    if name == "20ng":
        texts, groups, subsets, _ = ng20_raw(cache_dir)
        disk = ng20_disk(cache_dir)
        splits, labels = _MTCMRL_20NG, groups
        root_of = {g: g.split(".")[0] for s in splits for g in s}
        part = "train+test" if subset == "all" else f"{subset} split"
        src = f"20 Newsgroups bydate ({part}, {NG_FILE}, latin-1, headers kept)"
        if subset != "all":
            in_subset = subsets == subset
    else:
        labels, texts, _ = r52_raw("all")
        disk = (None, file_signature(*(data_file(f"{R52_DIR}/reuters-r52-{s}.tab", "Reuters R52")
                                   for s in ("train", "test"))))
        splits = _MTCMRL_REUTERS
        root_of = _REUTERS_ROOT
        src = "Reuters-21578 R52 (Cardoso-Cachopo, train+test, all-terms; source='r52')"
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
        f"terms; {'raw term counts' if rep == 'counts' else TFIDF_TEXT}; {n_dropped} documents "
        "with no terms dropped. Task sizes: " + ", ".join(str(X.shape[0]) for X in Xs) + "."
    )
    return Bunch(Xs=Xs, ys=ys, target_names=[list(roots) for _ in Xs],
                 task_names=[f"task {t + 1}" for t in range(len(Xs))],
                 categories=[list(s) for s in splits], fine_labels=fine, feature_names=feats,
                 description=desc)
