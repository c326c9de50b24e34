"""Tests of bregclust.datasets: real-data loaders (figures from each PROVENANCE.txt), the papers'
task splits (sizes implied by DATA.md), synthetic generators, and error messages."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import require_data

from bregclust import datasets as ds

# the papers' task splits as DATA.md states them ("The papers' task splits")
MBC_CLUTO_SPLITS = {"reviews": ((1, 4), (2, 5)), "hitech": ((1, 5), (2, 6)),
                    "ohscal": ((1, 8), (2, 9)), "tr11": ((1, 7), (3, 9)),
                    "tr45": ((1, 7), (4, 10)), "tr23": ((1, 6), (1, 6))}
MTCMRL_20NG = (
    ("comp.graphics", "rec.autos", "sci.crypt"),
    ("comp.os.ms-windows.misc", "rec.motorcycles", "sci.electronics", "talk.politics.mideast"),
    ("comp.sys.ibm.pc.hardware", "rec.sport.baseball", "sci.med"),
    ("comp.sys.mac.hardware", "rec.sport.hockey", "sci.space", "talk.religion.misc"),
)

# class sizes copied from the PROVENANCE.txt files
CLUTO = {
    "hitech": ((2301, 10080), [485, 116, 429, 603, 481, 187]),
    "ohscal": ((11162, 11465), [1159, 709, 764, 1001, 864, 1621, 1037, 1297, 1450, 1260]),
    "reviews": ((4069, 18483), [999, 1133, 1388, 137, 412]),
    "tr11": ((414, 6424), [21, 69, 52, 11, 29, 74, 132, 20, 6]),
    "tr23": ((204, 5831), [36, 11, 91, 45, 15, 6]),
    "tr45": ((690, 8261), [128, 75, 47, 14, 160, 36, 18, 82, 63, 67]),
}
NG_SIZES = {
    "alt.atheism": 799, "comp.graphics": 973, "comp.os.ms-windows.misc": 985,
    "comp.sys.ibm.pc.hardware": 982, "comp.sys.mac.hardware": 963, "comp.windows.x": 988,
    "misc.forsale": 975, "rec.autos": 990, "rec.motorcycles": 996, "rec.sport.baseball": 994,
    "rec.sport.hockey": 999, "sci.crypt": 991, "sci.electronics": 984, "sci.med": 990,
    "sci.space": 987, "soc.religion.christian": 997, "talk.politics.guns": 910,
    "talk.politics.mideast": 940, "talk.politics.misc": 775, "talk.religion.misc": 628,
}
NG_FILE = "20newsgroups/20news-bydate.tar.gz"


# ------------------------------------------------------------------------- data home, errors


def test_data_home_env_override(monkeypatch, tmp_path):
    monkeypatch.setenv("BREGCLUST_DATA", str(tmp_path))
    assert ds.get_data_home() == tmp_path


def test_data_home_candidates(monkeypatch, tmp_path):
    from bregclust.datasets import _base

    monkeypatch.delenv("BREGCLUST_DATA", raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path / "proj")           # <cwd>/../shared/data
    assert ds.get_data_home() == (tmp_path / "shared" / "data").resolve()
    monkeypatch.chdir(tmp_path)                     # <cwd>/shared/data
    assert ds.get_data_home() == (tmp_path / "shared" / "data").resolve()
    # nothing exists: the first candidate is returned
    empty = tmp_path / "a" / "b"
    empty.mkdir(parents=True)
    monkeypatch.chdir(empty)
    monkeypatch.setattr(_base, "_candidate_homes", lambda: [empty / ".." / "shared" / "data"])
    assert ds.get_data_home() == (tmp_path / "a" / "shared" / "data").resolve()


MISSING = [
    (lambda: ds.load_cluto("tr11"), "cluto_docs/tr11.mat"),
    (lambda: ds.load_20newsgroups(), NG_FILE),
    (lambda: ds.load_webkb4(), "webkb4_linqs/cornell.content"),
    (lambda: ds.load_malsar("rec.vs.talk"), "rec.vs.talk/Task1.mat"),
    (lambda: ds.load_reuters_r52(), "reuters-r52-train.tab"),
    (lambda: ds.load_reuters_cai(), "reuters21578/Reuters21578.mat"),
    (lambda: ds.load_glass(), "uci_glass/glass.data"),
    (lambda: ds.load_spambase(), "uci_spambase/spambase.data"),
    (lambda: ds.load_mnist_test(), "t10k-images-idx3-ubyte.gz"),
    (lambda: ds.load_mnist35(), "t10k-images-idx3-ubyte.gz"),
    (lambda: ds.load_mbc_tasks("tr23"), "cluto_docs/tr23.mat"),
    (lambda: ds.load_mbc_tasks("ng20-2"), NG_FILE),
    (lambda: ds.load_mtcmrl_tasks("reuters"), "reuters21578/Reuters21578.mat"),
    (lambda: ds.load_mtcmrl_tasks("reuters", source="r52"), "reuters-r52-train.tab"),
]


@pytest.mark.parametrize("loader, relpath", MISSING, ids=[m[1] for m in MISSING])
def test_missing_data_says_where_it_looked(monkeypatch, tmp_path, loader, relpath):
    monkeypatch.setenv("BREGCLUST_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=relpath.replace(".", r"\.")) as info:
        loader()
    msg = str(info.value)
    assert str(tmp_path) in msg
    assert "BREGCLUST_DATA" in msg


def test_missing_data_lists_candidates(monkeypatch, tmp_path):
    from bregclust.datasets import _base

    monkeypatch.delenv("BREGCLUST_DATA", raising=False)
    monkeypatch.setattr(_base, "_candidate_homes", lambda: [tmp_path / "x", tmp_path / "y"])
    with pytest.raises(FileNotFoundError, match="data folders tried") as info:
        ds.load_glass()
    assert str(tmp_path / "x") in str(info.value) and str(tmp_path / "y") in str(info.value)
    assert "BREGCLUST_DATA" in str(info.value)


def test_bad_names_raise_value_error():
    with pytest.raises(ValueError, match="unknown CLUTO data set 'tr99'; known: .*tr11"):
        ds.load_cluto("tr99")
    with pytest.raises(ValueError, match="unknown MBC data set 'ng20-4'"):
        ds.load_mbc_tasks("ng20-4")
    with pytest.raises(ValueError, match="unknown MTCMRL data set 'rcv1'"):
        ds.load_mtcmrl_tasks("rcv1")
    with pytest.raises(ValueError, match="unknown MALSAR problem 'comp.vs.rec'"):
        ds.load_malsar("comp.vs.rec")
    with pytest.raises(ValueError, match="representation must be 'counts'"):
        ds.load_mbc_tasks("tr11", representation="binary")
    with pytest.raises(ValueError, match="subset must be one of"):
        ds.load_20newsgroups(subset="dev")
    with pytest.raises(ValueError, match="vectorizer must be 'counts'"):
        ds.load_20newsgroups(vectorizer="hashing")
    with pytest.raises(ValueError, match="remove may contain"):
        ds.load_20newsgroups(remove=("signature",))


# ------------------------------------------------------------------------- single data sets


@pytest.mark.data
@pytest.mark.parametrize("name", sorted(CLUTO))
def test_cluto_shapes_and_class_sizes(name):
    require_data(f"cluto_docs/{name}.mat")
    d = ds.load_cluto(name)
    shape, sizes = CLUTO[name]
    assert sp.isspmatrix_csr(d.X) and d.X.dtype == np.float64
    assert d.X.shape == shape
    assert np.bincount(d.y).tolist() == sizes
    assert len(d.target_names) == len(sizes)
    assert d.X.data.min() > 0 and np.all(d.X.data == np.round(d.X.data))  # counts


@pytest.mark.data
def test_malsar_shapes():
    require_data("mtc_newsgroups_malsar/rec.vs.talk/Task1.mat",
                 "mtc_newsgroups_malsar/comp.vs.sci/task1.mat")
    expected = {"comp.vs.sci": [(1875, [967, 908]), (1827, [871, 956])],
                "rec.vs.talk": [(1844, [975, 869]), (1545, [860, 685])]}
    for problem, tasks in expected.items():
        d = ds.load_malsar(problem)
        for X, y, (n, sizes) in zip(d.Xs, d.ys, tasks):
            assert X.shape == (n, 2000) and sp.isspmatrix_csr(X)
            assert np.bincount(y).tolist() == sizes


@pytest.mark.data
def test_webkb4():
    require_data("webkb4_linqs/cornell.content")
    d = ds.load_webkb4()
    assert [X.shape for X in d.Xs] == [(176, 1703), (186, 1703), (221, 1703), (255, 1703)]
    assert d.target_names[0] == ["course", "faculty", "project", "student"]
    assert [np.bincount(y, minlength=4).tolist() for y in d.ys] == [
        [42, 32, 19, 83], [34, 31, 18, 103], [66, 27, 21, 107], [76, 35, 22, 122]]
    assert set(np.unique(np.vstack(d.Xs))) <= {0.0, 1.0}
    full = ds.load_webkb4(drop_staff=False, sparse=True)
    assert sum(X.shape[0] for X in full.Xs) == 877 and sp.isspmatrix_csr(full.Xs[0])
    assert "staff" in full.target_names[0]


@pytest.mark.data
def test_uci_and_mnist():
    require_data("uci_glass/glass.data", "uci_spambase/spambase.data",
                 "digits_mnist/t10k-images-idx3-ubyte.gz")
    g = ds.load_glass()
    assert g.X.shape == (214, 9) and np.bincount(g.y).tolist() == [70, 76, 17, 13, 9, 29]
    assert sorted(set(g.types)) == [1, 2, 3, 5, 6, 7]
    s = ds.load_spambase()
    assert s.X.shape == (4601, 57) and np.bincount(s.y).tolist() == [2788, 1813]
    assert s.feature_names[0] == "word_freq_make" and (s.X >= 0).all()
    m = ds.load_mnist_test()
    assert m.X.shape == (10000, 784)
    assert np.bincount(m.y).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    d = ds.load_mnist35()
    assert d.X.shape == (1902, 49) and np.bincount(d.y).tolist() == [1010, 892]
    first3 = m.images[np.flatnonzero(m.y == 3)[0]].astype(float)
    block = [first3[4 * i:4 * i + 4, 4 * j:4 * j + 4].mean() for i in range(7) for j in range(7)]
    np.testing.assert_allclose(d.X[d.y == 0][0], block)
    assert ds.load_mnist35(downscale=False).X.shape == (1902, 784)


@pytest.mark.data
def test_reuters():
    require_data("reuters21578/Reuters21578.mat", "reuters21578/cachopo_r52/reuters-r52-test.tab")
    c = ds.load_reuters_cai()
    assert c.X.shape == (8293, 18933) and len(c.target_names) == 65
    assert np.sort(np.bincount(c.y))[::-1][:3].tolist() == [3713, 2055, 321]
    assert c.train_mask.sum() == 5946
    top = ds.load_reuters_cai(n_largest=10)
    assert len(top.target_names) == 10 and top.X.shape[0] == 7285
    r = ds.load_reuters_r52(vectorizer="tfidf")
    assert r.X.shape[0] == 6532 + 2568 and len(r.target_names) == 52
    assert (r.subset == "train").sum() == 6532
    np.testing.assert_allclose(sp.linalg.norm(r.X, axis=1), 1.0)
    with pytest.raises(ValueError, match="unknown R52 topics \\['gold-bars'\\]"):
        ds.load_reuters_r52(categories=["gold-bars"])


# ------------------------------------------------------------------------- 20 Newsgroups


@pytest.fixture(scope="module")
def ng20():
    require_data(NG_FILE)
    return ds.load_20newsgroups()


@pytest.mark.data
def test_20newsgroups_counts(ng20):
    assert ng20.X.shape[0] == 18846
    sizes = dict(zip(ng20.target_names, np.bincount(ng20.y).tolist()))
    assert sizes == NG_SIZES
    assert (ng20.subset == "train").sum() == 11314
    assert (ng20.subset == "test").sum() == 7532
    assert np.all(ng20.X.data == np.round(ng20.X.data))


@pytest.mark.data
def test_20newsgroups_options(ng20):
    d = ds.load_20newsgroups(["sci.med", "rec.autos"], subset="test", vectorizer="tfidf",
                             max_features=500, remove=("headers",), return_text=True)
    assert d.target_names == ["rec.autos", "sci.med"]
    assert d.X.shape[1] == 500 and len(d.data) == d.X.shape[0]
    assert 780 <= d.X.shape[0] <= 396 + 396 and (d.subset == "test").all()  # test split sizes
    assert not d.data[0].startswith("From:")
    np.testing.assert_allclose(sp.linalg.norm(d.X, axis=1), 1.0)
    with pytest.raises(ValueError, match="unknown 20 Newsgroups categories \\['sci.bio'\\]"):
        ds.load_20newsgroups(["sci.bio"])


@pytest.mark.data
def test_mbc_ng20_splits(ng20):
    d1 = ds.load_mbc_tasks("ng20-1")
    assert [X.shape[0] for X in d1.Xs] == [9423, 9423]
    assert all(len(np.unique(y)) == 20 for y in d1.ys)
    assert not set(d1.indices[0]) & set(d1.indices[1])
    assert d1.Xs[0].shape[1] == d1.Xs[1].shape[1] == ng20.X.shape[1]
    np.testing.assert_allclose(sp.linalg.norm(d1.Xs[0], axis=1), 1.0)
    d2 = ds.load_mbc_tasks("ng20-2", representation="counts")
    no_talk = sum(v for k, v in NG_SIZES.items() if not k.startswith("talk."))
    no_comp = sum(v for k, v in NG_SIZES.items() if not k.startswith("comp."))
    assert [X.shape[0] for X in d2.Xs] == [no_talk, no_comp]
    assert [len(np.unique(y)) for y in d2.ys] == [16, 15]
    d3 = ds.load_mbc_tasks("ng20-3")
    assert [len(np.unique(y)) for y in d3.ys] == [20, 6]
    assert d3.target_names[1] == ["comp", "rec", "sci", "misc", "politics", "religion"]
    sizes = np.bincount(d3.ys[1]).tolist()
    assert sizes == [sum(v for k, v in NG_SIZES.items() if k.startswith("comp.")),
                     sum(v for k, v in NG_SIZES.items() if k.startswith("rec.")),
                     sum(v for k, v in NG_SIZES.items() if k.startswith("sci.")),
                     975, 910 + 940 + 775, 799 + 997 + 628]
    assert (d3.Xs[0] != d3.Xs[1]).nnz == 0


@pytest.mark.data
@pytest.mark.slow
def test_mtcmrl_20ng(ng20):
    d = ds.load_mtcmrl_tasks("20ng")
    expected = [sum(NG_SIZES[g] for g in task) for task in MTCMRL_20NG]
    assert [X.shape[0] for X in d.Xs] == expected == [2954, 3905, 2966, 3577]
    assert d.target_names[0] == ["comp", "rec", "sci", "talk"]
    assert [sorted(np.unique(y).tolist()) for y in d.ys] == [[0, 1, 2], [0, 1, 2, 3], [0, 1, 2],
                                                             [0, 1, 2, 3]]
    assert len({X.shape[1] for X in d.Xs}) == 1


@pytest.mark.data
@pytest.mark.slow
def test_mtcmrl_20ng_test_subset_matches_20newsgroups_loader(ng20):
    """subset='test' == the same categories through load_20newsgroups (the oracle route)."""
    d = ds.load_mtcmrl_tasks("20ng", subset="test", max_features=3000)
    assert [X.shape[0] for X in d.Xs] == [1181, 1561, 1185, 1429]  # the paper's task sizes
    assert "test split" in d.description
    cats = [c for task in MTCMRL_20NG for c in task]
    ref = ds.load_20newsgroups(categories=cats, subset="test", vectorizer="tfidf",
                               max_features=3000)
    groups = np.asarray(ref.target_names)[ref.y]
    for task, X, y in zip(MTCMRL_20NG, d.Xs, d.ys):
        idx = np.flatnonzero(np.isin(groups, task))
        assert abs(ref.X[idx] - X).max() == 0
        roots = [d.target_names[0].index(g.split(".")[0]) for g in groups[idx]]
        np.testing.assert_array_equal(y, roots)
    with pytest.raises(ValueError, match="subset='test' applies to '20ng' only"):
        ds.load_mtcmrl_tasks("reuters", subset="test")
    with pytest.raises(ValueError, match="subset must be one of"):
        ds.load_mtcmrl_tasks("20ng", subset="dev")


# ------------------------------------------------------------------------- task splits


@pytest.mark.data
@pytest.mark.parametrize("name", ["reviews", "hitech", "ohscal", "tr11", "tr45", "tr23"])
def test_mbc_cluto_splits(name):
    require_data(f"cluto_docs/{name}.mat")
    sizes = CLUTO[name][1]
    ranges = MBC_CLUTO_SPLITS[name]
    d = ds.load_mbc_tasks(name)
    expected = [sum(sizes[lo - 1:hi]) for lo, hi in ranges]
    if name == "tr23":
        expected[1] = 157
    assert [X.shape[0] for X in d.Xs] == expected
    assert d.Xs[0].shape[1] == d.Xs[1].shape[1]
    for y, (lo, hi) in zip(d.ys, ranges):
        assert set(np.unique(y) + 1) <= set(range(lo, hi + 1))
    np.testing.assert_allclose(sp.linalg.norm(d.Xs[0], axis=1), 1.0)
    # shared categories: the same documents, the same rows, in both tasks
    shared = np.intersect1d(d.indices[0], d.indices[1])
    if name != "tr23":
        assert shared.size == sum(sizes[ranges[1][0] - 1:ranges[0][1]])
    r0 = d.Xs[0][np.searchsorted(d.indices[0], shared)]
    r1 = d.Xs[1][np.searchsorted(d.indices[1], shared)]
    assert abs(r0 - r1).sum() == 0
    counts = ds.load_mbc_tasks(name, representation="counts")
    assert np.all(counts.Xs[0].data == np.round(counts.Xs[0].data))
    assert "tf-idf" in d.description and "raw term counts" in counts.description


@pytest.mark.data
def test_mbc_tr23_random_state():
    require_data("cluto_docs/tr23.mat")
    a = ds.load_mbc_tasks("tr23", random_state=0).indices[1]
    b = ds.load_mbc_tasks("tr23", random_state=0).indices[1]
    c = ds.load_mbc_tasks("tr23", random_state=1).indices[1]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.data
def test_mtcmrl_reuters_and_webkb():
    require_data("reuters21578/cachopo_r52/reuters-r52-train.tab", "webkb4_linqs/texas.content")
    d = ds.load_mtcmrl_tasks("reuters", source="r52")
    assert "source='r52'" in d.description and d.Xs[0].shape[1] == 6648
    np.testing.assert_allclose(sp.linalg.norm(d.Xs[0], axis=1), 1.0)     # tf-idf by default
    # R52 train+test topic sizes: gnp 73, gold 90, cocoa 61; cpi 71, nat-gas 36, iron-steel 38;
    # ipi 44, copper 44, coffee 112
    assert [X.shape[0] for X in d.Xs] == [224, 145, 200]
    assert d.target_names[0] == ["economic index", "energy", "food", "metal"]
    assert [np.bincount(y, minlength=4).tolist() for y in d.ys] == [
        [73, 0, 61, 90], [71, 36, 0, 38], [44, 0, 112, 44]]
    w = ds.load_mtcmrl_tasks("webkb4")
    assert len(w.Xs) == 4 and all(len(np.unique(y)) == 4 for y in w.ys)


@pytest.mark.data
def test_mtcmrl_reuters_cai_is_the_papers_table1():
    """Cai's Reuters21578.mat gives the paper's Table 1 exactly: class sizes and 6,439 terms."""
    require_data("reuters21578/Reuters21578.mat")
    d = ds.load_mtcmrl_tasks("reuters")                       # source='cai' by default
    assert [X.shape for X in d.Xs] == [(206, 6439), (130, 6439), (190, 6439)]
    assert d.target_names[0] == ["economic index", "energy", "food", "metal"]
    # Table 1: gnp 63, gold 90, cocoa 53; cpi 60, nat-gas 33, iron-steel 37; ipi 36, copper 44,
    # coffee 110 (labels: economic index 0, energy 1, food 2, metal 3)
    assert [np.bincount(y, minlength=4).tolist() for y in d.ys] == [
        [63, 0, 53, 90], [60, 33, 0, 37], [36, 0, 110, 44]]
    expected = [{"gnp": (12, 0), "gold": (10, 3), "cocoa": (14, 2)},
                {"cpi": (13, 0), "nat-gas": (23, 1), "iron-steel": (21, 3)},
                {"ipi": (22, 0), "copper": (17, 3), "coffee": (9, 2)}]
    for exp, fine, topics, y in zip(expected, d.fine_labels, d.topic_ids, d.ys):
        assert {f: (int(g), int(lab)) for f, g, lab in zip(fine, topics, y)} == exp
    # raw counts of the file, on the columns that occur in the union of the tasks
    full = ds.load_reuters_cai()
    gnd = np.asarray(full.target_names, dtype=np.int64)[full.y]
    for X, idx, topics in zip(d.Xs, d.indices, d.topic_ids):
        np.testing.assert_array_equal(gnd[idx], topics)
        assert abs(full.X[idx][:, d.feature_indices] - X).max() == 0
    union = np.concatenate(d.indices)
    assert np.all(np.asarray(full.X[union].sum(axis=0)).ravel()[d.feature_indices] > 0)
    assert full.X[union].sum() == sum(X.sum() for X in d.Xs)   # no occurring term left out
    assert d.feature_names is None and "6,439" in d.description
    # each of the nine sizes occurs once among the 65 topics: the mapping is unique
    sizes = np.bincount(full.y)
    for task in expected:
        for g, _ in task.values():
            assert np.sum(sizes == sizes[full.target_names.index(str(g))]) == 1
    tfidf = ds.load_mtcmrl_tasks("reuters", representation="tfidf")
    np.testing.assert_allclose(sp.linalg.norm(tfidf.Xs[2], axis=1), 1.0)
    assert ds.load_mtcmrl_tasks("reuters", max_features=1000).Xs[0].shape[1] == 1000


def test_mtcmrl_source_validation():
    with pytest.raises(ValueError, match=r"source must be one of \['cai', 'r52'\] for 'reuters'"):
        ds.load_mtcmrl_tasks("reuters", source="rcv1")
    with pytest.raises(ValueError, match="'webkb4' has a single source; pass source=None"):
        ds.load_mtcmrl_tasks("webkb4", source="cai")
    with pytest.raises(ValueError, match="max_df and stop_words apply to raw text"):
        ds.load_mtcmrl_tasks("reuters", stop_words="english")
    with pytest.raises(ValueError, match="min_df must be an integer"):
        ds.load_mtcmrl_tasks("reuters", min_df=0.5)


# ------------------------------------------------------------------------- no-download data


def test_digits_tasks():
    d = ds.make_digits_tasks()
    assert [sorted(np.unique(y).tolist()) for y in d.ys] == [[0, 1, 2, 3, 4, 5],
                                                             [3, 4, 5, 6, 7, 8, 9]]
    assert sum(X.shape[0] for X in d.Xs) == 1797          # split: every image exactly once
    assert not set(d.indices[0]) & set(d.indices[1])
    assert all(X.shape[1] == 64 and X.min() >= 0 and X.max() <= 16 for X in d.Xs)
    dup = ds.make_digits_tasks(shared="duplicate")
    assert np.bincount(dup.ys[0])[3] == np.bincount(dup.ys[1])[3] == 183
    np.testing.assert_array_equal(ds.make_digits_tasks().indices[0], d.indices[0])
    with pytest.raises(ValueError, match="digits must be in 0..9; got \\[12\\]"):
        ds.make_digits_tasks(tasks=[(1, 12)])
    with pytest.raises(ValueError, match="shared must be one of"):
        ds.make_digits_tasks(shared="both")


@pytest.mark.parametrize("family", ["gaussian", "poisson", "gamma"])
def test_multitask_blobs_domains_and_sharing(family):
    d = ds.make_multitask_blobs(n_tasks=3, n_samples=[300, 400, 500], n_clusters=[3, 4, 5],
                                n_shared=2, n_features=4, family=family, random_state=0)
    assert [X.shape for X in d.Xs] == [(300, 4), (400, 4), (500, 4)]
    assert [len(np.unique(y)) for y in d.ys] == [3, 4, 5]
    assert d.shared_labels == [0, 1]
    if family == "poisson":
        assert all((X >= 0).all() and np.all(X == np.round(X)) for X in d.Xs)
    if family == "gamma":
        assert all((X > 0).all() for X in d.Xs)
    # shared centres identical in every task, private labels used by one task only
    for t in range(3):
        np.testing.assert_array_equal(d.centers[t][:2], d.centers[0][:2])
        np.testing.assert_array_equal(d.center_labels[t][:2], [0, 1])
    private = [set(c[2:].tolist()) for c in d.center_labels]
    assert all(not (private[a] & private[b]) for a in range(3) for b in range(a + 1, 3))
    # the data of a shared cluster are centred on the shared centre in every task (mean = centre
    # for all three families)
    for t in range(3):
        for j, lab in enumerate(d.center_labels[t]):
            m = d.Xs[t][d.ys[t] == lab].mean(axis=0)
            np.testing.assert_allclose(m, d.centers[t][j], rtol=0.25, atol=1.0)


def test_multitask_blobs_defaults_and_reproducible():
    a = ds.make_multitask_blobs(random_state=3)
    b = ds.make_multitask_blobs(random_state=3)
    for X, Y in zip(a.Xs, b.Xs):
        np.testing.assert_array_equal(X, Y)
    assert a.shared_labels == [0, 1] and [len(np.unique(y)) for y in a.ys] == [3, 3]


def test_multitask_blobs_validation():
    with pytest.raises(ValueError, match="family must be one of"):
        ds.make_multitask_blobs(family="laplace")
    with pytest.raises(ValueError, match=r"n_shared must be an integer in \[0, min\(n_clusters\)=3\]"):
        ds.make_multitask_blobs(n_clusters=[3, 4], n_shared=4)
    with pytest.raises(ValueError, match="n_clusters must be an int or a list of 2"):
        ds.make_multitask_blobs(n_clusters=[3, 4, 5])
    with pytest.raises(ValueError, match="center_box low must be > 0"):
        ds.make_multitask_blobs(family="poisson", center_box=(-1, 5))
    with pytest.raises(ValueError, match="n_samples=2 < n_clusters=3"):
        ds.make_multitask_blobs(n_samples=2)
    with pytest.raises(ValueError, match="n_tasks must be a positive integer"):
        ds.make_multitask_blobs(n_tasks=0)


# ------------------------------------------------------------------------- 20NG parsing on a toy tarball


def _toy_20ng(root):
    """A tiny tarball with the bydate layout (no real data needed)."""
    import io
    import tarfile

    docs = {
        "20news-bydate-train/sci.med/1": "From: a@b\nSubject: x\n\ndoctor patient doctor\n",
        "20news-bydate-train/rec.autos/2": "From: c@d\n\ncar engine\n\n-- \nsig line\n",
        "20news-bydate-test/sci.med/3": "From: e@f\n\n> quoted text\npatient caf\xe9\n",
        "20news-bydate-test/rec.autos/4": "From: g@h\n\n\n",
    }
    (root / "20newsgroups").mkdir(parents=True)
    with tarfile.open(root / NG_FILE, "w:gz") as tf:
        for name, text in docs.items():
            b = text.encode("latin-1")
            info = tarfile.TarInfo(name)
            info.size = len(b)
            tf.addfile(info, io.BytesIO(b))
    return docs


def test_20newsgroups_toy_tarball_and_disk_cache(monkeypatch, tmp_path):
    _toy_20ng(tmp_path / "data")
    monkeypatch.setenv("BREGCLUST_DATA", str(tmp_path / "data"))
    cache = tmp_path / "cache"
    d = ds.load_20newsgroups(cache_dir=cache, remove=("headers", "footers", "quotes"),
                             return_text=True)
    assert list(cache.glob("20news-bydate-*.pkl"))          # parsed texts cached on disk
    assert d.target_names == ["rec.autos", "sci.med"]
    # document 4 has no body: dropped once headers are removed
    assert d.X.shape[0] == 3 and d.y.tolist() == [0, 1, 1]
    assert d.subset.tolist() == ["train", "train", "test"]
    assert "sig" not in d.feature_names and "quoted" not in d.feature_names
    assert "café" in d.feature_names                         # latin-1 decoding
    row = d.X[1].toarray().ravel()
    assert row[list(d.feature_names).index("doctor")] == 2
    # second call reads the pickle (same result) and keeps all documents without removal
    full = ds.load_20newsgroups(cache_dir=cache, remove_empty=False)
    assert full.X.shape[0] == 4 and "from" in full.feature_names
    test_only = ds.load_20newsgroups(subset="test", vectorizer="tfidf")
    assert test_only.X.shape[0] == 2


def test_20newsgroups_count_cache_on_disk(monkeypatch, tmp_path):
    from bregclust.datasets import _base, _text

    _toy_20ng(tmp_path / "data")
    monkeypatch.setenv("BREGCLUST_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("BREGCLUST_CACHE", str(tmp_path / "envcache"))
    first = ds.load_20newsgroups(min_df=1)
    assert list((tmp_path / "envcache").glob("20ng-counts-*.npz"))
    monkeypatch.setattr(_base, "_COUNTS_CACHE", {})          # forget the in-memory copy
    monkeypatch.setattr(_text, "_ng_vectorize", None)         # a re-vectorisation would fail
    again = ds.load_20newsgroups(min_df=1)
    assert (first.X != again.X).nnz == 0
    assert list(first.feature_names) == list(again.feature_names)
    # the cached matrix is never handed out: editing a result leaves the next one intact
    again.X.data[:] = -1
    assert ds.load_20newsgroups(min_df=1).X.data.min() > 0
