"""The bregclust command: divergences table, demo on bundled digits, fit on files."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import uniform_points

from bregclust.cli import main, read_matrix


def test_divergences_table(capsys):
    assert main(["divergences"]) == 0
    out = capsys.readouterr().out
    for name in ("sqeuclidean", "mahalanobis", "kl", "itakura_saito", "l1_subgradient"):
        assert name in out
    assert ">= 0 / > 0" in out


def test_demo_runs_on_bundled_digits(capsys):
    from threadpoolctl import threadpool_info

    before = [(d["filepath"], d["num_threads"]) for d in threadpool_info()]
    assert main(["demo", "--quiet", "--methods", "ind", "--draws", "2"]) == 0
    # the command holds the OpenMP pools to one thread while it runs, then gives them back
    assert [(d["filepath"], d["num_threads"]) for d in threadpool_info()
            if d["filepath"] in dict(before)] == before
    out = capsys.readouterr().out
    assert "IND k-means (sqeuclidean)" in out and "IND k-means (kl)" in out
    import re
    rows = [ln for ln in out.splitlines() if ln.startswith("IND")]
    nmis = [float(m) for ln in rows for m in re.findall(r"(\d\.\d{3}) / \d\.\d{3} / \d\.\d{3}", ln)]
    # two IND rows in each regime (full tasks, few images per class), two tasks each
    assert len(nmis) == 8 and min(nmis) > 0.5  # digits cluster well with either divergence
    assert "1. Full tasks (811 and 986 images)" in out
    assert "2. Few images per class: 20 per class and task (120 and 140 images), 2 random draws" \
        in out
    assert "(no conclusion: add a multi-task method to --methods)" in out
    assert "Conclusion" not in out  # nothing to compare with IND


@pytest.mark.parametrize("fmt", ["npy", "npz", "npz_sparse", "csv", "mtx", "svmlight"])
def test_read_matrix_formats(tmp_path, fmt):
    X = np.arange(12, dtype=float).reshape(4, 3)
    if fmt == "npy":
        p = tmp_path / "x.npy"
        np.save(p, X)
    elif fmt == "npz":
        p = tmp_path / "x.npz"
        np.savez(p, X=X)
    elif fmt == "npz_sparse":
        p = tmp_path / "x.npz"
        sp.save_npz(p, sp.csr_matrix(X))
    elif fmt == "csv":
        p = tmp_path / "x.csv"
        np.savetxt(p, X, delimiter=",", header="a,b,c", comments="")
    elif fmt == "mtx":
        from scipy.io import mmwrite
        p = tmp_path / "x.mtx"
        mmwrite(str(p), sp.coo_matrix(X))
    else:
        from sklearn.datasets import dump_svmlight_file
        p = tmp_path / "x.svmlight"
        dump_svmlight_file(X, np.zeros(4), str(p))
    M = read_matrix(p)
    M = M.toarray() if sp.issparse(M) else M
    assert np.allclose(M[:, : X.shape[1]], X)


def test_fit_writes_labels(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.poisson(2, (30, 5)), rng.poisson(9, (30, 5))]).astype(float)
    src = tmp_path / "counts.npy"
    np.save(src, X)
    out = tmp_path / "labels.txt"
    assert main(["fit", str(src), "-k", "2", "--divergence", "kl", "-o", str(out),
                 "--n-init", "3", "--quiet"]) == 0
    lab = np.loadtxt(out, dtype=int)
    assert lab.shape == (60,)
    assert len(set(lab[:30])) == 1 and len(set(lab[30:])) == 1 and lab[0] != lab[-1]


def test_fit_errors_are_reported(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "missing.npy")]) == 2
    assert "data file not found" in capsys.readouterr().err
    p = tmp_path / "neg.npy"
    np.save(p, -np.ones((5, 2)))
    assert main(["fit", str(p), "-k", "2", "--divergence", "kl"]) == 2
    assert "kl needs non-negative data" in capsys.readouterr().err
    q = tmp_path / "x.parquet"
    q.write_text("")
    assert main(["fit", str(q)]) == 2
    assert "unsupported file type" in capsys.readouterr().err


def test_help_everywhere(capsys):
    for cmd in ([], ["fit"], ["demo"], ["divergences"]):
        with pytest.raises(SystemExit) as exc:
            main(cmd + ["--help"])
        assert exc.value.code == 0
        assert "usage: bregclust" in capsys.readouterr().out


def test_fit_agglomerative_two_tasks(tmp_path):
    rng = np.random.default_rng(1)
    files = []
    for t in range(2):
        X = np.vstack([rng.normal(0, 0.3, (15, 3)), rng.normal(5, 0.3, (15, 3))])
        files.append(tmp_path / f"task{t}.npy")
        np.save(files[-1], X)
    assert main(["fit", *map(str, files), "--method", "agglomerative", "-k", "2",
                 "--output-dir", str(tmp_path / "out"), "--quiet"]) == 0
    for t in range(2):
        lab = np.loadtxt(tmp_path / "out" / f"task{t}.labels.txt", dtype=int)
        assert len(set(lab[:15])) == 1 and len(set(lab[15:])) == 1 and lab[0] != lab[-1]


def test_fit_mtcmrl_two_tasks(tmp_path):
    rng = np.random.default_rng(2)
    files = []
    for t in range(2):
        X = np.vstack([rng.poisson([8, 1, 1, 0.5], (20, 4)), rng.poisson([1, 1, 8, 0.5], (20, 4))])
        files.append(tmp_path / f"t{t}.npy")
        np.save(files[-1], X.astype(float))
    assert main(["fit", *map(str, files), "--method", "mtcmrl", "-k", "2", "--quiet"]) == 0
    for t in range(2):
        lab = np.loadtxt(tmp_path / f"t{t}.labels.txt", dtype=int)
        assert (lab[:20] == lab[0]).mean() >= 0.9 and (lab[20:] == lab[-1]).mean() >= 0.9
        assert lab[0] != lab[-1]


@pytest.mark.parametrize("method", ["lssmtc", "lskmtc"])
def test_fit_other_multitask_methods(tmp_path, method):
    rng = np.random.default_rng(3)
    files = []
    for t in range(2):
        X = np.vstack([rng.normal(0, 0.5, (25, 4)) + [4, 0, 0, 0],
                       rng.normal(0, 0.5, (25, 4)) + [0, 4, 0, 0]])
        files.append(tmp_path / f"t{t}.csv")
        np.savetxt(files[-1], X, delimiter=",")
    assert main(["fit", *map(str, files), "--method", method, "-k", "2", "--quiet"]) == 0
    if method == "lskmtc":
        # LSKMTC (b=1, r=30) does not recover these 25-point blobs in any start or
        # normalisation; check the wiring: the files hold the estimator's labels
        from bregclust.kernel_mtc import SpectralKernelMTC

        Xs = [np.loadtxt(f, delimiter=",") for f in files]
        ref = SpectralKernelMTC(2, random_state=0).fit(Xs).labels_  # the estimator's own C
    for t in range(2):
        lab = np.loadtxt(tmp_path / f"t{t}.labels.txt", dtype=int)
        assert lab.shape == (50,) and set(lab) <= {0, 1}
        if method == "lskmtc":
            assert np.array_equal(lab, ref[t])
        else:
            assert (lab[:25] == lab[0]).mean() >= 0.9 and (lab[25:] == lab[-1]).mean() >= 0.9


def test_fit_mbc_two_tasks(tmp_path):
    rng = np.random.default_rng(4)
    files = []
    for t in range(2):
        X = np.vstack([rng.poisson([9, 1, 1], (20, 3)), rng.poisson([1, 1, 9], (20, 3))])
        files.append(tmp_path / f"m{t}.npy")
        np.save(files[-1], X.astype(float))
    assert main(["fit", *map(str, files), "--method", "mbc", "-k", "2", "--divergence", "kl",
                 "--lam", "0.5", "--quiet"]) == 0
    for t in range(2):
        lab = np.loadtxt(tmp_path / f"m{t}.labels.txt", dtype=int)
        assert len(set(lab[:20])) == 1 and len(set(lab[20:])) == 1 and lab[0] != lab[-1]


def test_fit_mbc_default_lam_is_auto(tmp_path, capsys):
    from bregclust import MultitaskBregmanClustering

    rng = np.random.default_rng(5)
    Xs = [np.vstack([rng.poisson([9, 1, 1], (20, 3)), rng.poisson([1, 1, 9], (20, 3))]).astype(float)
          for _ in range(2)]
    files = []
    for t, X in enumerate(Xs):
        files.append(str(tmp_path / f"a{t}.npy"))
        np.save(files[-1], X)
    ref = MultitaskBregmanClustering([2, 2], divergence="kl", random_state=0).fit(Xs)
    for extra in ([], ["--lam", "auto"]):
        assert main(["fit", *files, "--method", "mbc", "-k", "2", "--divergence", "kl",
                     "--quiet", *extra]) == 0
        for t in range(2):
            np.testing.assert_array_equal(np.loadtxt(tmp_path / f"a{t}.labels.txt", dtype=int),
                                          ref.labels_[t])
    assert main(["fit", *files, "--method", "mtcmrl", "-k", "2", "--lam", "auto"]) == 2
    assert "--lam auto is not available for --method mtcmrl" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fit", *files, "--method", "mbc", "-k", "2", "--lam", "strong"])
    assert "must be a number or 'auto'" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_all_methods(capsys):
    assert main(["demo", "--quiet"]) == 0
    out = capsys.readouterr().out
    for name in ("IND k-means", "MBC (sqeuclidean", "MBC (kl", "AGG (Ward", "LNKMTC (C=auto: ",
                 "LSKMTC (C=1000)", "LSSMTC (random start", "LSSMTC lam=1 control", "MTCMRL",
                 "LNKMTC (C=auto)", "MBC (kl, lam=auto)", "IND spectral (cosine 10-NN)",
                 "SpectralMTC (base, coupling=auto: ", "SpectralMTC (base, coupling=auto)"):
        assert name in out, name
    import re
    full, few = out.split("2. Few images per class")
    # the default regime: 3 draws, and the command says how to narrow the spreads
    assert "3 random draws (seeds 0..2)" in few.replace("\n", " ")
    assert "--draws 10 or more narrows the spreads" in few.replace("\n", " ")
    cell = r"(\d\.\d{3}) / (-?\d\.\d{3}) / (\d\.\d{3})"
    for part in (full, few):
        rows = {m.group(1).strip(): [float(v) for v in m.groups()[1:]]
                for m in re.finditer(rf"^(.+?)\s+{cell}\s+{cell}\s*$", part, re.MULTILINE)}
        assert len(rows) == 15, part
        # digits cluster well with k-means, MBC and agglomerative: NMI > 0.5, accuracy > 0.6
        for name, (nmi0, _, acc0, nmi1, _, acc1) in rows.items():
            if name.startswith(("IND", "MBC", "AGG")):
                assert min(nmi0, nmi1) > 0.5 and min(acc0, acc1) > 0.6, (name, rows[name])
    # one verdict per non-IND row of the full run, its differences computed from the printed NMIs
    rows = {m.group(1).strip(): [float(v) for v in m.groups()[1:]]
            for m in re.finditer(rf"^(.+?)\s+{cell}\s+{cell}\s*$", full, re.MULTILINE)}
    ref = [max(v[i] for n, v in rows.items() if n.startswith("IND")) for i in (0, 3)]
    verdicts = dict(re.findall(r"^  (.+?): ([+-]\d\.\d{3} / [+-]\d\.\d{3}) NMI vs IND: ",
                               full, re.MULTILINE))
    assert sorted(verdicts) == sorted(n for n in rows if not n.startswith("IND"))
    for name, diffs in verdicts.items():
        got = [float(v) for v in diffs.split(" / ")]
        assert got == pytest.approx([rows[name][0] - ref[0], rows[name][3] - ref[1]], abs=2e-3)
    # the few-image verdicts carry their spread, and the conclusion follows from them
    spread = re.findall(r"^  (.+?): [+-]\d\.\d{3} ± \d\.\d{3} / [+-]\d\.\d{3} ± \d\.\d{3} NMI vs "
                        r"IND: (.+)$", few.replace("\n      ", " "), re.MULTILINE)
    assert len(spread) == 10
    gains = [n for n, v in spread if v == "gains on every task" and not n.startswith("AGG")]
    assert ("Conclusion: no multi-task method beats IND" in few) == (not gains)
    assert "Time per method group (full tasks / few images, all draws): SpectralMTC: " in few
    assert ", IND: " in few


def _two_task_files(tmp_path, seed=3):
    rng = np.random.default_rng(seed)
    files = []
    for t in range(2):
        X = np.vstack([rng.normal(0, 0.5, (25, 4)) + [4, 0, 0, 0],
                       rng.normal(0, 0.5, (25, 4)) + [0, 4, 0, 0]])
        files.append(tmp_path / f"k{t}.npy")
        np.save(files[-1], X)
    return [str(f) for f in files]


def test_fit_kernel_mtc_takes_C_not_lam(tmp_path, capsys):
    from bregclust.kernel_mtc import SpectralKernelMTC

    files = _two_task_files(tmp_path)
    Xs = [np.load(f) for f in files]
    for C in (0.0, 10.0):
        assert main(["fit", *files, "--method", "lskmtc", "-k", "2", "--C", str(C),
                     "--quiet"]) == 0
        ref = SpectralKernelMTC(2, C=C, random_state=0).fit(Xs).labels_
        for t in range(2):
            np.testing.assert_array_equal(np.loadtxt(tmp_path / f"k{t}.labels.txt", dtype=int),
                                          ref[t])
    assert main(["fit", *files, "--method", "lskmtc", "-k", "2", "--lam", "10"]) == 2
    assert "--lam does not apply to --method lskmtc" in capsys.readouterr().err
    assert main(["fit", *files, "--method", "mbc", "-k", "2", "--C", "10"]) == 2
    assert "--C does not apply to --method mbc" in capsys.readouterr().err


def test_fit_n_clusters_per_task_errors(tmp_path, capsys):
    files = _two_task_files(tmp_path)
    assert main(["fit", *files, "--method", "mbc", "-k", "2,2,2"]) == 2
    assert "--n-clusters has 3 entries but there are 2 tasks" in capsys.readouterr().err
    assert main(["fit", *files, "--method", "mbc", "-k", "two"]) == 2
    assert "-k/--n-clusters must be a positive integer or comma-separated" in capsys.readouterr().err


def _make_user_error_files(tmp_path):
    np.save(tmp_path / "ok.npy", np.random.default_rng(0).random((12, 3)))
    (tmp_path / "empty.npy").write_bytes(b"")
    (tmp_path / "empty.npz").write_bytes(b"")
    (tmp_path / "dir.csv").mkdir()
    (tmp_path / "outdir").mkdir()
    np.save(tmp_path / "one.npy", np.arange(5.0))
    np.save(tmp_path / "cplx.npy", np.ones((4, 2)) * 1j)
    (tmp_path / "rand.npz").write_bytes(np.random.RandomState(0).bytes(300))
    (tmp_path / "bad.csv").write_text("1,2,x\n4,5,6\n7,8,9\n")
    (tmp_path / "ragged.csv").write_text("1,2,3\n4,5\n")


@pytest.mark.parametrize("argv, message", [
    (["fit", "empty.npy"], "empty.npy is empty"),
    (["fit", "empty.npz"], "empty.npz is empty"),
    (["fit", "ok.npy", "--n-init", "0"], "--n-init must be >= 1"),
    (["fit", "ok.npy", "--max-iter", "0"], "--max-iter must be >= 1"),
    (["fit", "dir.csv"], "is a directory"),
    (["fit", "ok.npy", "-k", "2", "-o", "outdir"], "is a directory"),
    (["fit", "ok.npy", "-k", "2", "--output-dir", "ok.npy"], "is not a directory"),
    (["fit", "ok.npy", "-k", "abc"], "-k/--n-clusters must be a positive integer"),
    (["fit", "ok.npy", "-k", "2,x"], "-k/--n-clusters must be a positive integer"),
    (["demo", "--methods", "bogus"], "unknown method group"),
    (["fit", "one.npy"], "shape (5,)"),
    (["fit", "cplx.npy"], "complex"),
    (["fit", "rand.npz"], "not a .npz archive"),
    (["fit", "bad.csv"], "line 1, column 3: 'x' is not a number"),
    (["fit", "ragged.csv"], "line 2: 2 fields"),
    (["fit", "ok.npy", "-k", "2", "--divergence", "mahalanobis"], "--mahalanobis-matrix"),
    (["fit", "ok.npy", "ok.npy", "-k", "2", "-o", "l.txt"], "use --output-dir"),
    (["fit", "ok.npy", "ok.npy", "-k", "2"], "would both write"),
    (["fit", "ok.npy", "--n-init", "x"], "invalid int value"),
])
def test_user_errors_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    _make_user_error_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv + ["--quiet"] if argv[0] == "demo" else argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2
    assert len(lines) == 1 and "Traceback" not in err, err
    assert message in lines[0]


def test_demo_verdicts_from_the_numbers():
    from bregclust.demo import verdicts

    rows = [("IND a", [(0.50, 0, 0), (0.60, 0, 0)]), ("IND b", [(0.55, 0, 0), (0.58, 0, 0)]),
            ("up", [(0.60, 0, 0), (0.70, 0, 0)]), ("same", [(0.555, 0, 0), (0.595, 0, 0)]),
            ("down", [(0.40, 0, 0), (0.50, 0, 0)]), ("mixed", [(0.60, 0, 0), (0.50, 0, 0)])]
    # the reference is the best IND row per task: 0.55 on task 0, 0.60 on task 1
    assert verdicts(rows) == [
        "up: +0.050 / +0.100 NMI vs IND: gains on every task",
        "same: +0.005 / -0.005 NMI vs IND: level with IND",
        "down: -0.150 / -0.100 NMI vs IND: below IND on every task",
        "mixed: +0.050 / -0.100 NMI vs IND: no clear gain on these tasks",
    ]
    with pytest.raises(ValueError, match="at least one row whose name starts with 'IND'"):
        verdicts(rows[2:])


def test_demo_plot_writes_the_two_panels(tmp_path, capsys):
    import matplotlib.image as mpimg

    out = tmp_path / "demo.png"
    assert main(["demo", "--quiet", "--methods", "ind", "mbc", "--plot", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    img = mpimg.imread(out)
    assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 400
    assert img[..., :3].std() > 0.05  # not a blank canvas


def test_demo_plot_needs_a_multitask_method(tmp_path, capsys):
    assert main(["demo", "--quiet", "--methods", "ind", "--plot", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "--plot needs the IND rows and at least one other method" in err
    assert "Traceback" not in err


# ----------------------------------------------------------------------------- options and defaults
def _user_error(capsys, argv):
    """Run the CLI; assert a user error: exit 2, one line on stderr, no traceback."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _estimator_class(method):
    """The public estimator class :data:`bregclust.cli.METHODS` names for ``method``."""
    import bregclust
    from bregclust.cli import METHODS

    return getattr(bregclust, METHODS[method][0])


