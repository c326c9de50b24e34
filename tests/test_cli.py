"""The bregclust command: divergences table, demo on bundled digits, fit on files."""

import numpy as np
import pytest
import scipy.sparse as sp

from bregclust.cli import main, read_matrix


def test_divergences_table(capsys):
    assert main(["divergences"]) == 0
    out = capsys.readouterr().out
    for name in ("sqeuclidean", "mahalanobis", "kl", "itakura_saito", "l1_subgradient"):
        assert name in out
    assert ">= 0 / > 0" in out


def test_demo_runs_on_bundled_digits(capsys):
    assert main(["demo", "--quiet", "--methods", "ind"]) == 0
    out = capsys.readouterr().out
    assert "IND k-means (sqeuclidean)" in out and "IND k-means (kl)" in out
    import re
    rows = [ln for ln in out.splitlines() if ln.startswith("IND")]
    nmis = [float(m) for ln in rows for m in re.findall(r"(\d\.\d{3}) / \d\.\d{3} / \d\.\d{3}", ln)]
    assert len(nmis) == 4 and min(nmis) > 0.5  # digits cluster well with either divergence


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
        ref = SpectralKernelMTC(2, C=100.0, random_state=0).fit(Xs).labels_
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
    assert "--lam auto is MBC's label-free coupling rule" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fit", *files, "--method", "mbc", "-k", "2", "--lam", "strong"])
    assert "must be a number or 'auto'" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_all_methods(capsys):
    assert main(["demo", "--quiet"]) == 0
    out = capsys.readouterr().out
    for name in ("IND k-means", "MBC (sqeuclidean", "MBC (kl", "AGG (Ward", "LNKMTC (C=auto: ",
                 "LSKMTC (C=1000)", "LSSMTC (random start", "LSSMTC lam=1 control", "MTCMRL"):
        assert name in out, name
    import re
    cell = r"(\d\.\d{3}) / (-?\d\.\d{3}) / (\d\.\d{3})"
    rows = {m.group(1).strip(): [float(v) for v in m.groups()[1:]]
            for m in re.finditer(rf"^(.+?)\s+{cell}\s+{cell}\s*$", out, re.MULTILINE)}
    assert len(rows) == 14, out
    # digits cluster well with k-means, MBC, agglomerative and MTCMRL: NMI > 0.5, accuracy > 0.6
    for name, (nmi0, _, acc0, nmi1, _, acc1) in rows.items():
        if name.startswith(("IND", "MBC", "AGG", "MTCMRL")):
            assert min(nmi0, nmi1) > 0.5 and min(acc0, acc1) > 0.6, (name, rows[name])
    # one verdict per non-IND row, its differences computed from the printed NMIs
    ref = [max(v[i] for n, v in rows.items() if n.startswith("IND")) for i in (0, 3)]
    verdicts = dict(re.findall(r"^  (.+?): ([+-]\d\.\d{3} / [+-]\d\.\d{3}) NMI vs IND: ",
                               out, re.MULTILINE))
    assert sorted(verdicts) == sorted(n for n in rows if not n.startswith("IND"))
    for name, diffs in verdicts.items():
        got = [float(v) for v in diffs.split(" / ")]
        assert got == pytest.approx([rows[name][0] - ref[0], rows[name][3] - ref[1]], abs=2e-3)


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
    assert "lskmtc has no lam; its MMD weight is --C" in capsys.readouterr().err
    assert main(["fit", *files, "--method", "mbc", "-k", "2", "--C", "10"]) == 2
    assert "--C is the MMD weight of lskmtc; mbc does not take it" in capsys.readouterr().err


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
    (["fit", "bad.csv"], "line 1: 'x' is not a number"),
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
