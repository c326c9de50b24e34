"""Every benchmark script runs end to end on a small problem and prints its table.

The figures in benchmarks/RESULTS.md come from these scripts; a script that no longer runs (an
API changed under it) would leave the figures unreproducible. Each script runs in a fresh interpreter with
small sizes; what is checked is the exit code and a line of the table each must print (our
numbers beside the peer's or the paper's). No timing is asserted.
"""

import os
import subprocess
import sys

import pytest
from conftest import REPO

BENCH = REPO / "benchmarks"

# (script and its quick arguments, data needed (relative to BREGCLUST_DATA) or None, text that
# must appear in the output)
CASES = [
    ("assign_speed.py --n 2000 --d 10 --k 5 --repeat 1", None, "ratio (target <= 1.5)"),
    ("kmeans_speed.py --iters 2 --n-dense 5000 --skip-20ng", None,
     "ratio (targets: float64 dense <= 0.9, others <= 1.0)"),
    ("agglomerative_speed.py --n-ward 300 --n-kl 200 --terms 100", "20newsgroups",
     "identical merges: True"),
    ("mtcmrl_relation_speed.py --h 5 15 --repeats 1 --synthetic", None, "qp/exact"),
    ("mbc_paper.py --runs 1 --datasets tr11 --plot-dir {tmp}", "cluto_docs/tr11.mat",
     "Table 4: d_M"),
    ("mbc_speed.py --max-iter 2", "20newsgroups", "time per iteration MBC / IND"),
    ("agglomerative_paper.py --datasets glass --skip-features", "uci_glass", "paper 0.54"),
    ("mtcmrl_paper.py --datasets reuters --runs 1 --lams 1 --alphas 1 --max-iter 5",
     "reuters21578", "paper MTCMRL"),
    ("mtcmrl_paper.py --datasets reuters --snmf-study --starts 1 --max-iter 20",
     "reuters21578", "task 3 (93.21 ± 3.16): 9 x 94.21 + 84.21"),
    ("kernel_mtc_paper.py --runs 1 --datasets webkb4", "webkb4_linqs", "| LNKMTC"),
    ("lssmtc_paper.py --runs 1 --datasets webkb4 --part clustering --l 2 --lam 0.5",
     "webkb4_linqs", "| LSSMTC"),
    ("kl_smoothing.py --datasets tr23 --seeds 1", "cluto_docs/tr23.mat",
     "auto within 0.02 NMI of the best fixed smoothing on"),
    ("kl_smoothing.py --datasets tr23 --seeds 2 --block 1", "cluto_docs/tr23.mat",
     "The criterion on disjoint blocks of 1 seeds"),
    ("compile_time.py", None, "<= 5 s"),
    ("dask_kmeans.py --n 20000 --d 10 --k 5 --chunks 4 --iters 2 --skip-daskml "
     "--scaling 5000,10000 --plot-dir {tmp}", None, "identical labels to the in-memory fit: True"),
    ("lam_auto_sweep.py --datasets tr11 --runs 1", "cluto_docs/tr11.mat",
     "| argmin own, scan 0.5 |"),
    ("coupling_auto.py --datasets digits --runs 1 --n-max 60", None,
     "Spearman(-own, NMI) over the grid"),
    ("mtc_compare.py --quick --quick-n 60 --runs 1 --datasets digits", None,
     "Headline: the best multi-task method beats the best single-task baseline"),
    ("mtc_compare.py --quick --quick-n 60 --runs 1 --datasets digits --methods MBC-sq,LNKMTC-C0",
     None, "LNKMTC-C0: NonparametricKernelMTC(C=0.0) on tfidf [control]"),
    ("mtc_compare.py --quick --quick-n 60 --runs 1 --datasets digits --methods SpecMTC,SpecMTC-mu0",
     None, "SpecMTC-mu0: SpectralMTC(coupling=0.0) on tfidf [control]"),
    ("spectral_mtc_speed.py --dataset digits", None,
     'SpectralMTC(base="spectral", coupling=0) gives the per-task SpectralClustering labels: True'),
    ("spectral_mtc_basechoice.py --quick --runs 2 --datasets digits", None,
     "| gain | "),
    ("spectral_mtc_guard.py --quick --runs 1 --datasets digits", None, "pareto: above the"),
    ("spectral_mtc_kmeans_coupling.py --quick --runs 1 --datasets digits --check", None,
     "SpecMTC-kmc"),
    ("spectral_mtc_njw.py --run digits --runs 1 --quick --save {tmp}/njw.json", None,
     "# Against four baselines (the three and NJW (cosine 10-NN))"),
    ("spectral_mtc_base.py --datasets digits --runs 1 --quick --save {tmp}/base.json", None,
     "Decision rule A (set E; decision cells webkb4, tr45, hitech)"),
    ("minibatch_speed.py --n-dense 20000 --repeat 1 --skip-kl --out-of-core 200000 "
     "--rows-per-chunk 50000 --memory-limit 1GB --compile", None, "time ours / sklearn:"),
    ("minibatch_speed.py --skip-dense --kl-seeds 1 --repeat 1", "20newsgroups",
     "worst objective ratio"),
    ("minibatch_count_update.py --n 3000 --d 2000 --repeat 1", None, "same inertia"),
    ("lam_auto_sweep.py --datasets tr11 --runs 1 --lloyd 1 --paper-table 0.5",
     "cluto_docs/tr11.mat", "Table 3 from the sweeps"),
    ("mtcmrl_paper.py --datasets reuters --runs 1 --tol-study --tol-grid 20:1e-4 50:1e-6",
     "reuters21578", "SNMF    max_iter=50     tol=1e-06"),
    ("mtcmrl_solver_speed.py --repeats 1 --peer-max-iter 20 --skip-snmf", None,
     "time ratio damped / lbfgs"),
    ("lssmtc_defaults.py", None, "LSSTTC max_iter=3000: n_components_=61"),
    ("mixture_speed.py --n-dense 3000 --iters 2 --repeat 1 --skip-20ng --skip-compile", None,
     "ratio ours / this (target <= 1.0)"),
    ("mixture_quality.py --seeds 1 --datasets tr23 --draws 1", "cluto_docs/tr23.mat",
     "mixture BIC: true K chosen (target >= 9 / 10)"),
    ("coclustering.py --cases 300x200:4x4 --seeds 1 --repeat 1", "20newsgroups",
     "ours C2 / cgc time ratio"),
    ("constrained.py --n 2000 --d 10 --k 10 --repeat 1 --skip-20ng", None,
     "time ours / k-means-constrained:"),
    ("constrained.py --skip-speed --docs 600 --terms 300 --seeds 1", "20newsgroups",
     "mean NMI free"),
    ("cosine_speed.py --n 3000 --ks 5 --iters 2 --repeat 1 --threads 1 --skip-20ng", None,
     "ratio ours / sklearn (target <= 1.0)"),
    ("cosine_quality.py --runs 1 --datasets tr23", "cluto_docs/tr23.mat",
     "cosine methods (spkmeans / soft / hard moVMF) best on"),
    ("kmeans_pruned.py --n 3000 --ks 64 --iters 5 --repeat 1 --skip-20ng", None,
     "ratio to sklearn's faster (target <= 0.5)"),
    ("kmeans_pruned.py --skip-dense --text-k 16 --repeat 1 --text-algs cached", "20newsgroups",
     "cached / (lloyd with the centre step and preparation of changed clusters only)"),
    ("kmeans_pruned.py --skip-dense --text-k 16 --repeat 1 --text-algs cached --breakdown",
     "20newsgroups", "| centre step |"),
    ("mixture_text.py --seeds 1 --ref-seeds 1 --datasets tr23", "cluto_docs/tr23.mat",
     "K on text: every criterion"),
    ("lssttc_malsar.py --problems rec.vs.talk --representation tfidf", "mtc_newsgroups_malsar",
     "kappa vs source SVM"),
    ("mixture_text.py --part spread --seeds 5 --datasets tr23", "cluto_docs/tr23.mat",
     "Spearman (loglik, NMI)"),
    ("mixture_text.py --part search --seeds 1 --ref-seeds 1 --datasets tr23 --schedules A C",
     "cluto_docs/tr23.mat", "largest time ratio"),
    ("mixture_text.py --part anneal --seeds 1 --ref-seeds 1 --datasets tr23 --candidates AN3 "
     "AN10s --ref-cache {tmp}/refs", "cluto_docs/tr23.mat", "mean NMI - A's per set"),
    ("mbc_mtcmrl.py --datasets reuters --runs 1 --variants tfidf-sq --skip-grid --skip-snmf",
     "reuters21578", "as run [tfidf-sq] MBC lam=auto guard=task"),
    ("mbc_golden.py write {tmp}/golden.npz", None, "wrote 312 arrays"),
    ("spectral_mtc_external.py --datasets reuters --runs 1 --quick --quick-n 60",
     "reuters21578", "Verdict:"),
    ("spectral_mtc_external.py --diagnose reuters --runs 1", "reuters21578",
     "| task 3 | 0 | spectral, 0, 0.901 | spectral, 0, 0.901 |"),
]