@pytest.fixture
def recorded_fits(monkeypatch):
    """Replace every CLI method's ``fit`` by one that records the estimator's parameters."""
    from bregclust.cli import METHODS

    calls = []

    def fake_fit(self, X, y=None):
        calls.append(self.get_params(deep=False))
        if isinstance(X, list):
            self.labels_ = [np.zeros(x.shape[0], dtype=int) for x in X]
        else:
            self.labels_ = np.zeros(X.shape[0], dtype=int)
        return self

    for method in METHODS:
        monkeypatch.setattr(_estimator_class(method), "fit", fake_fit)
    return calls


def _task_files(tmp_path, n=12, d=3, T=2):
    rng = np.random.default_rng(0)
    files = []
    for t in range(T):
        files.append(str(tmp_path / f"task{t}.npy"))
        np.save(files[-1], rng.random((n, d)) + 0.1)
    return files


@pytest.mark.parametrize("method", ["kmeans", "minibatch", "bisecting", "mixture",
                                    "agglomerative", "mbc", "mtcmrl", "lssmtc", "lskmtc",
                                    "lnkmtc"])
def test_options_not_given_leave_the_estimator_defaults(tmp_path, recorded_fits, method):
    files = _task_files(tmp_path)
    assert main(["fit", *files, "--method", method, "--quiet",
                 "--output-dir", str(tmp_path / "out")]) == 0
    defaults = _estimator_class(method)().get_params(deep=False)
    assert recorded_fits
    for got in recorded_fits:
        for name, value in defaults.items():
            if name == "random_state":
                assert got[name] == 0  # the CLI's reproducible seed
            elif name != "joint":
                assert got[name] == value, (method, name)


def test_mtcmrl_from_the_cli_keeps_its_own_max_iter(tmp_path, recorded_fits):
    from bregclust import ModelRelationClustering

    files = _task_files(tmp_path)
    assert main(["fit", *files, "--method", "mtcmrl", "-k", "2", "--quiet"]) == 0
    assert recorded_fits[-1]["max_iter"] == ModelRelationClustering().max_iter
    assert main(["fit", *files, "--method", "mtcmrl", "-k", "2", "--max-iter", "7",
                 "--quiet"]) == 0
    assert recorded_fits[-1]["max_iter"] == 7


_VALUES = {"divergence": ("--divergence", "kl", "kl"), "model": ("--model", "kl", "kl"),
           "lam": ("--lam", "0.25", 0.25), "C": ("--C", "3", 3.0),
           "marginals": ("--marginals", "empirical", "empirical"),
           "centroid_solver": ("--centroid-solver", "geodesic", "geodesic"),
           "n_init": ("--n-init", "2", 2), "max_iter": ("--max-iter", "9", 9),
           "tol": ("--tol", "0.5", 0.5), "seed": ("--seed", "5", 5),
           "verbose": ("-vv", None, 2), "smoothing": ("--smoothing", "2", 2.0),
           "batch_size": ("--batch-size", "64", 64),
           "bisecting_strategy": ("--bisecting-strategy", "largest_cluster", "largest_cluster"),
           "family": ("--family", "poisson", "poisson"),
           "basis": ("--basis", "C5", "C5"), "column_clusters": ("--column-clusters", "2", 2)}