# the figures a script writes with --plot-dir
PLOTS = {"mbc_paper.py": ["mbc_nmi_pairs_tr11.png", "mbc_relation_tr11.png"],
         "dask_kmeans.py": ["dask_scaling.png"]}


def _param(case):
    cmd, needs, expected = case
    # a data mark naming the path: skipped without it, or fails under BREGCLUST_REQUIRE_DATA=1
    marks = [pytest.mark.data(needs)] if needs is not None else []
    return pytest.param(cmd, expected, marks=marks, id=cmd.split()[0].removesuffix(".py"))


@pytest.mark.slow
@pytest.mark.parametrize("cmd, expected", [_param(c) for c in CASES])
def test_benchmark_script_runs(cmd, expected, tmp_path):
    args = cmd.format(tmp=tmp_path).split()
    env = dict(os.environ, MPLBACKEND="Agg")
    res = subprocess.run([sys.executable, str(BENCH / args[0]), *args[1:]], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, f"{cmd} failed:\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    assert expected in res.stdout, f"{cmd}: {expected!r} not in output:\n{res.stdout[-3000:]}"
    if "--plot-dir" in cmd:
        assert sorted(p.name for p in tmp_path.glob("*.png")) == PLOTS[args[0]]


def test_mtc_compare_headline_leaves_controls_out(capsys):
    """A control (LNKMTC-C0) is shown with its mark but never counted as the best multi-task
    method of a cell, so it cannot make the headline's wins."""
    sys.path.insert(0, str(BENCH))
    try:
        import mtc_compare as mc
    finally:
        sys.path.remove(str(BENCH))
    cells = [dict(data="d", task="t1", best=0.5, best_b="NCut (cosine 10-NN)",
                  mt={"MBC-sq": 0.45, "LNKMTC-C0": 0.7}),
             dict(data="d", task="t2", best=0.5, best_b="NCut (cosine 10-NN)",
                  mt={"MBC-sq": 0.6, "LNKMTC-C0": 0.3})]
    for c in cells:
        c["marks"] = {m: mc._mark(v, c["best"]) for m, v in c["mt"].items()}
    mc.summary(cells, ["MBC-sq", "LNKMTC-C0"])
    out = capsys.readouterr().out
    assert "| d | t1 | 0.500 (NCut) | 0.450 L | 0.700 W |" in out
    assert "beats the best single-task baseline by more than 0.01 NMI on 1 of 2 task cells" in out
    assert "wins by MBC-sq: d/t2" in out and "wins by LNKMTC-C0" not in out
    assert "LNKMTC-C0" not in mc.DEFAULT_METHODS


def test_kl_smoothing_blocks_and_merge():
    """The block table counts, per column, the blocks where it is within 0.02 of that block's
    best fixed column; merging saved runs orders seeds and refuses repeated ones."""
    sys.path.insert(0, str(BENCH))
    try:
        import kl_smoothing as ks
    finally:
        sys.path.remove(str(BENCH))
    # columns 1, 10, 100, 1000, auto; two blocks of two seeds
    nmi = {"1": [0.30, 0.30, 0.50, 0.50], "10": [0.40, 0.40, 0.40, 0.40],
           "100": [0.39, 0.39, 0.30, 0.30], "1000": [0.10, 0.10, 0.10, 0.10],
           "auto": [0.38, 0.39, 0.45, 0.47]}
    rec = {"n": 4, "K": 2, "beta": 3.0, "seeds": [0, 1, 2, 3], "nmi": nmi, "seconds": 1.0}
    passes, nb = ks.block_passes(rec, 2)
    assert nb == 2
    # block 1: best 0.40 (10): 10, 100 (0.39) and auto (0.385) pass; block 2: best 0.50 (1):
    # only 1 passes (auto 0.46 is 0.04 below)
    assert passes.tolist() == [1, 1, 1, 0, 1]
    a = dict(rec, seeds=[3, 1], nmi={c: v[2:] for c, v in nmi.items()})
    b = dict(rec, seeds=[0, 2], nmi={c: v[:2] for c, v in nmi.items()})
    m = ks.merge([a, b])
    assert m["seeds"] == [0, 1, 2, 3]
    assert m["nmi"]["1"] == [0.30, 0.50, 0.30, 0.50]
    with pytest.raises(ValueError, match="repeat"):
        ks.merge([a, a])


def test_spectral_mtc_external_rule(capsys):
    """The issue-38 rule of spectral_mtc_external.py: switch only when the candidate's mean gain
    over the default is above max(.01, 2 SE) and no data set's mean is below -.02."""
    sys.path.insert(0, str(BENCH))
    try:
        import spectral_mtc_external as ext
    finally:
        sys.path.remove(str(BENCH))

    def cell(data, default, unit):
        rows = {m: [[v, v]] for m, v in [(ext.DEFAULT, default), (ext.CANDIDATE, unit),
                                          ("SpecMTC-mu0", default), ("SpecMTC-njw-mu0", unit)]}
        return dict(data=data, task="t", k=2, n=10, rows=rows)

    # gains .03 .04 .05 .04: D = .04, SE = .0041 -> margin .01; both data sets up: switch
    up = [cell("a", .5, .53), cell("a", .5, .54), cell("b", .5, .55), cell("b", .5, .54)]
    assert ext.decide(up)
    # six cells of a gain .06, two of b lose .025: D = .0388 > 2 SE = .0278, but data set b's
    # mean is below -.02: condition (2) alone fails
    down = [cell("a", .5, .56)] * 6 + [cell("b", .5, .475)] * 2
    assert not ext.decide(down)
    # D = .0525 but carried by one cell: 2 SE = .1 > D, condition (1) fails
    spike = [cell("a", .5, .5), cell("a", .5, .5), cell("b", .5, .5), cell("b", .5, .71)]
    assert not ext.decide(spike)
    out = capsys.readouterr().out
    assert out.count("Verdict: SWITCH") == 1 and out.count("Verdict: KEEP") == 2
    assert "(1) D = +0.0388 > max(0.01, 2 SE = 0.0278) = 0.0278: yes" in out
    assert "(2) min D_s = -0.0250 >= -0.02: no" in out


def test_spectral_mtc_ceiling_table(tmp_path, capsys):
    """spectral_mtc_ceiling.py scores fixed variants and the label-using choices among them
    against the best of the issue's three baselines, from mtc_compare --save files."""
    import json

    sys.path.insert(0, str(BENCH))
    try:
        import spectral_mtc_ceiling as ceil
    finally:
        sys.path.remove(str(BENCH))
    base = {"k-means sq (tf-idf)": .5, "k-means kl (tf)": .4, "NCut (cosine 10-NN)": .3}

    def cell(data, task, a, b):
        mt = {"A": a, "B": b, "A-mu0": a - .005}
        return dict(data=data, task=task, best=.5, best_b="k-means sq (tf-idf)",
                    baselines=base, mt=mt, marks={})
    # A wins both cells of x and loses y's; B the opposite: each alone 2 W / 0 T / 2 L, a
    # data set at -.1; chosen per data set with the labels 4 W and no data set below
    cells = [cell("x", "1", .6, .4), cell("x", "2", .6, .4), cell("y", "1", .4, .6),
             cell("y", "2", .4, .6)]
    f = tmp_path / "e.json"
    f.write_text(json.dumps(dict(methods=["A", "B", "A-mu0"], cells=cells)))
    ceil.BAR_WINS = 4  # four cells here; the 14 restored below
    try:
        ceil.main([str(f)])
    finally:
        ceil.BAR_WINS = 14
    out = capsys.readouterr().out
    assert "| A (fixed) | 2 / 0 / 2 | -0.100 (y) | no |" in out
    assert "| B (fixed) | 2 / 0 / 2 | -0.100 (x) | no |" in out
    assert "| labels: per data set, best pair (A / B) | 4 / 0 / 0 | +0.100 (x) | yes |" in out
    assert "| labels: per cell, coupling-0 controls | 2 / 0 / 2 | -0.105 (y) | no |" in out
    assert "| labels: per cell, any variant | 4 / 0 / 0 | +0.100 (x) | yes |" in out
    assert "x: A, y: B" in out