def _option_cases(taken):
    from bregclust.cli import METHODS, OPTIONS, method_options

    return [(m, o) for m in METHODS for o in OPTIONS
            if o != "mahalanobis_matrix" and (o in method_options(m)) == taken]


@pytest.mark.parametrize("method, option", _option_cases(taken=True))
def test_an_option_a_method_takes_reaches_its_estimator(tmp_path, recorded_fits, method,
                                                        option):
    from bregclust.cli import method_options

    flag, text, value = _VALUES[option]
    files = _task_files(tmp_path)
    argv = ["fit", *files, "--method", method, "-k", "2", "--quiet", flag]
    assert main(argv + ([text] if text is not None else [])) == 0
    assert recorded_fits[-1][method_options(method)[option]] == value


@pytest.mark.parametrize("method, option", _option_cases(taken=False))
def test_an_option_a_method_does_not_take_is_refused_naming_both(tmp_path, capsys, method,
                                                                 option):
    flag, text, _ = _VALUES[option]
    files = _task_files(tmp_path)
    argv = ["fit", *files, "--method", method, "-k", "2", flag]
    line = _user_error(capsys, argv + ([text] if text is not None else []))
    shown = "-v" if option == "verbose" else flag
    assert f"{shown} does not apply to --method {method}" in line


def test_the_option_table_is_read_from_the_estimators():
    from bregclust.cli import METHODS, OPTIONS, method_options

    for method in METHODS:
        params = _estimator_class(method)().get_params(deep=False)
        for param in method_options(method).values():
            assert param in params
        for option in set(OPTIONS) - set(method_options(method)):
            assert OPTIONS[option] not in params or method == "agglomerative"
    assert "lnkmtc" in METHODS  # the README recommends LNKMTC
    assert method_options("agglomerative")["divergence"] == "model"


def test_auto_is_applied_or_refused_as_the_estimator_documents(tmp_path, recorded_fits,
                                                               capsys):
    files = _task_files(tmp_path)
    base = ["fit", *files, "-k", "2", "--quiet"]
    assert main(base + ["--method", "mbc", "--lam", "auto"]) == 0
    assert recorded_fits[-1]["lam"] == "auto"
    assert main(base + ["--method", "lnkmtc", "--C", "auto"]) == 0
    assert recorded_fits[-1]["C"] == "auto"
    assert main(base + ["--method", "lnkmtc", "--C", "10"]) == 0
    assert recorded_fits[-1]["C"] == 10.0
    line = _user_error(capsys, base + ["--method", "lskmtc", "--C", "auto"])
    assert "--C auto is not available for --method lskmtc" in line and "give a number" in line
    line = _user_error(capsys, base + ["--method", "lssmtc", "--lam", "auto"])
    assert "--lam auto is not available for --method lssmtc" in line


@pytest.mark.parametrize("flag, value", [("--lam", "nan"), ("--C", "inf"), ("--tol", "nan"),
                                         ("--lam", "-inf")])
def test_non_finite_option_values_are_refused(tmp_path, capsys, flag, value):
    files = _task_files(tmp_path)
    line = _user_error(capsys, ["fit", *files, "--method", "mbc", f"{flag}={value}"])
    assert f"argument {flag}: must be a finite number" in line


def test_divergence_and_model_together_are_refused_for_agglomerative(tmp_path, capsys):
    files = _task_files(tmp_path)
    line = _user_error(capsys, ["fit", *files, "--method", "agglomerative", "--divergence",
                                "kl", "--model", "kl"])
    assert "--divergence and --model both set the model of --method agglomerative" in line


def test_mahalanobis_matrix_without_mahalanobis_is_refused(tmp_path, capsys):
    files = _task_files(tmp_path)
    line = _user_error(capsys, ["fit", files[0], "--mahalanobis-matrix", files[1]])
    assert "--mahalanobis-matrix is the matrix of --divergence mahalanobis" in line


def test_mahalanobis_matrix_reaches_the_estimator(tmp_path):
    from bregclust import BregmanKMeans

    X = np.random.default_rng(1).random((20, 3))
    A = np.diag([1.0, 2.0, 3.0])
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "A.npy", A)
    assert main(["fit", str(tmp_path / "X.npy"), "-k", "2", "--divergence", "mahalanobis",
                 "--mahalanobis-matrix", str(tmp_path / "A.npy"), "--quiet"]) == 0
    ref = BregmanKMeans(2, divergence="mahalanobis", divergence_params={"A": A},
                        random_state=0).fit(X)
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "X.labels.txt", dtype=int), ref.labels_)


def test_agglomerative_mahalanobis_shape_error_is_not_an_unknown_model(tmp_path, capsys):
    X = np.random.default_rng(1).random((20, 3))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "A.npy", np.eye(3)[:2])  # not square
    line = _user_error(capsys, ["fit", str(tmp_path / "X.npy"), "-k", "2", "--method",
                                "agglomerative", "--divergence", "mahalanobis",
                                "--mahalanobis-matrix", str(tmp_path / "A.npy")])
    assert "unknown model" not in line and "mahalanobis A must be" in line, line


def test_lnkmtc_is_a_cli_method(tmp_path):
    from bregclust import NonparametricKernelMTC

    files = _task_files(tmp_path, n=40)
    Xs = [np.load(f) for f in files]
    assert main(["fit", *files, "--method", "lnkmtc", "-k", "2", "--C", "1", "--quiet"]) == 0
    ref = NonparametricKernelMTC(2, C=1.0, random_state=0).fit(Xs)
    for t in range(2):
        np.testing.assert_array_equal(np.loadtxt(tmp_path / f"task{t}.labels.txt", dtype=int),
                                      ref.labels_[t])


def test_version_flag(capsys):
    import bregclust

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"bregclust {bregclust.__version__}"


def test_every_option_has_help_text():
    import argparse

    from bregclust.cli import build_parser

    parsers = [build_parser()]
    checked = 0
    while parsers:
        ap = parsers.pop()
        for action in ap._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
                continue
            assert action.help and action.help.strip(), (ap.prog, action.dest)
            checked += 1
    assert checked > 20


def test_fit_help_lists_which_method_takes_which_option(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    out = capsys.readouterr().out
    assert "Which method takes which option" in out
    assert "lnkmtc        NonparametricKernelMTC: --C" in out


def test_divergences_table_fits_100_columns(capsys):
    assert main(["divergences"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "aliases: gkl, i_divergence, kullback_leibler" in out


def test_warnings_are_one_line_on_stderr(tmp_path, capsys):
    X = np.random.default_rng(2).random((60, 4))
    np.save(tmp_path / "X.npy", X)
    assert main(["fit", str(tmp_path / "X.npy"), "-k", "5", "--max-iter", "1", "--tol", "0",
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines and all(ln.startswith("bregclust fit: warning: ") for ln in lines), err
    assert "ConvergenceWarning" in lines[0]


# ----------------------------------------------------------------------------- text and other files
@pytest.mark.parametrize("first", [",,", "NA,NA,NA", "nan,NaN,", "?,null,n/a"])
def test_a_first_line_of_missing_values_is_data_and_refused(tmp_path, capsys, first):
    p = tmp_path / "m.csv"
    p.write_text(f"{first}\n1,2,3\n4,5,6\n7,8,9\n")
    line = _user_error(capsys, ["fit", str(p), "-k", "2"])
    assert "m.csv, line 1, column 1:" in line and "missing value" in line
    assert not (tmp_path / "m.labels.txt").exists()


def test_missing_value_in_a_later_line_names_line_and_column(tmp_path, capsys):
    p = tmp_path / "m.csv"
    p.write_text("a,b,c\n1,2,3\n\n4,,6\n7,8,9\n")
    line = _user_error(capsys, ["fit", str(p), "-k", "2"])
    assert "m.csv, line 4, column 2: an empty field is a missing value" in line
    p.write_text("1,2,3\n4,5,6\n7,8,nan\n")
    line = _user_error(capsys, ["fit", str(p), "-k", "2"])
    assert "m.csv, line 3, column 3: 'nan' is a missing value" in line
    p.write_text("1,2,3\n4,inf,6\n7,8,9\n")
    line = _user_error(capsys, ["fit", str(p), "-k", "2"])
    assert "m.csv, line 2, column 2: 'inf' is an infinite value" in line


def test_nan_message_names_the_file_among_several(tmp_path, capsys):
    files = _task_files(tmp_path)
    X = np.load(files[1])
    X[3, 1] = np.nan
    np.save(files[1], X)
    line = _user_error(capsys, ["fit", *files, "--method", "mbc", "-k", "2"])
    assert f"{files[1]}, row 3, column 1 (counting from 0)" in line
    assert "missing value" in line


def test_sparse_nan_names_the_file(tmp_path, capsys):
    M = sp.random(10, 5, density=0.5, format="csr", random_state=0)
    M.data[2] = np.nan
    sp.save_npz(tmp_path / "s.npz", M)
    line = _user_error(capsys, ["fit", str(tmp_path / "s.npz"), "-k", "2"])
    assert "s.npz, row" in line and "missing value" in line


@pytest.mark.parametrize("kwargs", [{}, {"fmt": "%.6f"}, {"delimiter": "\t"},
                                    {"header": "x y z"}])
def test_numpy_savetxt_files_are_read(tmp_path, kwargs):
    X = np.random.default_rng(3).random((15, 3))
    p = tmp_path / "saved.txt"
    np.savetxt(p, X, **kwargs)
    np.testing.assert_allclose(read_matrix(p), X, atol=1e-6)


def test_semicolon_separated_csv_is_read(tmp_path, capsys):
    p = tmp_path / "semi.csv"
    p.write_text("a;b\n1;2\n3;4\n")
    np.testing.assert_array_equal(read_matrix(p), [[1, 2], [3, 4]])
    p.write_text("a,x;b\n1.5;2\n3;4\n")  # a comma in the header does not make it a CSV
    np.testing.assert_array_equal(read_matrix(p), [[1.5, 2], [3, 4]])
    p.write_text("a;b\n1,5;2\n3;4\n")
    line = _user_error(capsys, ["fit", str(p), "-k", "2"])
    assert "semi.csv, line 2, column 1: '1,5' is not a number (a decimal comma" in line


@pytest.mark.parametrize("header", ["", "a,b,c\n"])
def test_utf8_bom_csv_is_read(tmp_path, header):
    p = tmp_path / "excel.csv"
    p.write_bytes(b"\xef\xbb\xbf" + f"{header}1,2,3\n4,5,6\n".encode())
    np.testing.assert_array_equal(read_matrix(p), [[1, 2, 3], [4, 5, 6]])


def test_utf16_csv_with_its_mark_is_read(tmp_path):
    p = tmp_path / "unicode.csv"
    p.write_bytes("h1,h2\r\n1,2\r\n3,4\r\n".encode("utf-16"))
    np.testing.assert_array_equal(read_matrix(p), [[1, 2], [3, 4]])


def test_latin1_header_is_skipped_and_a_latin1_data_line_is_named(tmp_path, capsys):
    p = tmp_path / "legacy.csv"
    p.write_bytes("caf\xe9,na\xefve,b\n1,2,3\n4,5,6\n".encode("latin-1"))
    np.testing.assert_array_equal(read_matrix(p), [[1, 2, 3], [4, 5, 6]])
    p.write_bytes("1,2,3\n4,5,\xb5\n".encode("latin-1"))
    line = _user_error(capsys, ["fit", str(p), "-k", "2"])
    assert "legacy.csv, line 2, column 3: 'µ' is not a number" in line


def test_blank_and_whitespace_only_lines_are_skipped(tmp_path):
    p = tmp_path / "gaps.csv"
    p.write_text("1,2,3\n   \n4,5,6\n\t\n\n7,8,9\n  \n")
    np.testing.assert_array_equal(read_matrix(p), [[1, 2, 3], [4, 5, 6], [7, 8, 9]])


def test_a_tab_line_of_a_tsv_is_a_row_of_missing_values(tmp_path, capsys):
    p = tmp_path / "t.tsv"
    p.write_text("1\t2\t3\n\t\t\n4\t5\t6\n")
    line = _user_error(capsys, ["fit", str(p), "-k", "2"])
    assert "t.tsv, line 2, column 1: an empty field is a missing value" in line


def test_quoted_csv_fields_are_read(tmp_path):
    p = tmp_path / "q.csv"
    p.write_text('"a","b"\n"1","2"\n"3","4"\n')
    np.testing.assert_array_equal(read_matrix(p), [[1, 2], [3, 4]])


def test_huge_svmlight_feature_index_is_refused_before_allocating(tmp_path, capsys,
                                                                 monkeypatch):
    import bregclust.cli as cli

    p = tmp_path / "wide.svmlight"
    p.write_text("0 1:1 2000000000:2\n1 3:1\n0 2:4\n")
    monkeypatch.setattr(cli, "_available_memory", lambda: 4 * 2**30)
    line = _user_error(capsys, ["fit", str(p), "-k", "2"])
    assert "wide.svmlight has 2,000,000,000 feature columns" in line
    assert "29.8 GiB, more than the 4.0 GiB of memory available" in line
    assert "number the features consecutively" in line


def test_fit_larger_than_memory_is_refused_naming_what_and_how_much(tmp_path, capsys,
                                                                   monkeypatch):
    import bregclust.cli as cli

    files = _task_files(tmp_path, n=300)
    monkeypatch.setattr(cli, "_available_memory", lambda: 100_000)
    line = _user_error(capsys, ["fit", *files, "--method", "mtcmrl", "-k", "2"])
    assert "the dense 300 x 300 similarity matrix MTCMRL builds" in line
    line = _user_error(capsys, ["fit", files[0], "-k", "5000"])
    assert "5000 cluster centres of 3 features" in line


def test_tasks_with_different_widths_are_refused(tmp_path, capsys):
    np.save(tmp_path / "a.npy", np.ones((5, 3)))
    np.save(tmp_path / "b.npy", np.ones((5, 4)))
    line = _user_error(capsys, ["fit", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"),
                                "--method", "mbc"])
    assert "must share one feature space" in line and "3 (" in line and "4 (" in line
    # a method that fits every file on its own takes files of any width
    assert main(["fit", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "-k", "2",
                 "--quiet"]) == 0


# ----------------------------------------------------------------------------- demo
def test_demo_few_image_regime_prints_verdicts_and_conclusion_from_the_numbers(capsys):
    assert main(["demo", "--quiet", "--methods", "ind", "mbc", "--draws", "2",
                 "--per-class", "8"]) == 0
    out = capsys.readouterr().out
    few = out.split("2. Few images per class")[1]
    assert "8 per class and task (48 and 56 images), 2 random draws (seeds 0..1)" in few
    assert "MBC (sqeuclidean, lam=auto)" in few and "MBC (kl, lam=auto)" in few
    assert "Values the label-free rules chose over the draws:" in few
    assert "MBC against k-means from the same initial centres" in few
    assert "Conclusion:" in few
    if "Conclusion: no multi-task method beats IND" in few:
        assert "quoted from benchmarks/RESULTS.md" in few
    assert max(len(line) for line in out.splitlines()) <= 100


@pytest.mark.parametrize("argv, message", [
    (["--draws", "1"], "--draws must be >= 2"),
    (["--per-class", "1"], "per_class must be from 2 to"),
    (["--per-class", "5000"], "per_class must be from 2 to"),
])
def test_demo_refuses_bad_regime_options(capsys, argv, message):
    line = _user_error(capsys, ["demo", "--quiet", "--methods", "ind", *argv])
    assert message in line


def test_demo_plot_path_is_checked_before_the_methods_run(tmp_path, capsys, monkeypatch):
    import bregclust.demo as demo

    monkeypatch.setattr(demo, "demo_ind", lambda *a: pytest.fail("ran before the check"))
    line = _user_error(capsys, ["demo", "--quiet", "--methods", "ind", "mbc", "--plot",
                                str(tmp_path)])
    assert "is a directory; give a file name" in line
    line = _user_error(capsys, ["demo", "--quiet", "--methods", "ind", "mbc", "--plot",
                                str(tmp_path / "demo.xyz")])
    assert ".xyz is not a figure format" in line


def test_subsample_per_class_keeps_that_many_of_every_class():
    from bregclust.demo import subsample_per_class

    Xs = [np.arange(60.0).reshape(30, 2), np.arange(40.0).reshape(20, 2)]
    ys = [np.repeat([0, 1, 2], 10), np.repeat([5, 6], 10)]
    Xk, yk = subsample_per_class(Xs, ys, 4, random_state=0)
    assert [np.bincount(y).tolist() for y in yk] == [[4, 4, 4], [0, 0, 0, 0, 0, 4, 4]]
    for X, Xsub in zip(Xs, Xk):  # rows of the task, no row twice
        rows = {tuple(r) for r in X}
        assert all(tuple(r) in rows for r in Xsub) and len({tuple(r) for r in Xsub}) == len(Xsub)
    with pytest.raises(ValueError, match="per_class must be from 2 to 10"):
        subsample_per_class(Xs, ys, 11)


def test_row_key_strips_the_value_a_rule_chose():
    from bregclust.demo import row_key

    assert row_key("MBC (kl, lam=auto: 0.05)") == ("MBC (kl, lam=auto)", "0.05")
    assert row_key("LNKMTC (C=auto: 100)") == ("LNKMTC (C=auto)", "100")
    assert row_key("LSKMTC (C=1000)") == ("LSKMTC (C=1000)", None)


def test_verdicts_over_draws_from_the_numbers():
    from bregclust.demo import verdicts_over_draws

    def runs(nmis):  # (draws, tasks) NMIs -> the (draws, tasks, 3) array of few_sample_runs
        a = np.zeros((len(nmis), len(nmis[0]), 3))
        a[:, :, 0] = nmis
        return a

    ind = [[0.50, 0.60], [0.52, 0.62], [0.48, 0.58]]
    out, gains = verdicts_over_draws({
        "IND a": runs(ind),
        "IND b": runs([[0.40, 0.70], [0.42, 0.72], [0.38, 0.68]]),  # the better IND on task 1
        "up": runs([[0.60, 0.80], [0.62, 0.82], [0.58, 0.78]]),
        "noisy": runs([[0.70, 0.90], [0.32, 0.52], [0.48, 0.68]]),
        "down": runs([[0.30, 0.40], [0.32, 0.42], [0.28, 0.38]]),
        "mixed": runs([[0.60, 0.60], [0.62, 0.62], [0.58, 0.58]]),
    })
    # the reference is IND a on task 0 and IND b on task 1; "up" gains 0.1 on every draw
    assert out[0] == "up: +0.100 ± 0.000 / +0.100 ± 0.000 NMI vs IND: gains on every task"
    assert out[1].startswith("noisy: +0.000 ± 0.231 / +0.000 ± 0.231 NMI vs IND: no clear "
                             "difference from IND over 3 draws")
    assert out[2].endswith("below IND on every task")
    assert out[3].endswith("gains on some tasks, losses on others")
    assert gains == ["up"]
    with pytest.raises(ValueError, match="at least 2 draws"):
        verdicts_over_draws({"IND": runs([[0.5, 0.5]]), "x": runs([[0.5, 0.5]])})
    with pytest.raises(ValueError, match="at least one row whose name starts with 'IND'"):
        verdicts_over_draws({"x": runs(ind)})


def test_same_start_gains_pair_mbc_with_its_own_ind_row():
    from bregclust.demo import same_start_gains

    a = np.zeros((2, 2, 3))
    b = np.zeros((2, 2, 3))
    a[:, :, 0] = [[0.5, 0.6], [0.5, 0.6]]
    b[:, :, 0] = [[0.6, 0.6], [0.7, 0.6]]
    got = same_start_gains({"IND (kl k-means)": a, "MBC (kl, lam=auto)": b,
                            "MBC (sqeuclidean, lam=auto)": b})
    assert list(got) == ["MBC (kl, lam=auto)"]  # no sqeuclidean IND row to pair with
    mean, se2 = got["MBC (kl, lam=auto)"]
    np.testing.assert_allclose(mean, [0.15, 0.0])
    np.testing.assert_allclose(se2, [2 * np.std([0.1, 0.2], ddof=1) / np.sqrt(2), 0.0])


@pytest.mark.parametrize("method", ["minibatch", "bisecting", "mixture"])
def test_single_task_methods_write_one_label_per_row(tmp_path, method):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(m, 0.3, size=(40, 3)) for m in (0.0, 4.0, 8.0)])
    f = tmp_path / "x.npy"
    np.save(f, X)
    out = tmp_path / "labels.txt"
    assert main(["fit", str(f), "--method", method, "-k", "3", "-o", str(out), "--quiet"]) == 0
    labels = np.loadtxt(out, dtype=int)
    assert labels.shape == (120,) and sorted(np.bincount(labels).tolist()) == [40, 40, 40]


# ---------------------------------------------------- user errors: malformed files and values
def test_csv_with_partly_non_numeric_first_row_is_an_error(tmp_path, capsys):
    p = tmp_path / "bad.csv"
    p.write_text("1,2,x\n4,5,6\n7,8,9\n10,11,12\n13,14,15\n")
    line = _user_error(capsys, ["fit", str(p), "-k", "2", "-o", str(tmp_path / "l.txt")])
    assert "bad.csv, line 1" in line
    assert not (tmp_path / "l.txt").exists()
    # a fully non-numeric first row is still a header
    p.write_text("a,b,c\n1,2,3\n4,5,6\n7,8,9\n10,11,12\n")
    assert main(["fit", str(p), "-k", "2", "-o", str(tmp_path / "l.txt"), "--quiet"]) == 0
    assert np.loadtxt(tmp_path / "l.txt").shape == (4,)


def test_empty_files_directories_and_bad_counts_are_user_errors(tmp_path, capsys):
    ok = tmp_path / "ok.npy"
    np.save(ok, uniform_points())
    for name in ("empty.npy", "empty.npz"):
        (tmp_path / name).write_bytes(b"")
        assert "empty (0 bytes)" in _user_error(capsys, ["fit", str(tmp_path / name)])
    assert "--n-init must be >= 1" in _user_error(capsys, ["fit", str(ok), "--n-init", "0"])
    (tmp_path / "x.csv").mkdir()
    assert "is a directory" in _user_error(capsys, ["fit", str(tmp_path / "x.csv")])
    assert "is a directory" in _user_error(
        capsys, ["fit", str(ok), "-k", "2", "-o", str(tmp_path / "x.csv")])
    assert "not a directory" in _user_error(
        capsys, ["fit", str(ok), "-k", "2", "--output-dir", str(ok)])


def test_bad_values_and_files_get_specific_messages(tmp_path, capsys):
    ok = tmp_path / "ok.npy"
    np.save(ok, uniform_points())
    assert "-k/--n-clusters must be a positive integer" in _user_error(
        capsys, ["fit", str(ok), "-k", "abc"])
    assert "unknown method group(s) bogus" in _user_error(
        capsys, ["demo", "--methods", "bogus"])
    np.save(tmp_path / "one.npy", np.arange(5.0))
    assert "shape (5,)" in _user_error(capsys, ["fit", str(tmp_path / "one.npy")])
    np.save(tmp_path / "c.npy", np.ones((4, 2)) * 1j)
    assert "complex" in _user_error(capsys, ["fit", str(tmp_path / "c.npy")])
    (tmp_path / "r.npz").write_bytes(np.random.RandomState(0).bytes(300))
    line = _user_error(capsys, ["fit", str(tmp_path / "r.npz")])
    assert "not a .npz archive" in line and "allow_pickle" not in line
    assert "--mahalanobis-matrix" in _user_error(
        capsys, ["fit", str(ok), "-k", "2", "--divergence", "mahalanobis"])
    assert "--output-dir" in _user_error(
        capsys, ["fit", str(ok), str(ok), "-k", "2", "-o", str(tmp_path / "l.txt")])


def test_fit_coclustering_writes_row_labels(tmp_path, capsys):
    rng = np.random.default_rng(0)
    blocks = np.array([[8.0, 1.0], [1.0, 8.0]])
    X = rng.poisson(blocks[np.ix_(np.repeat([0, 1], 6), np.repeat([0, 1], 5))]).astype(float)
    f = tmp_path / "counts.npy"
    np.save(f, X)
    out = tmp_path / "rows.txt"
    assert main(["fit", str(f), "--method", "coclustering", "-k", "2", "--column-clusters", "2",
                 "--basis", "C5", "--divergence", "kl", "-o", str(out), "--quiet"]) == 0
    labels = np.loadtxt(out, dtype=int)
    from bregclust import BregmanCoclustering

    ref = BregmanCoclustering(2, 2, basis="C5", divergence="kl", random_state=0).fit(X)
    assert (labels == ref.row_labels_).all()
    assert main(["fit", str(f), "--method", "kmeans", "--basis", "C5"]) == 2
    assert "--basis does not apply to --method kmeans" in capsys.readouterr().err
